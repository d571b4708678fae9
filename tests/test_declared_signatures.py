"""Signatures that tools can read: every public method of the SDK declares its parameters.

IDEs, type checkers and agents read ``inspect.signature``; a method declared ``(*args,
**kwargs)`` tells them nothing. The contracts (``IAgentMemory``, ``IThread``) declare the
parameters Oracle's ``oracleagentmemory`` 26.8 declares, the implementations accept each of them
the same way, and the thread's delegating methods forward each one to the client.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

import oracleagentmemory
import pytest
from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.apis import IAgentMemory, ImageMimeType, IThread
from oracleagentmemory.core import MemoryExtractionConfig, OracleAgentMemory, OracleDBMemoryStore
from oracleagentmemory.core.embedders.hashing import HashingEmbedder
from oracleagentmemory.core.thread import OracleThread
from test_store_images import png

StoreFactory = Callable[..., OracleDBMemoryStore]
P = inspect.Parameter


def public_classes() -> Iterator[type]:
    """Public classes of the SDK's public modules (engines and the admin CLI are internal)."""
    for info in pkgutil.walk_packages(oracleagentmemory.__path__, "oracleagentmemory."):
        parts = info.name.split(".")[1:]
        if parts[0] in ("engines", "admin_cli") or any(p.startswith("_") for p in parts):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if not name.startswith("_") and inspect.isclass(value) and \
                    value.__module__ == module.__name__:
                yield value


def own_methods(cls: type) -> Iterator[tuple[str, inspect.Signature]]:
    """The public methods of ``cls`` that a class of the SDK defines, with their signatures."""
    for name in dir(cls):
        if name.startswith("_") and name != "__init__":
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not owner.__module__.startswith("oracleagentmemory."):
            continue
        if isinstance(inspect.getattr_static(cls, name), property):
            continue
        value = getattr(cls, name)
        if callable(value) and not inspect.isclass(value):
            yield name, inspect.signature(value)


def test_no_public_method_hides_its_parameters() -> None:
    opaque = [f"{cls.__module__}.{cls.__qualname__}.{name}{signature}"
              for cls in public_classes() for name, signature in own_methods(cls)
              if any(p.kind is P.VAR_POSITIONAL for p in signature.parameters.values())
              or (signature.parameters and all(p.kind in (P.VAR_KEYWORD, P.VAR_POSITIONAL)
                                               or p.name == "self"
                                               for p in signature.parameters.values())
                  and any(p.kind is P.VAR_KEYWORD for p in signature.parameters.values()))]
    assert opaque == []


def test_the_listed_classes_were_scanned() -> None:
    scanned = set(public_classes())
    assert {IAgentMemory, IThread, OracleAgentMemory, OracleThread} <= scanned


def shape(parameter: inspect.Parameter) -> tuple[str, inspect._ParameterKind, Any]:
    return parameter.name, parameter.kind, parameter.default


ADD_MEMORY = ["content", "memory_type", "user_id", "agent_id", "thread_id", "memory_id",
              "metadata", "timestamp", "ttl_days", "ttl_anchor", "status", "autonomous_linking",
              "memory_id_to_link", "link_type", "link_id", "link_timestamp", "link_metadata",
              "store_kwargs"]


@pytest.mark.parametrize(("method", "names"), [
    (IAgentMemory.add_memory, ADD_MEMORY),
    (IThread.add_memory, ADD_MEMORY),
    (IAgentMemory.list_threads, ["user_id", "agent_id", "metadata_filter", "limit"]),
    (IThread.link_records, ["source_record_id", "source_record_type", "target_record_id",
                            "target_record_type", "relation_type", "opposite_relation_type",
                            "relation_id", "timestamp", "metadata"]),
    (IThread.get_messages, ["start", "end", "include_image_bytes"]),
    (IThread.wait_for_memory_extraction, ["timeout"]),
])
def test_contracts_declare_the_vendor_parameters(method: Callable[..., Any],
                                                 names: list[str]) -> None:
    parameters = list(inspect.signature(method).parameters.values())[1:]
    assert [p.name for p in parameters] == names


