"""Llm over real HTTP against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import base64
import email.utils
import gc
import json
import math
import socket
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from model_server import ModelServer, Reply, running_model_server
from oracleagentmemory.apis.llms import ILlm, LlmResponse
from oracleagentmemory.apis.message import ImageContent, ImageMimeType, Message, TextContent
from oracleagentmemory.core._modelhttp import parse_retry_after
from oracleagentmemory.core.imageinputlimitconfig import ImageInputLimitConfig
from oracleagentmemory.core.llms import Llm, LlmApiType, LlmResponseFormatError, LlmServiceError
from oracleagentmemory.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    OracleAgentMemoryError,
)

PNG = b"\x89PNG\r\n\x1a\n fake image bytes"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
    "required": ["facts"],
    "additionalProperties": False,
}


def chat(text: str | None, finish_reason: str = "stop", **message: Any) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": finish_reason,
         "message": {"role": "assistant", "content": text, **message}}]}


def responses(text: str, status: str = "completed") -> dict[str, Any]:
    return {"id": "r1", "object": "response", "status": status, "output": [
        {"type": "reasoning", "summary": []},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": text, "annotations": []}]}]}


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with running_model_server() as running:
        yield running


def make(server: ModelServer, **kwargs: Any) -> Llm:
    kwargs.setdefault("api_key", "sk-test")
    return Llm("test-model", api_base=server.base_url, **kwargs)


def test_chat_completions_request_and_answer(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(json=chat("Hello there")))
    llm = make(server, temperature=0.2, max_tokens=50, top_p=0.9)
    assert isinstance(llm, ILlm)

    answer = llm.generate("Say hello", seed=7)

    assert answer == LlmResponse("Hello there")
    [seen] = server.requests
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.body == {"model": "test-model",
                         "messages": [{"role": "user", "content": "Say hello"}],
                         "temperature": 0.2, "max_tokens": 50, "top_p": 0.9, "seed": 7}


def test_messages_mappings_and_images_are_sent_as_parts(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(json=chat("a cat")))
    llm = make(server)
    prompt: list[Any] = [
        {"role": "system", "content": "Describe images."},
        Message("user", [TextContent("What is this?"),
                         ImageContent(PNG, ImageMimeType.PNG, "a cat")]),
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}]},
    ]

    assert llm.generate(prompt).text == "a cat"

    [body] = server.bodies("/chat/completions")
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert body["messages"] == [
        {"role": "system", "content": "Describe images."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                     {"type": "image_url", "image_url": {"url": url}}]},
        {"role": "assistant", "content": "Let me look."},
    ]


def test_without_vision_images_become_their_descriptions(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(json=chat("ok")))
    llm = make(server, supports_vision=False)
    llm.generate([Message("user", [TextContent("See:"),
                                   ImageContent(PNG, ImageMimeType.PNG, "a red bicycle")])])
    [body] = server.bodies("/chat/completions")
    assert body["messages"] == [{"role": "user", "content": "See:\n[image: a red bicycle]"}]
    with pytest.raises(InvalidArgumentError, match="without vision"):
        llm.generate([Message("user", [ImageContent(PNG, ImageMimeType.PNG)])])
    assert len(server.requests) == 1


def test_structured_output_request_and_fenced_answer(server: ModelServer) -> None:
    server.script("/chat/completions",
                        Reply(json=chat('```json\n{"facts": ["likes tea"]}\n```')))
    llm = make(server, strict_json_schema=True)

    answer = llm.generate("Extract facts", response_json_schema=SCHEMA)

    assert json.loads(answer.text) == {"facts": ["likes tea"]}
    [body] = server.bodies("/chat/completions")
    assert body["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "response", "schema": SCHEMA, "strict": True}}


def test_structured_output_reminder_states_the_schema(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(json=chat('{"facts": []}')))
    llm = make(server, enable_structured_output_reminder=True)
    llm.generate("Extract facts", response_json_schema=SCHEMA)
    first = server.bodies("/chat/completions")[0]["messages"][0]
    assert first["role"] == "system"
    assert json.dumps(SCHEMA) in first["content"]


def test_invalid_json_answer_is_a_typed_error(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(json=chat("Sure! Here are the facts")),
                        Reply(json=chat('{"facts": ["a', finish_reason="length")))
    llm = make(server)
    with pytest.raises(LlmResponseFormatError, match="not a JSON document") as first:
        llm.generate("Extract", response_json_schema=SCHEMA)
    assert isinstance(first.value, LlmServiceError)
    with pytest.raises(LlmResponseFormatError, match="token limit"):
        llm.generate("Extract", response_json_schema=SCHEMA)
    # without a schema the same kind of text is a valid answer
    assert llm.generate("Extract").text == '{"facts": ["a'


def test_refusal_is_a_typed_error(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(json=chat(None, refusal="I can't help")))
    with pytest.raises(LlmServiceError, match="refused: I can't help"):
        make(server).generate("x")


def test_responses_api_request_and_answer(server: ModelServer) -> None:
    server.script("/responses", Reply(json=responses('{"facts": ["x"]}')))
    llm = make(server, api_type="responses", max_tokens=64, reasoning_effort="low")
    assert llm.api_type is LlmApiType.RESPONSES

    answer = llm.generate([{"role": "system", "content": "Be brief."},
                           Message("user", [TextContent("Hi"),
                                            ImageContent(PNG, ImageMimeType.PNG)]),
                           {"role": "assistant", "content": "Hello"}],
                          response_json_schema=SCHEMA)

    assert json.loads(answer.text) == {"facts": ["x"]}
    [body] = server.bodies("/responses")
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert body == {
        "model": "test-model",
        "input": [
            {"type": "message", "role": "system",
             "content": [{"type": "input_text", "text": "Be brief."}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "Hi"},
                         {"type": "input_image", "image_url": url}]},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Hello"}]},
        ],
        "text": {"format": {"type": "json_schema", "name": "response", "schema": SCHEMA,
                            "strict": False}},
        "max_output_tokens": 64,
        "reasoning": {"effort": "low"},
    }


def test_retries_after_429_waiting_for_retry_after(server: ModelServer) -> None:
    server.script("/chat/completions",
                        Reply(429, {"error": "slow down"}, headers={"Retry-After": "1"}),
                        Reply(json=chat("finally")))
    assert make(server).generate("x").text == "finally"
    first, second = server.requests
    assert second.at - first.at >= 0.9
    assert first.body == second.body


def test_retries_after_503_then_gives_up(server: ModelServer) -> None:
    server.script("/chat/completions",
                        Reply(503, {"error": "overloaded"}, headers={"Retry-After": "0"}))
    llm = make(server, max_retries=2)
    with pytest.raises(LlmServiceError, match=r"HTTP 503.*after 3 attempts") as caught:
        llm.generate("x")
    assert isinstance(caught.value, OracleAgentMemoryError)
    assert isinstance(caught.value, RuntimeError)
    assert len(server.requests) == 3


def test_503_then_success_without_retry_after(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(503, {"error": "busy"}),
                        Reply(502, {"error": "bad gateway"}), Reply(json=chat("ok")))
    assert make(server).generate("x").text == "ok"
    assert len(server.requests) == 3


def test_client_errors_are_not_retried(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(400, {"error": "bad model"}))
    with pytest.raises(LlmServiceError, match="HTTP 400.*bad model"):
        make(server).generate("x")
    assert len(server.requests) == 1


def test_retry_after_beyond_the_bound_is_not_waited_for(server: ModelServer) -> None:
    server.script("/chat/completions",
                        Reply(429, {"error": "quota"}, headers={"Retry-After": "3600"}))
    with pytest.raises(LlmServiceError, match="exceeds the retry bound"):
        make(server).generate("x")
    assert len(server.requests) == 1


def test_read_timeout_is_retried_then_typed(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(json=chat("late"), delay=1.5))
    llm = make(server, read_timeout=0.3, max_retries=1)
    with pytest.raises(LlmServiceError, match="timed out"):
        llm.generate("x")
    assert len(server.requests) == 2


def test_unreachable_service_is_typed() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = Llm("m", api_base=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(LlmServiceError, match="failed"):
        llm.generate("x")


def test_non_json_body_is_typed(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(raw=b"<html>oops</html>"))
    with pytest.raises(LlmServiceError, match="not JSON"):
        make(server).generate("x")


def test_async_generation_is_bounded_by_max_concurrent_requests(
        server: ModelServer) -> None:
    server.handle("/chat/completions", lambda seen: Reply(
        json=chat("echo " + seen.body["messages"][0]["content"]), delay=0.2))
    llm = make(server, max_concurrent_requests=2)

    async def run() -> list[LlmResponse]:
        return await asyncio.gather(*(llm.generate_async(f"q{n}") for n in range(6)))

    answers = asyncio.run(run())
    assert [a.text for a in answers] == [f"echo q{n}" for n in range(6)]
    assert server.max_in_flight == 2


def test_async_retries_and_structured_output(server: ModelServer) -> None:
    server.script("/chat/completions",
                        Reply(429, {"error": "later"}, headers={"Retry-After": "0"}),
                        Reply(json=chat('{"facts": ["async"]}')))
    llm = make(server)
    answer = asyncio.run(llm.generate_async("x", response_json_schema=SCHEMA))
    assert json.loads(answer.text) == {"facts": ["async"]}
    assert len(server.requests) == 2


def test_invalid_arguments_are_typed(server: ModelServer) -> None:
    with pytest.raises(InvalidArgumentError, match="api_type"):
        Llm("m", api_base=server.base_url, api_type="completions")
    with pytest.raises(InvalidArgumentError, match="api_base"):
        Llm("m", api_base="ftp://example")
    with pytest.raises(InvalidArgumentError, match="read_timeout"):
        Llm("m", api_base=server.base_url, read_timeout=0)
    llm = make(server)
    with pytest.raises(InvalidArgumentTypeError):
        llm.generate(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="role"):
        llm.generate([{"role": "", "content": "x"}])
    with pytest.raises(InvalidArgumentError, match="at least one message"):
        llm.generate([])
    assert server.requests == []


def test_async_calls_from_successive_event_loops_leak_no_sockets(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(json=chat("hi")))
    llm = make(server)
    gc.collect()  # earlier tests' unclosed clients are not this test's concern
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for _ in range(3):
            assert asyncio.run(llm.generate_async("x")).text == "hi"
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []
    assert len(server.requests) == 3


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert parse_retry_after("2") == 2.0
    assert 25 <= (parse_retry_after(soon) or 0) <= 31
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_http_date_retry_after_is_honoured_and_client_closes(server: ModelServer) -> None:
    # an HTTP date has whole seconds: from the next whole second, the wait is at least 2 s
    # less the time to the first request, never the fraction of the current second less
    later = email.utils.formatdate(math.ceil(time.time()) + 2, usegmt=True)
    server.script("/chat/completions", Reply(503, {"error": "busy"},
                                             headers={"Retry-After": later}),
                  Reply(json=chat("ok")))
    with make(server) as llm:
        assert llm.generate("x").text == "ok"
    first, second = server.requests
    assert second.at - first.at >= 0.9
    with pytest.raises(LlmServiceError, match="closed"):
        llm.generate("x")


def test_image_limits_are_enforced_before_sending(server: ModelServer) -> None:
    server.script("/chat/completions", Reply(json=chat("ok")))
    limits = ImageInputLimitConfig(max_raw_image_bytes=len(PNG), max_images_per_llm_request=2)
    llm = make(server, image_input_limit_config=limits)
    image = ImageContent(PNG, ImageMimeType.PNG)
    assert llm.generate([Message("user", [image, image])]).text == "ok"
    with pytest.raises(InvalidArgumentError, match="3 images in one request"):
        llm.generate([Message("user", [image, image]), Message("user", [image])])
    big = ImageContent(PNG + b"!", ImageMimeType.PNG)
    with pytest.raises(InvalidArgumentError, match="bytes in one image"):
        llm.generate([Message("user", [big])])
    data_url = "data:image/png;base64," + base64.b64encode(PNG + b"!!").decode()
    with pytest.raises(InvalidArgumentError, match="bytes in one image"):
        llm.generate([{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": data_url}}]}])
    assert len(server.requests) == 1
