"""The language-model contract: a prompt in, one text response out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypedDict

from oracleagentmemory.apis.message import JsonSchema, Message

__all__ = ["ChatMessageMappingT", "ChatMessageTypedDictT", "ChatMessages", "ILlm", "JsonSchema",
           "LlmResponse", "Prompt"]

ChatMessageMappingT: TypeAlias = Mapping[str, str | Sequence[Mapping[str, Any]]]
"""A chat message as a mapping: ``{"role": "user", "content": "..." | [parts...]}``.

Content parts follow the OpenAI chat format: ``{"type": "text", "text": ...}`` and
``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}``.
"""


class ChatMessageTypedDictT(TypedDict):
    """One chat message as a typed dict (``role`` and ``content``)."""

    role: str
    content: str | list[Mapping[str, Any]] | None


ChatMessages: TypeAlias = Sequence[Message | ChatMessageMappingT]
"""A conversation: :class:`~oracleagentmemory.apis.message.Message` objects or mappings."""

Prompt: TypeAlias = str | ChatMessages | ChatMessageTypedDictT
"""What :meth:`ILlm.generate` accepts: a text (one user message), a conversation, or one message."""


@dataclass(frozen=True, slots=True)
class LlmResponse:
    """The text a model generated (a JSON document when a response schema was given)."""

    text: str


class ILlm(ABC):
    """A language model: generates one response for a prompt."""

    @abstractmethod
    def generate(self, prompt: Prompt, *, response_json_schema: JsonSchema | None = None,
                 **kwargs: Any) -> LlmResponse:
        """Generate a response to ``prompt``.

        ``prompt`` is a str (sent as one user message), a sequence of messages (``Message``
        objects or role/content mappings) or one role/content mapping. When
        ``response_json_schema`` is given, the response text is a JSON document that follows
        it. ``kwargs`` are generation options passed to the model service (``temperature``,
        ``max_tokens``...).
        """

    @abstractmethod
    async def generate_async(self, prompt: Prompt, *,
                             response_json_schema: JsonSchema | None = None,
                             **kwargs: Any) -> LlmResponse:
        """Asynchronous :meth:`generate`."""
