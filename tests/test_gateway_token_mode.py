"""Token mode over real HTTP: the gateway forwards the caller's JWT and the database verifies it.

The tenant's application (``gw_token``) is in token mode: its key alone speaks for nobody, the
database accepts an end user only from an identity provider's token it verifies itself. The
gateway is given one more signing key than the database knows (a rogue key of the same issuer
name), so a token signed with it passes the gateway but not the database: it answers 401 and
reaches no row, while the real issuer's token for the same user works (positive control).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest
from dds import AUDIENCE, GROUP, IDP, ISSUER, OWNER, RUNTIME, DdsEnvironment
from gateway_live import VECTOR_DIM, gateway_settings, serve
from oam_gateway.app import create_app
from oam_gateway.errors.problems import problem_type
from oracleagentmemory.devissuer import DevIssuer
from oracleagentmemory.engines.postgres import deepsec_admin
from pydantic import SecretStr

TOKEN_APP = "gw_token"


@pytest.fixture(scope="module")
def rogue(tmp_path_factory: pytest.TempPathFactory) -> DevIssuer:
    """A key of the same issuer name that the database does not know."""
    return DevIssuer.create(tmp_path_factory.mktemp("rogue"), ISSUER)


@pytest.fixture(scope="module")
def token_store(dds: DdsEnvironment) -> tuple[str, str]:
    """A protected store and the token of an application in token mode bound to it."""
    store_id = dds.new_store(vector_dim=VECTOR_DIM)
    with psycopg.connect(dds.secadmin_url) as conn:
        conn.execute("DELETE FROM oam_sec.application WHERE app_name = %s", [TOKEN_APP])
        token = deepsec_admin.create_application(conn, TOKEN_APP, RUNTIME).token()
        deepsec_admin.bind_application(conn, TOKEN_APP, stores=[(OWNER, store_id)],
                                       identity_providers=[IDP])
        deepsec_admin.set_require_token(conn, TOKEN_APP, True)
    return store_id, token


@contextmanager
def _gateway(dds: DdsEnvironment, store_id: str, app_token: str, mode: str, rogue: DevIssuer,
             directory: Path) -> Iterator[str]:
    directory.mkdir(exist_ok=True)
    jwks = directory / "jwks.json"  # the gateway trusts both keys; the database only the real
    jwks.write_text(json.dumps({"keys": dds.issuer.jwks()["keys"] + rogue.jwks()["keys"]}),
                    encoding="utf-8")
    settings = gateway_settings(dds, store_id, jwks, app_token=SecretStr(app_token),
                                end_user_mode=mode)
    with serve(create_app(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def token_gateway(dds: DdsEnvironment, token_store: tuple[str, str], rogue: DevIssuer,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store_id, app_token = token_store
    with _gateway(dds, store_id, app_token, "token", rogue,
                  tmp_path_factory.mktemp("token-gw")) as url:
        yield url


def _client(url: str, token: str) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer {token}"})


def _real(dds: DdsEnvironment, user: str) -> str:
    return dds.issuer.token(user, audience=AUDIENCE, groups=[GROUP],
                            scope="memory:read memory:write")


def _forged(rogue: DevIssuer, user: str) -> str:
    return rogue.token(user, audience=AUDIENCE, groups=[GROUP], scope="memory:read memory:write")


def test_the_real_token_reaches_the_users_rows_through_the_database(
        dds: DdsEnvironment, token_gateway: str, token_store: tuple[str, str]) -> None:
    with _client(token_gateway, _real(dds, "tess")) as http:
        made = http.post("/v1/memories", json={"content": "tess's secret"})
        assert made.status_code == 201, made.text
        assert made.json()["user_id"] == f"{IDP}:tess"
        listed = http.get("/v1/memories").json()["items"]
        assert [m["content"] for m in listed] == ["tess's secret"]
    with dds.owner_store(token_store[0]) as store:  # stored as the user the database verified
        assert [(r.content, getattr(r, "user_id", None)) for r in store.list("memory", limit=None)
                if r.content == "tess's secret"] == [("tess's secret", f"{IDP}:tess")]


def test_a_token_the_gateway_accepts_but_the_database_refuses_reaches_nothing(
        dds: DdsEnvironment, token_gateway: str, rogue: DevIssuer,
        token_store: tuple[str, str]) -> None:
    forged = _forged(rogue, "tess")
    with _client(token_gateway, forged) as http:
        me = http.get("/v1/me")  # the gateway itself accepts the token (no database involved)
        assert me.status_code == 200, me.text
        assert me.json()["user_name"] == f"{IDP}:tess"
        for method, path, body in (("GET", "/v1/memories", None),
                                   ("POST", "/v1/memories", {"content": "forged write"}),
                                   ("POST", "/v1/search", {"query": "secret"}),
                                   ("GET", "/v1/me/export", None)):
            answer = http.request(method, path, json=body)
            assert answer.status_code == 401, (path, answer.text)
            assert answer.json()["type"] == problem_type("security-context")
            assert "secret" not in answer.text
            assert answer.headers["www-authenticate"].startswith("Bearer")
    with dds.owner_store(token_store[0]) as store:
        assert "forged write" not in {r.content for r in store.list("memory", limit=None)}
    with _client(token_gateway, _real(dds, "tess")) as http:  # positive control, same gateway
        assert http.get("/v1/memories").status_code == 200


def test_the_token_mode_application_key_alone_speaks_for_nobody(
        dds: DdsEnvironment, token_store: tuple[str, str], rogue: DevIssuer,
        tmp_path: Path) -> None:
    """The same application's key without the forwarded token (a vouching gateway) is refused:
    what the token-mode gateway reached above, it reached by the token it forwarded."""
    store_id, app_token = token_store
    with _gateway(dds, store_id, app_token, "vouched", rogue, tmp_path / "refused") as url, \
            _client(url, _real(dds, "tess")) as http:
        answer = http.get("/v1/memories")
        assert answer.status_code == 401, answer.text
        assert answer.json()["type"] == problem_type("security-context")
    with _gateway(dds, store_id, dds.token, "vouched", rogue, tmp_path / "control") as url, \
            _client(url, _real(dds, "tess")) as http:  # positive control: a vouching app
        assert http.post("/v1/memories", json={"content": "vouched"}).status_code == 201
        listed = http.get("/v1/memories")
        assert listed.status_code == 200, listed.text
        assert "vouched" in listed.text
