"""Language-model contracts."""

from oracleagentmemory.apis.llms.llm import (
    ChatMessageMappingT,
    ChatMessages,
    ChatMessageTypedDictT,
    ILlm,
    JsonSchema,
    LlmResponse,
    Prompt,
)

__all__ = [
    "ChatMessageMappingT",
    "ChatMessageTypedDictT",
    "ChatMessages",
    "ILlm",
    "JsonSchema",
    "LlmResponse",
    "Prompt",
]
