"""Language-model clients: OpenAI-compatible HTTP APIs (chat completions and responses)."""

from oracleagentmemory.core.llms.errors import LlmResponseFormatError, LlmServiceError
from oracleagentmemory.core.llms.llm import Llm, LlmApiType, structured_answer_text
from oracleagentmemory.core.llms.prompt import PromptMessage, coerce_prompt

__all__ = [
    "Llm",
    "LlmApiType",
    "LlmResponseFormatError",
    "LlmServiceError",
    "PromptMessage",
    "coerce_prompt",
    "structured_answer_text",
]
