"""ScriptedLlm, the fake ILlm of the extraction tests, behaves as documented."""

from __future__ import annotations

import asyncio
import json

import pytest
from oracleagentmemory.apis.llms import ILlm, LlmResponse
from oracleagentmemory.apis.message import Message
from oracleagentmemory.core.llms import LlmResponseFormatError, LlmServiceError
from oracleagentmemory.errors import InvalidArgumentTypeError
from scripted_llm import Delayed, ScriptedCall, ScriptedLlm


def test_script_answers_in_order_and_records_calls() -> None:
    llm = ScriptedLlm("first", LlmResponse("second"))
    assert isinstance(llm, ILlm)
    assert llm.generate("hello", temperature=0).text == "first"
    assert llm.generate([Message("system", "be brief"), {"role": "user", "content": "q"}]
                        ).text == "second"
    assert llm.prompts[0] == "hello"
    assert llm.calls[0].kwargs == {"temperature": 0}
    assert llm.calls[1].text == "system: be brief\nuser: q"
    assert llm.calls[1].last_user_text == "q"
    with pytest.raises(AssertionError, match="no scripted response left for call 3"):
        llm.generate("third")


def test_exceptions_responders_and_repeat_last() -> None:
    def echo(call: ScriptedCall) -> str:
        return call.last_user_text.upper()

    llm = ScriptedLlm(LlmServiceError("service down"), echo, responder=lambda c: "fallback")
    with pytest.raises(LlmServiceError, match="service down"):
        llm.generate("x")
    assert llm.generate("shout").text == "SHOUT"
    assert llm.generate("anything").text == "fallback"
    repeating = ScriptedLlm("a", "b", repeat_last=True)
    assert [repeating.generate("q").text for _ in range(4)] == ["a", "b", "b", "b"]


def test_structured_output_is_checked_like_the_real_client() -> None:
    llm = ScriptedLlm('```json\n{"ok": true}\n```', "not json at all")
    assert json.loads(llm.generate("q", response_json_schema={"type": "object"}).text) == {
        "ok": True}
    with pytest.raises(LlmResponseFormatError):
        llm.generate("q", response_json_schema={"type": "object"})
    with pytest.raises(InvalidArgumentTypeError):
        llm.generate(3)  # type: ignore[arg-type]


def test_async_delay_can_be_timed_out() -> None:
    llm = ScriptedLlm(Delayed(5.0, "too late"), "in time")

    async def run() -> str:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(llm.generate_async("slow"), timeout=0.1)
        return (await llm.generate_async("fast")).text

    assert asyncio.run(run()) == "in time"
    assert [c.is_async for c in llm.calls] == [True, True]