def test_a_search_takes_its_query_positionally_and_the_rest_by_keyword() -> None:
    parameters = list(inspect.signature(IThread.search).parameters.values())[1:]
    assert parameters[0].name == "query" and parameters[0].kind is P.POSITIONAL_OR_KEYWORD
    assert {p.kind for p in parameters[1:]} == {P.KEYWORD_ONLY}
    assert inspect.signature(IAgentMemory.wait_for_memory_extraction).parameters[
        "timeout"].default == 300.0


@pytest.mark.parametrize(("contract", "implementation"), [
    (IAgentMemory, OracleAgentMemory), (IThread, OracleThread)])
def test_implementations_accept_every_contract_parameter_the_same_way(
        contract: type, implementation: type) -> None:
    """Each parameter of a contract method is one of the implementation's, with the same kind
    and default, in the same order (an implementation may add parameters after them)."""
    for name, signature in own_methods(contract):
        if name == "__init__" or name.endswith("_async"):
            continue  # twins: test_async_twins_show_the_synchronous_signature
        declared = [shape(p) for p in list(signature.parameters.values())[1:]
                    if p.kind is not P.VAR_KEYWORD]
        accepted = [shape(p) for p in
                    list(inspect.signature(getattr(implementation, name)).parameters.values())[1:]
                    if p.kind is not P.VAR_KEYWORD]
        if name == "list_threads":  # the spec's NO_CHECK inference: an omitted user_id
            declared = declared[1:]
            accepted = accepted[1:]
        assert [a for a in accepted if a[0] in {d[0] for d in declared}] == declared, name


@pytest.mark.parametrize("cls", [IAgentMemory, IThread, OracleAgentMemory, OracleThread])
def test_async_twins_show_the_synchronous_signature(cls: type) -> None:
    for name, signature in own_methods(cls):
        if name.endswith("_async") and hasattr(cls, name.removesuffix("_async")):
            sync = inspect.signature(getattr(cls, name.removesuffix("_async")))
            if (cls, name) == (OracleThread, "get_messages_async"):
                # Oracle's twin takes them by position too: the same names and defaults, each
                # positional or keyword (a superset of the keyword-only sync method).
                sync = sync.replace(parameters=[
                    p.replace(kind=P.POSITIONAL_OR_KEYWORD) for p in sync.parameters.values()])
                signature = signature.replace(return_annotation=sync.return_annotation)
            assert signature == sync, name


def test_a_threads_messages_come_async_by_position_as_by_keyword(
        client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="t-async", user_id="u", agent_id="a")
    thread.add_messages([{"role": "user", "content": f"turn {n}"} for n in range(4)])

    async def read() -> tuple[list[str], list[str], list[str]]:
        by_position = await thread.get_messages_async(1, 3)
        by_keyword = await thread.get_messages_async(start=1, end=3)
        every = await thread.get_messages_async()
        return ([str(m.content) for m in by_position], [str(m.content) for m in by_keyword],
                [str(m.content) for m in every])

    by_position, by_keyword, every = asyncio.run(read())
    assert by_position == by_keyword == ["turn 1", "turn 2"]
    assert every == [f"turn {n}" for n in range(4)]


# --- the thread forwards every declared parameter ------------------------------------------------
@pytest.fixture
def client(make_store: StoreFactory) -> Iterator[OracleAgentMemory]:
    store = make_store(embedder=HashingEmbedder(64))
    memory = OracleAgentMemory(store=store,
                               memory_extraction_config=MemoryExtractionConfig(
                                   extract_memories=False))
    yield memory
    memory.close()


