"""``ScriptedLlm``: an honest fake language model for tests of code that calls an ``ILlm``.

It answers from a script (texts, ``LlmResponse`` values, exceptions to raise, or functions of
the call) or from one ``responder`` function, and records every call. It behaves as the real
:class:`~oracleagentmemory.core.llms.Llm` does where that matters to callers:

* the prompt is validated the same way (an invalid prompt raises the same typed error);
* with ``response_json_schema`` the answer must be a JSON document (a fenced block is
  unwrapped), else :class:`~oracleagentmemory.core.llms.LlmResponseFormatError` is raised;
* ``generate_async`` is a real coroutine (``delay`` is an ``asyncio.sleep``, so
  ``asyncio.wait_for`` can time it out); ``generate`` sleeps in the calling thread.

Running out of script is a test bug and raises ``AssertionError`` naming the call.

Example::

    llm = ScriptedLlm('{"memories": []}', LlmServiceError("boom"), delay=0.0)
    extractor.run(llm)
    assert "user likes tea" in llm.calls[0].text
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from oracleagentmemory.apis.llms import ILlm, JsonSchema, LlmResponse, Prompt
from oracleagentmemory.core.llms import PromptMessage, coerce_prompt, structured_answer_text


@dataclass(frozen=True)
class ScriptedCall:
    """One call the fake received."""

    prompt: Prompt
    messages: list[PromptMessage]
    response_json_schema: JsonSchema | None
    kwargs: dict[str, Any]
    is_async: bool

    @property
    def text(self) -> str:
        """Every message as ``role: text``, one per line (images shown by description)."""
        return "\n".join(f"{m.role}: {m.text}" for m in self.messages)

    @property
    def last_user_text(self) -> str:
        """The text of the last user message ("" when there is none)."""
        users = [m for m in self.messages if m.role == "user"]
        return users[-1].text if users else ""


Responder: TypeAlias = Callable[[ScriptedCall], "str | LlmResponse"]
Step: TypeAlias = "str | LlmResponse | BaseException | Responder | Delayed"


@dataclass(frozen=True)
class Delayed:
    """A scripted step answered after ``seconds`` (on top of the fake's ``delay``)."""

    seconds: float
    step: Step


class ScriptedLlm(ILlm):
    """See the module docstring. ``script`` steps are used in order, one per call; then
    ``responder`` answers, if given. With ``repeat_last`` the last step answers every later
    call. ``delay`` seconds pass before every answer."""

    def __init__(self, *script: Step, responder: Responder | None = None, delay: float = 0.0,
                 repeat_last: bool = False) -> None:
        self.script: list[Step] = list(script)
        self.responder = responder
        self.delay = delay
        self.repeat_last = repeat_last
        self.calls: list[ScriptedCall] = []
        self._lock = threading.Lock()

    def add(self, *steps: Step) -> None:
        """Append steps to the script."""
        with self._lock:
            self.script.extend(steps)

    @property
    def prompts(self) -> list[Prompt]:
        """The prompts received, as given."""
        return [call.prompt for call in self.calls]

    @property
    def remaining(self) -> int:
        """Script steps not used yet."""
        return len(self.script)

    def generate(self, prompt: Prompt, *, response_json_schema: JsonSchema | None = None,
                 **kwargs: Any) -> LlmResponse:
        """Answer the next script step (sleeping ``delay`` seconds first)."""
        call, step = self._take(prompt, response_json_schema, kwargs, is_async=False)
        wait = self.delay
        while isinstance(step, Delayed):
            wait, step = wait + step.seconds, step.step
        if wait:
            time.sleep(wait)
        return self._answer(call, step)

    async def generate_async(self, prompt: Prompt, *,
                             response_json_schema: JsonSchema | None = None,
                             **kwargs: Any) -> LlmResponse:
        """Asynchronous :meth:`generate` (the delay is an ``asyncio.sleep``)."""
        call, step = self._take(prompt, response_json_schema, kwargs, is_async=True)
        wait = self.delay
        while isinstance(step, Delayed):
            wait, step = wait + step.seconds, step.step
        if wait:
            await asyncio.sleep(wait)
        return self._answer(call, step)

    def _take(self, prompt: Prompt, schema: JsonSchema | None, kwargs: dict[str, Any],
              *, is_async: bool) -> tuple[ScriptedCall, Step]:
        call = ScriptedCall(prompt, coerce_prompt(prompt), schema, dict(kwargs), is_async)
        with self._lock:
            self.calls.append(call)
            if self.script:
                step = self.script[0] if self.repeat_last and len(self.script) == 1 \
                    else self.script.pop(0)
                return call, step
        if self.responder is not None:
            return call, self.responder
        raise AssertionError(
            f"ScriptedLlm has no scripted response left for call {len(self.calls)}: "
            f"{call.text[:300]!r}")

    @staticmethod
    def _answer(call: ScriptedCall, step: Step) -> LlmResponse:
        if isinstance(step, BaseException):
            raise step
        if callable(step) and not isinstance(step, (str, LlmResponse, Delayed)):
            step = step(call)
        text = step.text if isinstance(step, LlmResponse) else step
        if not isinstance(text, str):
            raise AssertionError(f"a ScriptedLlm step gave {type(text).__name__}, not text")
        if call.response_json_schema is not None:
            text = structured_answer_text(text)
        return LlmResponse(text)
