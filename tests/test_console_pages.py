"""The console's pages over real HTTP: paging through memories, threads and messages, what a
stored text can (not) do to a page, the error pages, and the export's JSON lines.

The data is written through the REST API with the person's own token; the pages are read
with their console session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from console_live import ConsoleGateway, console_gateway, csrf_token, signed_in
from local_ports import closed_port
from pydantic import SecretStr


@pytest.fixture(scope="module")
def gateway(dds: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleGateway]:
    with console_gateway(dds, tmp_path_factory.mktemp("console-pages")) as served:
        yield served


def _older(page: str) -> str | None:
    found = re.search(r'<a href="([^"]+)" rel="next">Older</a>', page)
    return found.group(1).replace("&amp;", "&") if found else None


def test_memories_threads_and_messages_page_newest_first(gateway: ConsoleGateway) -> None:
    with gateway.client("alice") as rest:
        for n in range(5):
            assert rest.post("/v1/memories", json={"content": f"paged memory {n}"}
                             ).status_code == 201
        thread = rest.post("/v1/threads", json={}).json()["id"]
        rest.post(f"/v1/threads/{thread}/messages", json={"messages": [
            {"role": "user", "content": f"paged message {n}"} for n in range(3)]})
    alice = signed_in(gateway, "alice")
    seen: list[str] = []
    address: str | None = "/console/memories?limit=2"
    while address is not None:
        page = alice.get(address)
        assert page.status_code == 200, page.text
        seen += re.findall(r"paged memory (\d)", page.text)
        address = _older(page.text)
    assert seen == ["4", "3", "2", "1", "0"]

    timeline = alice.get("/console/timeline?limit=3")
    assert re.findall(r"paged memory (\d)", timeline.text) == ["4", "3", "2"]
    assert _older(timeline.text) is not None

    messages = alice.get(f"/console/threads/{thread}?limit=2")
    assert re.findall(r"paged message (\d)", messages.text) == ["2", "1"]
    older = _older(messages.text)
    assert older is not None
    assert re.findall(r"paged message (\d)", alice.get(older).text) == ["0"]
    assert thread in alice.get("/console/threads").text


def test_a_stored_text_is_shown_never_run(gateway: ConsoleGateway) -> None:
    alice = signed_in(gateway, "alice")
    hostile = '<script>alert(1)</script><img src=x onerror=alert(2)>" autofocus onfocus="x'
    added = alice.post("/console/memories", data={"content": hostile,
                                                  "csrf_token": csrf_token(alice)})
    assert added.status_code == 303
    for address in (added.headers["location"], "/console/memories", "/console/timeline",
                    "/console/memories?q=" + "alert"):
        page = alice.get(address).text
        assert "<script>" not in page and "<img" not in page and '" autofocus' not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown, as text


def test_bad_input_answers_an_error_page_not_a_server_error(gateway: ConsoleGateway) -> None:
    alice = signed_in(gateway, "alice")
    token = csrf_token(alice)
    answers = {
        "/console/memories?cursor=forged": 400,
        "/console/memories?limit=0": 400,
        "/console/memories/" + "x" * 300: 400,  # longer than any id, as /v1 answers
        "/console/threads/no-such-thread": 404,
    }
    for address, status in answers.items():
        page = alice.get(address)
        assert page.status_code == status, (address, page.text)
        assert page.headers["content-type"].startswith("text/html")
        assert 'role="alert"' in page.text
    empty = alice.post("/console/memories", data={"content": "   ", "csrf_token": token})
    assert empty.status_code == 400 and 'role="alert"' in empty.text
    unconfirmed = alice.post("/console/erase", data={"csrf_token": token})
    assert unconfirmed.status_code == 400  # nothing erased without the confirmation
    nul = alice.post("/console/memories", data={"content": "a\x00b", "csrf_token": token})
    assert nul.status_code == 400


def test_the_export_is_the_persons_json_lines(gateway: ConsoleGateway) -> None:
    with gateway.client("bob") as rest:
        rest.post("/v1/memories", json={"content": "bob's own export line"})
    bob = signed_in(gateway, "bob")
    export = bob.get("/console/export")
    assert export.status_code == 200
    assert export.headers["content-type"].startswith("application/jsonl")
    assert "attachment" in export.headers["content-disposition"]
    assert export.headers["content-security-policy"].startswith("default-src 'self'")
    lines = [json.loads(line) for line in export.text.splitlines()]
    assert any(line["record"].get("content") == "bob's own export line" for line in lines)
    assert all(line["record"].get("user_id") in (None, "test_idp:bob") for line in lines)
    assert "paged memory" not in export.text  # alice's rows are not bob's


class _Controls(HTMLParser):
    """The ids of a page's visible fields and the ids its labels name."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[str | None] = []
        self.labelled: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in ("input", "textarea", "select") and values.get("type") != "hidden":
            self.fields.append(values.get("id"))
        elif tag == "label" and values.get("for"):
            self.labelled.add(str(values["for"]))


def test_every_field_of_every_page_has_its_label(gateway: ConsoleGateway) -> None:
    with gateway.client("alice") as rest:
        memory = rest.post("/v1/memories", json={"content": "labelled"}).json()["id"]
    alice = signed_in(gateway, "alice")
    fields = 0
    for page in ("/console", "/console/memories", f"/console/memories/{memory}",
                 "/console/timeline", "/console/threads", "/console/profile", "/console/data"):
        controls = _Controls()
        controls.feed(alice.get(page).text)
        assert all(field in controls.labelled for field in controls.fields), page
        fields += len(controls.fields)
    assert fields >= 4  # search, add, edit, the erase confirmation


def test_a_database_away_answers_a_page_saying_when_to_retry(dds: Any, tmp_path: Path) -> None:
    away = SecretStr(f"postgresql://nobody@127.0.0.1:{closed_port()}/oam")
    with console_gateway(dds, tmp_path, database_url=away, pool_min_size=0,
                         pool_timeout_seconds=1) as served:
        alice = signed_in(served, "alice")  # signing in needs no database
        page = alice.get("/console/memories")
        assert page.status_code == 503, page.text
        assert int(page.headers["retry-after"]) > 0
        assert "Try again shortly" in page.text and 'role="alert"' in page.text
        assert page.headers["content-security-policy"].startswith("default-src 'self'")


def test_console_pages_count_against_the_persons_rate_limit(dds: Any, tmp_path: Path) -> None:
    with console_gateway(dds, tmp_path, limits={"rate_limit": "4/minute"}) as served:
        alice = signed_in(served, "alice")  # signing in is not counted
        assert [alice.get("/console/memories").status_code for _ in range(4)] == [200] * 4
        refused = alice.get("/console/timeline")
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
        assert "Slow down" in refused.text and 'role="alert"' in refused.text
        assert refused.headers["content-security-policy"].startswith("default-src 'self'")
        bob = signed_in(served, "bob")
        assert bob.get("/console/memories").status_code == 200  # another person's allowance
