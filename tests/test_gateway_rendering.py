"""The hot routes render their answers without building pydantic models (``rest.views.
record_data``, ``rest.endpoints.json_data_response``); what they write must be, byte for byte,
what their declared response models write: a record of every type through ``record_data``
next to ``record_view``, and over real HTTP a get and searches (with and without
``formatted`` and linked results) next to the declared model's rendering of the same answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from dds import DdsEnvironment
from gateway_live import LiveGateway, live_gateway
from oam_gateway.rest.models import Record, SearchOut
from oam_gateway.rest.views import record_data, record_view
from oracleagentmemory.apis.message import ImageContent, ImageMimeType, TextContent
from oracleagentmemory.apis.records import RecordStatus, build_record
from pydantic_core import to_json

METADATA = {"topic": "café ☕", "score": 0.1 + 0.2, "none": None, "nested": {"list": [1, None,
                                                                                      2.5e20]}}


def records() -> list[Any]:
    """A record of every type, with values that test the rendering (text beyond ASCII, floats,
    ``None`` inside metadata, an invalid status, an image's bytes)."""
    scope: dict[str, Any] = {"thread_id": "t1", "user_id": "idp:alice", "agent_id": None}
    return [
        build_record("memory", "m1", content='says "hi" ✓', timestamp="2026-01-02T03:04:05Z",
                     metadata=METADATA, **scope),
        build_record("fact", "f1", content=None, status=RecordStatus.INVALID, **scope),
        build_record("preference", "p1", content="tea", metadata={}, **scope),
        build_record("guideline", "g1", content="be brief", **scope),
        build_record("message", "msg1", role="user", seq_no=3, content=[
            TextContent("look", id="part1"),
            ImageContent(b"\x89PNG", ImageMimeType.PNG, "a cat", id="part2")], **scope),
        build_record("message", "msg2", role=None, seq_no=0, content="", **scope),
        build_record("thread", "t1", runtime_config={"temperature": 0.5},
                     runtime_state=None, **scope),
        build_record("thread_summary", "s1", content={"summary": "x", "n": 2}, **scope),
        build_record("image", "i1", content="a cat", message_id="msg1", bytes=b"\x89PNG",
                     mime_type="image/png", **scope),
        build_record("user_profile", "idp:alice", content="likes tea"),
        build_record("agent_profile", "a1", content=None, metadata={"k": [None]}),
    ]


@pytest.mark.parametrize("record", records(), ids=lambda r: f"{r.record_type}-{r.id}")
def test_record_data_is_what_the_record_model_writes(record: Any) -> None:
    assert to_json(record_data(record)) == \
        record_view(record).model_dump_json(exclude_none=True).encode()


def test_record_data_leaves_out_none_and_puts_declared_fields_first() -> None:
    """Positive control of the comparison above: keys and order are checked, not only JSON
    equality."""
    record = build_record("message", "msg1", role="user", seq_no=1, content="hi",
                          user_id="idp:alice")
    assert list(record_data(record)) == [
        *(name for name in Record.model_fields if getattr(record, name) is not None),
        "role", "seq_no"]


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("rendering")) as live:
        yield live


def canonical(model: type[Record] | type[SearchOut], body: bytes) -> bytes:
    """``body`` as the declared ``model`` writes the same values."""
    return model.model_validate_json(body).model_dump_json(exclude_none=True).encode()


def test_get_and_search_write_what_their_models_write(gateway: LiveGateway) -> None:
    with gateway.client("render_alice") as http:
        ids = []
        for content, metadata in (("alpine hiking in the rain", METADATA),
                                  ("espresso before the alpine hike", None),
                                  ("tulips in the garden", {"ok": True})):
            answer = http.post("/v1/memories", json={"content": content,
                                                     **({"metadata": metadata} if metadata
                                                        else {})})
            assert answer.status_code == 201, answer.text
            ids.append(answer.json()["id"])
        relation = http.post("/v1/relations", json={
            "source_record_id": ids[0], "source_record_type": "memory",
            "target_record_id": ids[1], "target_record_type": "memory",
            "relation_type": "supports", "opposite_relation_type": "is_supported_by"})
        assert relation.status_code == 201, relation.text

        got = http.get(f"/v1/memories/{ids[0]}")
        assert got.status_code == 200
        assert got.json()["metadata"] == METADATA
        assert got.content == canonical(Record, got.content)

        for extra in ({}, {"formatted": True}, {"num_hops": 1}, {"num_hops": 1, "k": 1}):
            found = http.post("/v1/search", json={"query": "alpine hike", "k": 5, **extra})
            assert found.status_code == 200, found.text
            body = found.json()
            if "k" not in extra:
                assert {hit["record"]["id"] for hit in body["results"]} == set(ids)
            assert body["results"] and all("distance" in hit for hit in body["results"])
            assert ("formatted" in body) == bool(extra.get("formatted"))
            if extra.get("num_hops"):
                assert any(hit["linked"] for hit in body["results"])
            assert found.content == canonical(SearchOut, found.content)

        nothing = http.post("/v1/search", json={"query": "zzzz qqqq", "k": 5,
                                                "formatted": True})
        assert nothing.status_code == 200
        assert nothing.content == canonical(SearchOut, nothing.content)
