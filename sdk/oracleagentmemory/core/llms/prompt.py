"""A prompt (text, ``Message`` objects or role/content mappings) as a list of chat messages.

:func:`coerce_prompt` validates any prompt :meth:`ILlm.generate` accepts and returns
:class:`PromptMessage` values (a role and ordered text and image parts, images as URLs: data
URLs for image bytes). The renderers turn them into the wire format of the OpenAI chat
completions API and of the responses API.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oracleagentmemory.apis.llms import Prompt
from oracleagentmemory.apis.message import ImageContent, Message, TextContent
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError


@dataclass(frozen=True, slots=True)
class TextPart:
    """A text part of a prompt message."""

    text: str


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image part of a prompt message: its URL (a ``data:`` URL for inline bytes)."""

    url: str
    description: str | None = None
    size: int | None = None
    """Raw image bytes (known for inline images)."""


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """One chat message of a prompt: a role and its ordered parts."""

    role: str
    parts: tuple[TextPart | ImagePart, ...]

    @property
    def text(self) -> str:
        """The text parts joined by newlines (images shown by their description)."""
        return "\n".join(
            p.text if isinstance(p, TextPart) else f"[image: {p.description or p.url[:40]}]"
            for p in self.parts)


def image_data_url(data: bytes, mime_type: str) -> str:
    """``data:<mime_type>;base64,<data>``."""
    return f"data:{mime_type};base64,{base64.b64encode(data).decode('ascii')}"


def coerce_prompt(prompt: Prompt) -> list[PromptMessage]:
    """Validate ``prompt`` and return its messages (a str is one user message)."""
    if isinstance(prompt, str):
        return [PromptMessage("user", (TextPart(prompt),))]
    if isinstance(prompt, Mapping):
        return [_from_mapping(prompt, "prompt")]
    if isinstance(prompt, Message):
        return [_from_message(prompt, "prompt")]
    if not isinstance(prompt, Sequence):
        raise InvalidArgumentTypeError(
            "prompt must be a str, a Message, a role/content mapping or a sequence of them, "
            f"got {type(prompt).__name__}", argument="prompt")
    messages: list[PromptMessage] = []
    for n, item in enumerate(prompt):
        where = f"prompt[{n}]"
        if isinstance(item, Message):
            messages.append(_from_message(item, where))
        elif isinstance(item, Mapping):
            messages.append(_from_mapping(item, where))
        else:
            raise InvalidArgumentTypeError(
                f"{where} must be a Message or a role/content mapping, got {type(item).__name__}",
                argument=where)
    if not messages:
        raise InvalidArgumentError("prompt must hold at least one message", argument="prompt")
    return messages


def _role(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"{where}.role must be a non-empty str, got {value!r}",
                                   argument=f"{where}.role")
    return value


def _from_message(message: Message, where: str) -> PromptMessage:
    role = _role(message.role, where)
    if isinstance(message.content, str):
        return PromptMessage(role, (TextPart(message.content),))
    parts: list[TextPart | ImagePart] = []
    for n, part in enumerate(message.content):
        if isinstance(part, TextContent):
            parts.append(TextPart(part.text))
        elif isinstance(part, ImageContent):
            if part.bytes is None:
                if part.description is None:
                    raise InvalidArgumentError(
                        f"{where}.content[{n}] is an image without bytes or description",
                        argument=f"{where}.content[{n}]")
                parts.append(TextPart(f"[image: {part.description}]"))
            else:
                parts.append(ImagePart(image_data_url(part.bytes, str(part.mime_type.value)),
                                       part.description, len(part.bytes)))
        else:
            raise InvalidArgumentTypeError(
                f"{where}.content[{n}] must be a TextContent or an ImageContent, "
                f"got {type(part).__name__}", argument=f"{where}.content[{n}]")
    return PromptMessage(role, tuple(parts))


def _from_mapping(message: Mapping[str, Any], where: str) -> PromptMessage:
    role = _role(message.get("role"), where)
    content = message.get("content")
    if content is None:
        return PromptMessage(role, ())
    if isinstance(content, str):
        return PromptMessage(role, (TextPart(content),))
    if not isinstance(content, Sequence):
        raise InvalidArgumentTypeError(
            f"{where}.content must be a str or a sequence of content parts, "
            f"got {type(content).__name__}", argument=f"{where}.content")
    return PromptMessage(role, tuple(_part(p, f"{where}.content[{n}]")
                                     for n, p in enumerate(content)))


def _part(part: object, where: str) -> TextPart | ImagePart:
    if not isinstance(part, Mapping):
        raise InvalidArgumentTypeError(f"{where} must be a mapping, got {type(part).__name__}",
                                       argument=where)
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text"):
        text = part.get("text")
        if not isinstance(text, str):
            raise InvalidArgumentTypeError(f"{where}.text must be a str", argument=where)
        return TextPart(text)
    if kind in ("image_url", "input_image"):
        url = part.get("image_url")
        if isinstance(url, Mapping):
            url = url.get("url")
        if not isinstance(url, str) or not url.startswith(("data:", "http://", "https://")):
            raise InvalidArgumentError(f"{where} needs an image URL (data: or http(s)://)",
                                       argument=where)
        return ImagePart(url, None, _data_url_size(url))
    raise InvalidArgumentError(
        f"{where}.type must be 'text' or 'image_url' (or input_text/input_image), got {kind!r}",
        argument=where)


def _data_url_size(url: str) -> int | None:
    """Decoded size of a base64 ``data:`` URL, ``None`` for other URLs."""
    if not url.startswith("data:") or ";base64," not in url:
        return None
    payload = url.split(",", 1)[1].strip()
    return len(payload) * 3 // 4 - payload[-2:].count("=")


def _checked_image(part: ImagePart, supports_vision: bool) -> ImagePart | TextPart:
    if supports_vision:
        return part
    if part.description is not None:
        return TextPart(f"[image: {part.description}]")
    raise InvalidArgumentError(
        "the prompt has an image but this model is configured without vision "
        "(supports_vision=False) and the image has no description", argument="prompt")


def to_chat_completions(messages: Sequence[PromptMessage], *,
                        supports_vision: bool = True) -> list[dict[str, Any]]:
    """Messages in the chat completions format (plain string content when text-only)."""
    rendered: list[dict[str, Any]] = []
    for message in messages:
        parts = [_checked_image(p, supports_vision) if isinstance(p, ImagePart) else p
                 for p in message.parts]
        if all(isinstance(p, TextPart) for p in parts):
            text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
            rendered.append({"role": message.role, "content": text})
            continue
        content: list[dict[str, Any]] = [
            {"type": "text", "text": p.text} if isinstance(p, TextPart)
            else {"type": "image_url", "image_url": {"url": p.url}}
            for p in parts]
        rendered.append({"role": message.role, "content": content})
    return rendered


def to_responses_input(messages: Sequence[PromptMessage], *,
                       supports_vision: bool = True) -> list[dict[str, Any]]:
    """Messages in the responses API ``input`` format (assistant text as ``output_text``)."""
    rendered: list[dict[str, Any]] = []
    for message in messages:
        text_type = "output_text" if message.role == "assistant" else "input_text"
        content: list[dict[str, Any]] = []
        for part in message.parts:
            checked = _checked_image(part, supports_vision) if isinstance(part, ImagePart) \
                else part
            if isinstance(checked, TextPart):
                content.append({"type": text_type, "text": checked.text})
            else:
                content.append({"type": "input_image", "image_url": checked.url})
        rendered.append({"type": "message", "role": message.role, "content": content})
    return rendered