def test_thread_memories_and_links_take_the_declared_arguments(
        client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    scoped = thread.add_memory("tea with lemon", memory_type="preference", memory_id="m1",
                               metadata={"k": 1})
    shared = thread.add_memory("the office opens at nine", memory_id="m2", user_id=None,
                               agent_id=None)
    own = client.get_memory(scoped)
    assert (own.user_id, own.agent_id, own.thread_id) == ("u", "a", "t")
    assert own.record_type == "preference" and own.metadata == {"k": 1}
    assert client.get_memory(shared).user_id is None
    assert thread.update_memory("m1", "green tea", {"k": 2}) == "m1"
    assert client.get_memory("m1").content == "green tea"
    relation = thread.link_records("m1", "preference", "m2", "memory", "supports",
                                   "is_supported_by", "rel-1", None, {"why": "test"})
    assert relation == "rel-1"
    assert thread.update_record_link("rel-1", "refines") == 1
    assert thread.delete_record_link("m1", "preference", "m2", "memory", "refines") == 1
    assert thread.delete_record_link(relation_id="rel-1") == 0
    with pytest.raises(TypeError):
        thread.link_records("m1", "preference", "m2", "memory", "supports",
                            relation="r")  # type: ignore[call-arg]


def test_thread_images_take_the_declared_arguments(client: OracleAgentMemory) -> None:
    thread = client.create_thread(thread_id="t", user_id="u", agent_id="a")
    image_id = thread.add_image(png(), "a red square", ImageMimeType.PNG, "img-1")
    [record] = thread.list_images(image_id)
    assert (record.id, record.user_id, record.thread_id) == ("img-1", "u", "t")
    assert thread.update_image(image_id, description="a blue square") == "img-1"
    assert client.list_images(image_id="img-1")[0].content == "a blue square"


THREAD_SETTINGS = ["max_message_token_length", "message_shortening_input_token_limit",
                   "memory_extraction_config", "image_input_limit_config", "search_config",
                   "context_card_token_limit", "context_card_type_search_concurrency",
                   "extract_memories", "memory_extraction_window",
                   "context_summary_update_frequency", "memory_extraction_frequency",
                   "memory_extraction_token_limit", "memory_extraction_custom_instructions",
                   "memory_extraction_inherit_message_metadata", "enable_context_summary"]


def test_the_client_declares_each_thread_setting() -> None:
    def names(method: Callable[..., Any]) -> list[str]:
        return [p.name for p in list(inspect.signature(method).parameters.values())[1:]]

    assert names(OracleAgentMemory.create_thread) == [
        "thread_id", "user_id", "agent_id", "metadata", "llm", *THREAD_SETTINGS, "kwargs"]
    assert names(OracleAgentMemory.get_thread) == [
        "thread_id", "llm", *THREAD_SETTINGS, "settings"]
    assert names(OracleAgentMemory.update_thread) == [
        "thread_id", "metadata", "llm", "extract_memories", "max_message_token_length",
        "message_shortening_input_token_limit", "memory_extraction_window",
        "context_summary_update_frequency", "memory_extraction_frequency",
        "memory_extraction_token_limit", "context_card_token_limit", "enable_context_summary",
        "memory_extraction_custom_instructions", "memory_extraction_inherit_message_metadata",
        "memory_extraction_config", "image_input_limit_config", "search_config", "kwargs"]
    update = inspect.signature(OracleAgentMemory.update_thread).parameters
    assert update["llm"].kind is P.POSITIONAL_OR_KEYWORD


def test_thread_settings_are_taken_by_name_and_position(client: OracleAgentMemory) -> None:
    created = client.create_thread(thread_id="t", user_id="u", context_card_token_limit=5_000)
    assert created.context_card_token_limit == 5_000
    opened = client.get_thread("t", max_message_token_length=100)
    assert opened.max_message_token_length == 100 and opened.context_card_token_limit == 5_000
    assert client.get_thread("t").max_message_token_length == 15_000  # not saved by get_thread
    updated = client.update_thread("t", {"k": 1}, NOT_SET_MARKER, NOT_SET_MARKER, 200)
    assert updated.max_message_token_length == 200 and updated.metadata == {"k": 1}
    assert client.get_thread("t").max_message_token_length == 200
    with pytest.raises(TypeError, match="unexpected"):
        client.update_thread("t", no_such_setting=1)
