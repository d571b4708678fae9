"""How the SDK emits its events: :func:`observed` around API methods, :func:`embed` and
:func:`generate` around its calls of an embedder and a language model.

With no listener registered (or none that receives the events in question) each costs one
context-variable read before the call it wraps: no event, id, clock reading or argument binding
is made. With listeners, the arguments are bound
to the method's signature once per call, summarised without contents, and passed as they are
only when some listener asked for contents.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from oracleagentmemory._notset import _NotSetMarker
from oracleagentmemory.apis.embedders import IEmbedder
from oracleagentmemory.apis.llms import ILlm, JsonSchema, LlmResponse, Prompt
from oracleagentmemory.observability.event import (
    AgentMemoryCompletedEvent,
    AgentMemoryStartedEvent,
    ApiOperationCompletedEvent,
    ApiOperationStartedEvent,
    EmbedderCompletedEvent,
    EmbedderStartedEvent,
    Event,
    LlmGenerationCompletedEvent,
    LlmGenerationStartedEvent,
    MemoryStoreCompletedEvent,
    MemoryStoreStartedEvent,
    OperationKind,
    ThreadCompletedEvent,
    ThreadStartedEvent,
)
from oracleagentmemory.observability.eventlistener import (
    EventListener,
    _listeners,
    _receives,
    emit_event,
)

logger = logging.getLogger("oracleagentmemory.observability")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class _Component:
    name: str
    started: type[ApiOperationStartedEvent]
    completed: type[ApiOperationCompletedEvent]
    fields: Callable[[Any], dict[str, Any]]


def _no_fields(owner: Any) -> dict[str, Any]:
    return {}


def _thread_fields(thread: Any) -> dict[str, Any]:
    return {"thread_id": thread.thread_id, "user_id": thread.user_id,
            "agent_id": thread.agent_id}


MEMORY_STORE = _Component("memory_store", MemoryStoreStartedEvent, MemoryStoreCompletedEvent,
                          _no_fields)
AGENT_MEMORY = _Component("agent_memory", AgentMemoryStartedEvent, AgentMemoryCompletedEvent,
                          _no_fields)
THREAD = _Component("thread", ThreadStartedEvent, ThreadCompletedEvent, _thread_fields)

_KIND_OF_VERB = {"add": OperationKind.CREATE, "create": OperationKind.CREATE,
                 "link": OperationKind.CREATE, "get": OperationKind.READ,
                 "list": OperationKind.READ, "search": OperationKind.READ,
                 "update": OperationKind.UPDATE, "delete": OperationKind.DELETE,
                 "purge": OperationKind.DELETE}


def operation_kind(method: str) -> OperationKind:
    """The kind of ``method`` by its verb (``add_user`` creates; ``search`` reads)."""
    return _KIND_OF_VERB.get(method.split("_", 1)[0], OperationKind.UNKNOWN)


def observed(component: _Component) -> Callable[[F], F]:
    """Emit ``component``'s started and completed events around each call of the method."""

    def decorate(method: F) -> F:
        name = method.__name__
        kind = operation_kind(name)
        signature = inspect.signature(method)

        @functools.wraps(method)
        def wrapper(self: Any, /, *args: Any, **kwargs: Any) -> Any:
            if not _listeners.get():
                return method(self, *args, **kwargs)
            subscribers = _subscribers(component.started, component.completed)
            if not subscribers:
                return method(self, *args, **kwargs)
            wants_contents = any(listener.include_contents for listener in subscribers)
            try:
                bound = signature.bind(self, *args, **kwargs)
                arguments = {key: value for key, value in list(bound.arguments.items())[1:]
                             if not isinstance(value, _NotSetMarker)}
            except TypeError:  # the call itself raises it, with its own message
                arguments = {}
            operation = _Operation(
                component.completed, component.name, name,
                dict(concrete_class=type(self).__name__, method=name, operation_kind=kind,
                     **component.fields(self)),
                wants_contents)
            operation.start(component.started, arguments=arguments if wants_contents else None,
                            argument_summary=summarize(arguments))
            try:
                result = method(self, *args, **kwargs)
            except BaseException as error:
                operation.fail(error)
                raise
            operation.complete(result={"value": result} if wants_contents else None,
                               result_summary={"value": summarize_value("value", result)})
            return result

        return cast(F, wrapper)

    return decorate


