"""Errors of the language-model client."""

from __future__ import annotations

from oracleagentmemory.errors import OracleAgentMemoryError


class LlmServiceError(OracleAgentMemoryError, RuntimeError):
    """A language-model service failed (unreachable, timed out, an HTTP error, a bad answer)."""

    code = "llm_service"


class LlmResponseFormatError(LlmServiceError):
    """The model's answer is not the JSON document the response schema asked for."""

    code = "llm_response_format"
