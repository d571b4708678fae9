"""A language model behind an OpenAI-compatible HTTP API (chat completions or responses)."""

from __future__ import annotations

import json
import os
import re
from enum import Enum
from typing import Any

from oracleagentmemory.apis.llms import ILlm, JsonSchema, LlmResponse, Prompt
from oracleagentmemory.core._modelhttp import (
    HttpModelClient,
    ModelHttpClient,
    RetryPolicy,
    build_ssl_context,
    check_base_url,
    check_int,
)
from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
from oracleagentmemory.core.llms.errors import LlmResponseFormatError, LlmServiceError
from oracleagentmemory.core.llms.prompt import (
    ImagePart,
    PromptMessage,
    TextPart,
    coerce_prompt,
    to_chat_completions,
    to_responses_input,
)
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

DEFAULT_API_BASE = "https://api.openai.com/v1"

_FENCE = re.compile(r"^```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```$", re.DOTALL)


class LlmApiType(str, Enum):
    """Which OpenAI-compatible API the model is called through."""

    CHAT_COMPLETIONS = "chat_completions"
    RESPONSES = "responses"


class Llm(HttpModelClient, ILlm):
    """A model served by an OpenAI-compatible API: OpenAI, vLLM, Ollama, LiteLLM, llama.cpp...

    ``api_base`` is the URL the API paths hang from (``.../v1``; OpenAI's when ``None``, then the
    key defaults to ``$OPENAI_API_KEY``). ``api_type`` chooses ``POST /chat/completions`` or
    ``POST /responses``. ``temperature``, ``max_tokens`` and ``reasoning_effort`` are sent when
    set; any other keyword (``top_p=...``) is sent as is, and ``generate`` keywords override
    them per call.

    With ``response_json_schema`` the request asks for structured output (``response_format``
    / ``text.format`` of type ``json_schema``; ``strict_json_schema`` sets its ``strict`` flag)
    and the answer must be a JSON document: a fenced code block is unwrapped, anything else
    raises :class:`LlmResponseFormatError`. ``enable_structured_output_reminder`` also states the
    schema in a system message, for servers that ignore the structured-output request.

    Images (``ImageContent`` parts with bytes) are sent as data URLs, within
    ``image_input_limit_config`` (per image, images and bytes per request; the SDK maxima when
    not given: a prompt beyond them raises :class:`InvalidArgumentError`); with
    ``supports_vision=False`` they are replaced by their descriptions. ``stream`` is accepted
    for compatibility: answers are always read whole. Requests time out after
    ``connect_timeout`` / ``read_timeout`` seconds, are retried up to ``max_retries`` times on
    HTTP 408/409/429/5xx and transport errors (exponential backoff, ``Retry-After`` honoured) and
    at most ``max_concurrent_requests`` run at once. Failures raise :class:`LlmServiceError`.
    """

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        api_key: str | None = None,
        api_type: LlmApiType | str = LlmApiType.CHAT_COMPLETIONS,
        stream: bool = False,
        temperature: float | None = None,
        max_tokens: int | None = None,
        reasoning_effort: str | None = None,
        enable_structured_output_reminder: bool = False,
        supports_vision: bool = True,
        image_input_limit_config: ImageInputLimitConfig | None = None,
        max_concurrent_requests: int | None = None,
        key_file: str | None = None,
        cert_file: str | None = None,
        ca_file: str | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
        *,
        strict_json_schema: bool = False,
        connect_timeout: float = 10.0,
        read_timeout: float = 120.0,
        max_retries: int = 3,
        **default_kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidArgumentError(f"model must be a non-empty str, got {model!r}",
                                       argument="model")
        try:
            self._api_type = LlmApiType(api_type)
        except ValueError:
            raise InvalidArgumentError(
                f"api_type must be one of {[t.value for t in LlmApiType]}, got {api_type!r}",
                argument="api_type") from None
        if temperature is not None and (isinstance(temperature, bool)
                                        or not isinstance(temperature, (int, float))):
            raise InvalidArgumentTypeError("temperature must be a number or None",
                                           argument="temperature")
        if max_tokens is not None:
            check_int(max_tokens, "max_tokens", 1)
        if reasoning_effort is not None and not isinstance(reasoning_effort, str):
            raise InvalidArgumentTypeError("reasoning_effort must be a str or None",
                                           argument="reasoning_effort")
        if api_base is None and api_key is None:
            api_key = os.environ.get("OPENAI_API_KEY")
        self._model = model
        self._base = check_base_url(api_base or DEFAULT_API_BASE)
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._reasoning_effort = reasoning_effort
        self._reminder = bool(enable_structured_output_reminder)
        self._supports_vision = bool(supports_vision)
        if image_input_limit_config is not None and not isinstance(
                image_input_limit_config, ImageInputLimitConfig):
            raise InvalidArgumentTypeError(
                "image_input_limit_config must be an ImageInputLimitConfig or None",
                argument="image_input_limit_config")
        self._image_limits = (image_input_limit_config or ImageInputLimitConfig()).resolved()
        self._strict = bool(strict_json_schema)
        self._default_kwargs = dict(default_kwargs)
        self._http = ModelHttpClient(
            service=f"LLM service ({model})",
            error_type=LlmServiceError,
            api_key=api_key,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            retry=RetryPolicy(max_retries=check_int(max_retries, "max_retries", 0)),
            max_concurrent_requests=8 if max_concurrent_requests is None
            else max_concurrent_requests,
            verify=build_ssl_context(ca_file, cert_file, key_file),
            proxy=proxy,
            trust_env=trust_env,
        )

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        return self._model

    @property
    def api_type(self) -> LlmApiType:
        """The API the model is called through."""
        return self._api_type

    @property
    def supports_vision(self) -> bool:
        """Whether image parts are sent to the model (else their descriptions are)."""
        return self._supports_vision

    def generate(self, prompt: Prompt, *, response_json_schema: JsonSchema | None = None,
                 **kwargs: Any) -> LlmResponse:
        """Generate a response to ``prompt`` (see the class docstring)."""
        url, body = self._request(prompt, response_json_schema, kwargs)
        return self._response(self._http.post_json(url, body), response_json_schema)

    async def generate_async(self, prompt: Prompt, *,
                             response_json_schema: JsonSchema | None = None,
                             **kwargs: Any) -> LlmResponse:
        """Asynchronous :meth:`generate` (an async HTTP client, no worker thread)."""
        url, body = self._request(prompt, response_json_schema, kwargs)
        answer = await self._http.post_json_async(url, body)
        return self._response(answer, response_json_schema)

    # -- request ------------------------------------------------------------------------------

    def _request(self, prompt: Prompt, schema: JsonSchema | None,
                 kwargs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if schema is not None and not isinstance(schema, dict):
            raise InvalidArgumentTypeError("response_json_schema must be a dict or None",
                                           argument="response_json_schema")
        messages = coerce_prompt(prompt)
        if self._supports_vision:
            _check_image_limits(messages, self._image_limits)
        if schema is not None and self._reminder:
            messages = [_schema_reminder(schema), *messages]
        options: dict[str, Any] = {}
        if self._temperature is not None:
            options["temperature"] = self._temperature
        if self._max_tokens is not None:
            options["max_tokens"] = self._max_tokens
        if self._reasoning_effort is not None:
            options["reasoning_effort"] = self._reasoning_effort
        options.update(self._default_kwargs)
        options.update(kwargs)
        options.pop("stream", None)  # one JSON answer per request: streaming is not used
        if self._api_type is LlmApiType.RESPONSES:
            return self._base + "/responses", self._responses_body(messages, schema, options)
        return self._base + "/chat/completions", self._chat_body(messages, schema, options)

    def _chat_body(self, messages: list[PromptMessage], schema: JsonSchema | None,
                   options: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": to_chat_completions(messages, supports_vision=self._supports_vision),
        }
        if schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": _schema_name(schema), "schema": schema, "strict": self._strict}}
        body.update(options)
        return body

    def _responses_body(self, messages: list[PromptMessage], schema: JsonSchema | None,
                        options: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self._model,
            "input": to_responses_input(messages, supports_vision=self._supports_vision),
        }
        if schema is not None:
            body["text"] = {"format": {"type": "json_schema", "name": _schema_name(schema),
                                       "schema": schema, "strict": self._strict}}
        if "max_tokens" in options:
            options["max_output_tokens"] = options.pop("max_tokens")
        if "reasoning_effort" in options:
            options["reasoning"] = {"effort": options.pop("reasoning_effort")}
        body.update(options)
        return body

    # -- response -----------------------------------------------------------------------------

    def _response(self, answer: Any, schema: JsonSchema | None) -> LlmResponse:
        if self._api_type is LlmApiType.RESPONSES:
            text, truncated = _responses_text(answer)
        else:
            text, truncated = _chat_text(answer)
        if schema is None:
            return LlmResponse(text)
        return LlmResponse(structured_answer_text(text, truncated))


def _check_image_limits(messages: list[PromptMessage], limits: ImageInputLimitConfig) -> None:
    """InvalidArgumentError when the prompt's images exceed ``limits`` (resolved)."""
    sizes = [part.size or 0 for message in messages for part in message.parts
             if isinstance(part, ImagePart)]
    largest, count, total = max(sizes, default=0), len(sizes), sum(sizes)
    for value, limit, what in (
            (largest, limits.max_raw_image_bytes, "bytes in one image"),
            (count, limits.max_images_per_llm_request, "images in one request"),
            (total, limits.max_total_raw_image_bytes_per_llm_request,
             "image bytes in one request")):
        assert isinstance(limit, int)
        if value > limit:
            raise InvalidArgumentError(
                f"the prompt has {value} {what}; the limit is {limit}", argument="prompt")


def _schema_name(schema: JsonSchema) -> str:
    title = schema.get("title")
    if isinstance(title, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", title):
        return title
    return "response"


def _schema_reminder(schema: JsonSchema) -> PromptMessage:
    return PromptMessage("system", (TextPart(
        "Answer with one JSON document, and nothing else, that follows this JSON Schema:\n"
        + json.dumps(schema, ensure_ascii=False)),))


def _chat_text(answer: Any) -> tuple[str, bool]:
    try:
        choice = answer["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise LlmServiceError(
            "LLM service answered without choices[0].message (not a chat completion)") from None
    content = message.get("content")
    if isinstance(content, list):  # some servers answer content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not content:
        refusal = message.get("refusal")
        if refusal:
            raise LlmServiceError(f"the model refused: {refusal}")
        if message.get("tool_calls"):
            raise LlmServiceError("the model answered tool calls, not text")
        content = ""
    if not isinstance(content, str):
        raise LlmServiceError("LLM service answered a non-text message content")
    return content, choice.get("finish_reason") == "length"


def _responses_text(answer: Any) -> tuple[str, bool]:
    if not isinstance(answer, dict):
        raise LlmServiceError("LLM service answered something that is not a response object")
    if answer.get("error"):
        raise LlmServiceError(f"LLM service answered an error: {answer['error']}")
    output = answer.get("output")
    if not isinstance(output, list):
        direct = answer.get("output_text")
        if isinstance(direct, str):
            return direct, answer.get("status") == "incomplete"
        raise LlmServiceError("LLM service answered without an 'output' list (not a response)")
    texts: list[str] = []
    for item in output:
        if not isinstance(item, dict) or item.get("type") != "message":
            continue
        for part in item.get("content") or ():
            if not isinstance(part, dict):
                continue
            if part.get("type") == "output_text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif part.get("type") == "refusal":
                raise LlmServiceError(f"the model refused: {part.get('refusal')}")
    return "".join(texts), answer.get("status") == "incomplete"


def structured_answer_text(text: str, truncated: bool = False) -> str:
    """``text`` as a JSON document (a fenced block unwrapped), else LlmResponseFormatError.

    ``truncated`` says the answer was cut at the token limit (the error then says so).
    """
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        json.loads(stripped)
    except ValueError:
        reason = " (the answer was cut at the token limit)" if truncated else ""
        raise LlmResponseFormatError(
            f"the model's answer is not a JSON document{reason}: {text[:200]!r}") from None
    return stripped