def embed(embedder: IEmbedder, texts: Sequence[str], *,
          is_query: bool = False) -> npt.NDArray[np.float32]:
    """``embedder.embed(texts, is_query=is_query)``, observed."""
    subscribers = _subscribers(EmbedderStartedEvent, EmbedderCompletedEvent)
    if not subscribers:
        return embedder.embed(texts, is_query=is_query)
    wants = any(listener.include_contents for listener in subscribers)
    model = str(getattr(embedder, "model", None) or type(embedder).__name__)
    items = list(texts) if not isinstance(texts, str) else [texts]
    common = dict(concrete_class=type(embedder).__name__, model=model,
                  input_count=len(items), is_query=is_query)
    operation = _Operation(EmbedderCompletedEvent, "embedder", "embed", common, wants)
    operation.start(EmbedderStartedEvent, event_name="embedder.started",
                    input=items if wants else None,
                    text_lengths=[len(text) if isinstance(text, str) else 0 for text in items],
                    argument_summary={"texts": {"kind": "list", "count": len(items)},
                                      "is_query": is_query})
    try:
        vectors = embedder.embed(texts, is_query=is_query)
    except BaseException as error:
        operation.fail(error, event_name="embedder.completed")
        raise
    shape = np.shape(vectors)
    operation.complete(event_name="embedder.completed",
                       vector_count=int(shape[0]) if shape else None,
                       embedding_dimension=int(shape[1]) if len(shape) == 2 else None,
                       embedding_vector=np.asarray(vectors).tolist() if wants else None,
                       result_summary={"vector_count": int(shape[0]) if shape else 0})
    return vectors


def generate(llm: ILlm, prompt: Prompt, *, response_json_schema: JsonSchema | None = None,
             **kwargs: Any) -> LlmResponse:
    """``llm.generate(prompt, ...)``, observed."""
    if not _subscribers(LlmGenerationStartedEvent, LlmGenerationCompletedEvent):
        return llm.generate(prompt, response_json_schema=response_json_schema, **kwargs)
    operation = _llm_operation(llm, prompt, response_json_schema, kwargs)
    try:
        response = llm.generate(prompt, response_json_schema=response_json_schema, **kwargs)
    except BaseException as error:
        operation.fail(error, event_name="llm.generation.completed")
        raise
    _llm_completed(operation, response, response_json_schema)
    return response


async def generate_async(llm: ILlm, prompt: Prompt, *,
                         response_json_schema: JsonSchema | None = None,
                         **kwargs: Any) -> LlmResponse:
    """``await llm.generate_async(prompt, ...)``, observed."""
    if not _subscribers(LlmGenerationStartedEvent, LlmGenerationCompletedEvent):
        return await llm.generate_async(prompt, response_json_schema=response_json_schema,
                                        **kwargs)
    operation = _llm_operation(llm, prompt, response_json_schema, kwargs)
    try:
        response = await llm.generate_async(prompt, response_json_schema=response_json_schema,
                                            **kwargs)
    except BaseException as error:
        operation.fail(error, event_name="llm.generation.completed")
        raise
    _llm_completed(operation, response, response_json_schema)
    return response


def _llm_operation(llm: ILlm, prompt: Prompt, schema: JsonSchema | None,
                   kwargs: dict[str, Any]) -> _Operation:
    wants = any(listener.include_contents for listener in _subscribers(
        LlmGenerationStartedEvent, LlmGenerationCompletedEvent))
    config = {"model": str(getattr(llm, "model", None) or type(llm).__name__),
              "api_type": _name(getattr(llm, "api_type", "unknown"))}
    operation = _Operation(LlmGenerationCompletedEvent, "llm", "generate",
                           dict(concrete_class=type(llm).__name__, llm_config=config, **config),
                           wants)
    operation.start(LlmGenerationStartedEvent, event_name="llm.generation.started",
                    prompt=prompt if wants else None,
                    response_json_schema=schema if wants else None,
                    llm_generation_config=dict(kwargs) if wants and kwargs else None,
                    argument_summary={"prompt": summarize_value("prompt", prompt),
                                      "has_response_json_schema": schema is not None,
                                      "kwargs": summarize_value("kwargs", kwargs)})
    return operation


