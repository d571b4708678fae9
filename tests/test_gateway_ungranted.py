"""A caller whom no data role of the store is granted to, over real HTTP: every write answers a
403 ``not-permitted`` problem that says so, in the SDK's words, without the database's text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from dds import AUDIENCE, GROUP, DdsEnvironment
from gateway_live import BOTH_SCOPES, LiveGateway, live_gateway
from oam_gateway.errors.problems import PROBLEM_CONTENT_TYPE, problem_type

NOT_GRANTED = ("no data role of this memory store granted to the end user (directly or through "
               "one of their groups) allows this write")

WRITES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/v1/memories", {"content": "a note"}),
    ("PUT", "/v1/me/profile", {"information": "a profile"}),
    ("POST", "/v1/threads", {}),
    ("POST", "/v1/memories:batch", {"operations": [{"op": "add", "content": "in a batch"}]}),
]
"""A write of each kind of row a new caller can start with (insert into memory, profile,
thread; a batch)."""


@pytest.fixture(scope="module")
def gateway(dds: DdsEnvironment, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with live_gateway(dds, tmp_path_factory.mktemp("ungranted")) as live:
        yield live


def client_in(gateway: LiveGateway, user: str, groups: list[str]) -> httpx.Client:
    """A client carrying a token for ``user`` in ``groups``."""
    token = gateway.dds.issuer.token(user, audience=AUDIENCE, groups=groups, scope=BOTH_SCOPES)
    return httpx.Client(base_url=gateway.url, timeout=30,
                        headers={"Authorization": f"Bearer {token}"})


@pytest.mark.parametrize(("method", "path", "body"), WRITES,
                         ids=[f"{m} {p}" for m, p, _ in WRITES])
def test_a_write_of_a_caller_in_no_granted_group_says_no_data_role_is_granted(
        gateway: LiveGateway, method: str, path: str, body: dict[str, Any]) -> None:
    with client_in(gateway, "outsider", ["ops"]) as http:
        refused = http.request(method, path, json=body)
    assert refused.status_code == 403, refused.text
    assert refused.headers["content-type"].startswith(PROBLEM_CONTENT_TYPE)
    problem = refused.json()
    assert problem["type"] == problem_type("not-permitted")
    assert problem["code"] == "not_permitted"
    assert problem["detail"] == NOT_GRANTED
    # Nothing of the database: no table, store id, policy wording or SQLSTATE.
    for internal in (gateway.store_id, "_memory", "table", "row-level", "violates", "42501",
                     "policy"):
        assert internal not in refused.text, internal
    # Positive control: a member of the granted group makes the same write.
    with client_in(gateway, "insider", [GROUP]) as http:
        made = http.request(method, path, json=body)
    assert made.status_code in (200, 201), made.text


def test_a_caller_in_no_granted_group_reads_and_changes_nothing(gateway: LiveGateway) -> None:
    with client_in(gateway, "owner_of_m", [GROUP]) as http:
        memory_id = http.post("/v1/memories", json={"content": "kept"}).json()["id"]
    with client_in(gateway, "owner_of_m", ["ops"]) as http:  # the same name, not in the group
        assert http.get("/v1/memories").json()["items"] == []
        assert http.patch(f"/v1/memories/{memory_id}",
                          json={"content": "changed"}).status_code == 404
        assert http.delete(f"/v1/memories/{memory_id}").status_code == 404
    with client_in(gateway, "owner_of_m", [GROUP]) as http:
        assert http.get(f"/v1/memories/{memory_id}").json()["content"] == "kept"