def _llm_completed(operation: _Operation, response: LlmResponse,
                   schema: JsonSchema | None) -> None:
    text = getattr(response, "text", None)
    operation.complete(event_name="llm.generation.completed",
                       content=text if operation.wants_contents else None,
                       result_summary={"has_text": bool(text),
                                       "text_length": len(text) if isinstance(text, str) else 0,
                                       "has_json_schema": schema is not None})


class _Operation:
    """One observed call: its event ids, its monotonic start, the fields both events share."""

    def __init__(self, completed: type[ApiOperationCompletedEvent], component: str,
                 method: str, common: dict[str, Any], wants_contents: bool) -> None:
        self.started_event_id = f"ev_{uuid.uuid4().hex}"
        self.completed = completed
        self.name = f"{component}.{method}"
        self.common = common
        self.wants_contents = wants_contents
        self.began = 0.0

    def start(self, started: type[ApiOperationStartedEvent], **fields: Any) -> None:
        fields.setdefault("event_name", self.name + ".started")
        _emit(started, event_id=self.started_event_id, **self.common, **fields)
        self.began = time.perf_counter()

    def fail(self, error: BaseException, **fields: Any) -> None:
        self.complete(success=False, error_type=type(error).__name__, **fields)

    def complete(self, **fields: Any) -> None:
        fields.setdefault("success", True)
        fields.setdefault("event_name", self.name + ".completed")
        _emit(self.completed, event_id=f"ev_{uuid.uuid4().hex}",
              started_event_id=self.started_event_id,
              duration_seconds=time.perf_counter() - self.began, **self.common, **fields)


def _emit(event_type: type[Event], **fields: Any) -> None:
    """Build and emit one event; a failure to build it is logged, never raised."""
    try:
        event = event_type(**fields)
    except Exception as error:
        logger.warning("observability event %s could not be built: %s", event_type.__name__,
                       type(error).__name__)
        return
    emit_event(event)


def _subscribers(*event_types: type[Event]) -> list[EventListener]:
    """The registered listeners that receive any of ``event_types`` (none registered: the
    empty list, after one context-variable read)."""
    listeners = _listeners.get()
    if not listeners:
        return []
    return [listener for listener in listeners
            if any(_receives(listener, event_type) for event_type in event_types)]


def _name(value: Any) -> str:
    return str(value.value if isinstance(value, Enum) else value)


# Summaries: structure only ----------------------------------------------------------------

_KEPT_STRINGS = frozenset({
    "record_type", "memory_type", "relation_type", "source_record_type", "target_record_type",
    "ttl_anchor", "role", "status", "search_strategy", "order",
})
"""Arguments whose string values name a kind, never content; every other string is summarised
by its length."""


def summarize(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The structure of ``arguments``: no text, identifier, metadata value or vector."""
    return {name: summarize_value(name, value) for name, value in arguments.items()}


def summarize_value(name: str, value: Any) -> Any:
    """One value's structure (scalars that cannot hold contents are kept as they are)."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, Enum):
        return _name(value)
    if isinstance(value, str):
        return value if name in _KEPT_STRINGS else {"kind": "str", "length": len(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"kind": "bytes", "length": len(value)}
    if isinstance(value, Mapping):
        return {"kind": "dict", "key_count": len(value)}
    if isinstance(value, np.ndarray):
        return {"kind": "array", "shape": list(value.shape)}
    if isinstance(value, Sequence):
        return {"kind": "list", "count": len(value)}
    return {"kind": type(value).__name__}
