"""Oracle tenants: their settings, the pool arguments, and the end-user contexts they build.

No Oracle database runs here. What is tested is what needs none: the settings' rules, the
``oracledb.create_pool`` arguments (bound to the installed driver's signature, and a real
thin-mode pool object built from them with ``min=0``, which opens no connection), and the
python-oracledb end-user security contexts each identity mode builds, with the database access
token fetched from a real local OAuth 2.0 token endpoint (:mod:`fake_identity_provider`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import oracledb
import pytest
from fake_identity_provider import CLIENT_ID, CLIENT_SECRET, SCOPE, FakeIdentityProvider
from oam_gateway.config.oracle_settings import OracleDatabaseSettings, dsn_uses_tls
from oam_gateway.config.settings import GatewaySettings
from oam_gateway.config.tenant_settings import TenantSettings
from oam_gateway.tenancy.oracle_pool import pool_arguments
from oam_gateway.tenancy.oracle_tenant import OracleContexts, oracle_runtime
from oam_gateway.tenancy.postgres_tenant import PostgresContexts
from oam_gateway.tenancy.principal import Principal
from oam_gateway.tenancy.tenant_runtime import TenantRuntime
from oam_gateway.tenancy.tenants import Tenants
from oracleagentmemory.engines.oracle.worker_pool import WorkerThreadPool
from oracleagentmemory.engines.oracle.worker_pool import create_pool as create_oracle_pool
from oracleagentmemory.engines.postgres.event_loop_pool import EventLoopPool
from oracleagentmemory.errors import InvalidArgumentError
from pydantic import SecretStr, ValidationError

DSN = "tcps://db.example.com:2484/memorypdb"
POOL_PASSWORD = "Pool-Pa55word-e81d"  # noqa: S105  (a test secret)
WALLET_PASSWORD = "Wallet-Pa55word-03bb"  # noqa: S105


def _access_token(token_url: str = "https://login.microsoftonline.com/t/oauth2/v2.0/token",
                  **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"provider": "entra_id", "token_url": token_url,
                              "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                              "scope": SCOPE}
    values.update(overrides)
    return values


def _oracle(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {"dsn": DSN, "access_token": _access_token()}
    values.update(overrides)
    return values


def _tenant(**overrides: Any) -> TenantSettings:
    values: dict[str, Any] = {"oracle": _oracle(), "memory_store_id": "demo",
                              "schema_owner": "OAM_OWNER", "end_user_mode": "local"}
    values.update(overrides)
    return TenantSettings(**values)


def _principal(subject: str = "alice", groups: tuple[str, ...] = (),
               token: str = "user.token.alice") -> Principal:
    return Principal(user_name=subject, groups=groups, tenant="acme", expires_at=2**31,
                     subject=subject, token=token)


# --- settings ----------------------------------------------------------------------------------

def test_an_oracle_tenant_is_settled_from_a_table() -> None:
    tenant = _tenant(oracle=_oracle(user="OAM_RUNTIME", password=POOL_PASSWORD,
                                    wallet_location="/run/secrets/wallet",
                                    wallet_password=WALLET_PASSWORD, pool_increment=2))
    assert tenant.engine == "oracle" and tenant.database_url is None
    assert tenant.oracle is not None and tenant.oracle.user == "OAM_RUNTIME"
    assert tenant.oracle.password_value() == POOL_PASSWORD
    assert tenant.oracle.wallet_password_value() == WALLET_PASSWORD
    assert tenant.oracle.access_token.client_secret_value() == CLIENT_SECRET
    for text in (repr(tenant), str(tenant), repr(tenant.model_dump())):
        for secret in (POOL_PASSWORD, WALLET_PASSWORD, CLIENT_SECRET):
            assert secret not in text


def test_postgresql_tenants_are_unchanged() -> None:
    tenant = TenantSettings(database_url=SecretStr("postgresql://rt:pw@db/oam"),
                            memory_store_id="demo", schema_owner="oam_demo",
                            identity_provider="idp")
    assert tenant.engine == "postgresql" and tenant.oracle is None
    assert tenant.end_user_mode == "vouched"


@pytest.mark.parametrize(("overrides", "message"), [
    ({"database_url": SecretStr("postgresql://rt:pw@db/oam")}, "exactly one of them"),
    ({"oracle": None}, "exactly one of them"),
    ({"end_user_mode": "vouched", "identity_provider": "idp"}, "'vouched' is PostgreSQL's"),
    ({"app_token": SecretStr("t")}, "takes no app_token"),
    ({"identity_provider": "idp"}, "leave identity_provider unset"),
    ({"group_roles": {"staff": ("R",)}}, "group_roles do not apply to local end users"),
    ({"oracle": _oracle(dsn="db.example.com:1521/memorypdb")}, "must use TLS"),
    ({"oracle": _oracle(dsn="(DESCRIPTION=(ADDRESS=(PROTOCOL=TCP)(HOST=h)(PORT=1521))"
                            "(CONNECT_DATA=(SERVICE_NAME=s)))")}, "must use TLS"),
    ({"oracle": _oracle(dsn="memorypdb_high")}, "give config_dir"),
    ({"oracle": _oracle(user="OAM_RUNTIME")}, "needs password or password_file"),
    ({"oracle": _oracle(password=POOL_PASSWORD)}, "a pool password needs user"),
    ({"oracle": _oracle(user="U", password="p", password_file="/f")}, "not both"),
    ({"oracle": _oracle(wallet_password=WALLET_PASSWORD)}, "needs wallet_location"),
    ({"oracle": {"dsn": DSN}}, "access_token"),  # a token provider is required
    ({"oracle": _oracle(access_token=_access_token(client_secret=None))},
     "client_secret or client_secret_file"),
    ({"oracle": _oracle(access_token=_access_token(scope="https://example.com/db"))},
     "/.default"),
    ({"oracle": _oracle(access_token=_access_token(token_url="http://idp.example/t"))}, "https"),
    ({"oracle": _oracle(access_token=_access_token(provider="okta"))}, "provider"),
    ({"oracle": _oracle(sid="x")}, "Extra inputs are not permitted"),
])
def test_oracle_settings_are_checked(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message) as caught:
        _tenant(**overrides)
    for secret in (POOL_PASSWORD, WALLET_PASSWORD, CLIENT_SECRET):
        assert secret not in str(caught.value)


def test_a_tls_descriptor_and_an_alias_with_config_dir_pass() -> None:
    descriptor = ("(DESCRIPTION=(ADDRESS=(PROTOCOL = tcps)(HOST=h)(PORT=2484))"
                  "(CONNECT_DATA=(SERVICE_NAME=s)))")
    assert _tenant(oracle=_oracle(dsn=descriptor)).oracle is not None
    assert _tenant(oracle=_oracle(dsn="memorypdb_high", config_dir="/wallet")).oracle
    assert dsn_uses_tls("TCPS://h:2484/s") is True
    assert dsn_uses_tls("h:1521/s") is False and dsn_uses_tls("mydb_low") is None


def test_the_driver_refuses_an_access_token_over_plain_tcp() -> None:
    """Positive control of the TLS rule: python-oracledb itself refuses (DPY-2034)."""
    pool = oracledb.create_pool(dsn="127.0.0.1:9/nosuch", min=0, max=1, homogeneous=True,
                                access_token=lambda refresh: "a.b.c")
    try:
        with pytest.raises(oracledb.Error, match="DPY-2034"):
            pool.acquire()
    finally:
        pool.close(force=True)


def test_one_tenant_mode_takes_an_oracle_table_from_the_environment(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    secret_file = tmp_path / "client-secret"
    secret_file.write_text(CLIENT_SECRET, encoding="utf-8")
    env = {"ISSUER": "https://idp.example", "AUDIENCE": "oam", "JWKS_FILE": "/jwks.json",
           "MEMORY_STORE_ID": "demo", "SCHEMA_OWNER": "OAM_OWNER", "END_USER_MODE": "token",
           "ORACLE__DSN": DSN, "ORACLE__USER": "OAM_RUNTIME",
           "ORACLE__PASSWORD": POOL_PASSWORD,
           "ORACLE__ACCESS_TOKEN__PROVIDER": "oci_iam",
           "ORACLE__ACCESS_TOKEN__TOKEN_URL":
               "https://idcs-1.identity.oraclecloud.com/oauth2/v1/token",
           "ORACLE__ACCESS_TOKEN__CLIENT_ID": CLIENT_ID,
           "ORACLE__ACCESS_TOKEN__CLIENT_SECRET_FILE": str(secret_file),
           "ORACLE__ACCESS_TOKEN__SCOPE": "OracleDBDB_ACCESS_SCOPE"}
    for name, value in env.items():
        monkeypatch.setenv(f"OAM_GATEWAY_{name}", value)
    settings = GatewaySettings()  # type: ignore[call-arg]
    [(name, tenant)] = settings.tenant_settings().items()
    assert name == "default" and tenant.engine == "oracle" and tenant.end_user_mode == "token"
    assert tenant.oracle is not None and tenant.oracle.password_value() == POOL_PASSWORD
    assert tenant.oracle.access_token.client_secret_value() == CLIENT_SECRET
    assert POOL_PASSWORD not in repr(settings)


def test_one_tenant_mode_still_needs_a_database() -> None:
    with pytest.raises(ValidationError, match="database_url is required"):
        GatewaySettings(memory_store_id="demo", schema_owner="o", issuer="https://i",
                        audience="a", jwks_file=Path("/jwks.json"))


def test_tenants_mix_postgresql_and_oracle() -> None:
    settings = {"pg": TenantSettings(database_url=SecretStr("postgresql://rt:pw@127.0.0.1:9/x"),
                                     memory_store_id="demo", schema_owner="oam_demo",
                                     app_token=SecretStr("app"), end_user_mode="local"),
                "ora": _tenant()}
    tenants = Tenants(settings)
    try:
        pg, ora = tenants["pg"], tenants["ora"]
        assert isinstance(pg, TenantRuntime) and isinstance(ora, TenantRuntime)
        assert isinstance(pg.engine, EventLoopPool) and isinstance(pg.contexts, PostgresContexts)
        assert isinstance(ora.engine, WorkerThreadPool) and isinstance(ora.contexts,
                                                                        OracleContexts)
    finally:
        tenants.close()


# --- the pool --------------------------------------------------------------------------------

def _callback(refresh: bool) -> str:
    return "a.b.c"


def test_pool_arguments_for_a_token_login_bind_to_the_driver() -> None:
    tenant = _tenant(pool_min_size=0, pool_max_size=4, pool_timeout_seconds=2.5,
                     oracle=_oracle(wallet_location="/run/wallet", pool_increment=2))
    arguments = pool_arguments(tenant, _callback)
    assert arguments == {"dsn": DSN, "min": 0, "max": 4, "increment": 2, "homogeneous": True,
                         "getmode": oracledb.POOL_GETMODE_TIMEDWAIT, "wait_timeout": 2500,
                         "tcp_connect_timeout": 2.5, "wallet_location": "/run/wallet",
                         "access_token": _callback}
    inspect.signature(oracledb.create_pool).bind(**arguments)  # the installed driver's names
    pool = create_oracle_pool(arguments)  # a real thin pool; min=0 opens no connection
    try:
        assert isinstance(pool, oracledb.ConnectionPool)
        assert (pool.min, pool.max, pool.increment, pool.homogeneous) == (0, 4, 2, True)
        assert pool.getmode == oracledb.POOL_GETMODE_TIMEDWAIT and pool.wait_timeout == 2500
        assert pool.opened == 0
    finally:
        pool.close(force=True)


def test_pool_arguments_for_a_password_login_read_the_secret_files(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text(POOL_PASSWORD + "\n", encoding="utf-8")
    (tmp_path / "wpw").write_text(WALLET_PASSWORD, encoding="utf-8")
    tenant = _tenant(oracle=_oracle(user="OAM_RUNTIME", password_file=tmp_path / "pw",
                                    wallet_location=tmp_path,
                                    wallet_password_file=tmp_path / "wpw",
                                    config_dir=tmp_path))
    arguments = pool_arguments(tenant, _callback)
    assert arguments["user"] == "OAM_RUNTIME" and arguments["password"] == POOL_PASSWORD
    assert arguments["wallet_password"] == WALLET_PASSWORD
    assert arguments["config_dir"] == str(tmp_path) and "access_token" not in arguments
    inspect.signature(oracledb.create_pool).bind(**arguments)


def test_an_empty_secret_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("\n", encoding="utf-8")
    tenant = _tenant(oracle=_oracle(user="OAM_RUNTIME", password_file=tmp_path / "pw"))
    with pytest.raises(InvalidArgumentError, match="is empty"):
        pool_arguments(tenant, _callback)


def test_pool_arguments_need_an_oracle_tenant() -> None:
    tenant = TenantSettings(database_url=SecretStr("postgresql://x"), memory_store_id="d",
                            schema_owner="o", end_user_mode="local")
    with pytest.raises(ValueError, match="Oracle tenant"):
        pool_arguments(tenant, _callback)


# --- the runtime's end-user contexts ---------------------------------------------------------

@pytest.fixture()
def idp() -> Iterator[FakeIdentityProvider]:
    with FakeIdentityProvider() as provider:
        yield provider


class _OracleRuntime:
    """An Oracle tenant's runtime, its contexts, and the pool arguments its pools were built
    with (each pool with ``min=0``: no connection is opened)."""

    def __init__(self, idp: FakeIdentityProvider, transaction_timeout_seconds: float | None = None,
                 **overrides: Any) -> None:
        oracle = _oracle(access_token=_access_token(token_url=idp.token_url))
        self.built: list[dict[str, Any]] = []
        self.runtime = oracle_runtime("acme", _tenant(oracle=oracle, **overrides),
                                      pool_factory=self._factory,
                                      transaction_timeout_seconds=transaction_timeout_seconds)
        assert isinstance(self.runtime.contexts, OracleContexts)
        self.contexts = self.runtime.contexts

    def _factory(self, arguments: dict[str, Any]) -> oracledb.ConnectionPool:
        self.built.append(arguments)
        return create_oracle_pool({**arguments, "min": 0})


def _runtime(idp: FakeIdentityProvider, **overrides: Any) -> _OracleRuntime:
    return _OracleRuntime(idp, **overrides)


def test_local_mode_names_the_upper_cased_local_end_user(idp: FakeIdentityProvider) -> None:
    contexts = _runtime(idp).contexts
    assert contexts.end_user_identity(_principal("alice")) == ("ALICE", None)
    assert contexts.end_user_identity(_principal('"mixedCase"')) == ("mixedCase", None)
    assert contexts.data_roles(_principal("alice", groups=("staff",))) is None
    with pytest.raises(InvalidArgumentError):
        contexts.end_user_identity(_principal("two words"))


def test_token_mode_passes_the_callers_token_and_roles(idp: FakeIdentityProvider) -> None:
    contexts = _runtime(idp, end_user_mode="token",
                        group_roles={"staff": ("READER", "AUDIT")}).contexts
    principal = _principal("alice", groups=("staff", "other"), token="header.alice.sig")
    assert contexts.end_user_identity(principal) == "header.alice.sig"
    assert contexts.data_roles(principal) == ["AUDIT", "READER"]
    assert contexts.data_roles(_principal("bob")) is None


def test_contexts_carry_the_fetched_token_and_are_reused(idp: FakeIdentityProvider) -> None:
    runtime = _runtime(idp).runtime

    async def contexts() -> list[Any]:
        return [await runtime.context_for(_principal("alice")),
                await runtime.context_for(_principal("alice")),
                await runtime.context_for(_principal("bob"))]

    alice, again, bob = asyncio.run(contexts())
    assert isinstance(alice, oracledb.EndUserSecurityContext)
    assert again is alice and bob is not alice
    assert len(idp.requests) == 1  # one database access token for every caller
    assert isinstance(runtime.contexts, OracleContexts)
    runtime.contexts.tokens.invalidate(idp.issued[0])  # the database refused it: a new token
    renewed = asyncio.run(runtime.context_for(_principal("alice")))
    assert renewed is not alice and len(idp.requests) == 2


def test_a_rejected_gateway_secret_fails_the_request_not_the_caller(
        idp: FakeIdentityProvider) -> None:
    from oam_gateway.tenancy.db_access_token import DatabaseAccessTokenRejected

    oracle = _oracle(access_token=_access_token(token_url=idp.token_url,
                                                client_secret="wrong-secret"))
    runtime = oracle_runtime("acme", _tenant(oracle=oracle))
    with pytest.raises(DatabaseAccessTokenRejected) as caught:
        asyncio.run(runtime.context_for(_principal("alice")))
    assert caught.value.code == "database_unavailable"  # 503: the gateway's fault
    assert "wrong-secret" not in str(caught.value)


def test_the_pool_is_built_once_with_the_providers_callback(idp: FakeIdentityProvider) -> None:
    built = _runtime(idp)
    runtime = built.runtime
    runtime.open()
    runtime.open()
    [arguments] = built.built
    assert arguments["access_token"] == built.contexts.tokens.pool_callback
    assert arguments["access_token"](False) == idp.issued[0]  # what the driver would get
    # A refresh while the cached token's exp has not passed hands that token out again.
    assert arguments["access_token"](True) == idp.issued[0] and len(idp.requests) == 1
    runtime.close()


def test_readiness_is_false_when_the_database_cannot_be_reached(
        idp: FakeIdentityProvider) -> None:
    unreachable = oracle_runtime(
        "acme", _tenant(oracle=_oracle(dsn="tcps://127.0.0.1:9/nosuch",
                                       access_token=_access_token(token_url=idp.token_url)),
                        pool_min_size=0, pool_timeout_seconds=1))
    try:
        assert asyncio.run(unreachable.ready(5.0)) is False
    finally:
        unreachable.close()


def test_sdk_work_runs_in_a_worker_thread_inside_the_callers_context(
        idp: FakeIdentityProvider) -> None:
    import threading

    from oracleagentmemory.core.deepsec import OracleMemoryEndUserSecurityContext
    from oracleagentmemory.core.deepsec.context import active_security_context

    runtime = _runtime(idp).runtime

    def work() -> tuple[Any, str]:
        return active_security_context(), threading.current_thread().name

    async def request() -> tuple[Any, Any, str]:
        context = await runtime.context_for(_principal("alice"))
        async with OracleMemoryEndUserSecurityContext(context):
            seen, thread = await runtime.run(work)
        return context, seen, thread

    context, seen, thread = asyncio.run(request())
    assert seen is context  # the scope follows the work into the worker thread
    assert thread != threading.main_thread().name
    assert asyncio.run(runtime.run(active_security_context)) is None  # control: no scope


def test_a_request_reaches_the_oracle_tenant_through_the_gateway(
        idp: FakeIdentityProvider, tmp_path: Path) -> None:
    """The live gateway (uvicorn, real HTTP) with one Oracle tenant: the caller's request
    fetches the database access token, builds the caller's context and opens the store on the
    python-oracledb pool. No Oracle database answers here, so the request ends there with 503
    (the pool cannot connect): never a 500, and no secret in the answer. ``/readyz`` answers
    503."""
    import httpx
    from gateway_harness import AUDIENCE, ISSUER, bearer, live_server, make_issuer, token_for
    from oam_gateway.app import create_app

    issuer, jwks_file = make_issuer(tmp_path)
    settings = GatewaySettings(
        oracle=OracleDatabaseSettings(**_oracle(
            dsn="tcps://127.0.0.1:9/nosuch", access_token=_access_token(token_url=idp.token_url))),
        memory_store_id="demo", schema_owner="OAM_OWNER", end_user_mode="local",
        pool_min_size=0, pool_timeout_seconds=1, issuer=ISSUER, audience=AUDIENCE,
        jwks_file=jwks_file, embedder="none")
    with live_server(create_app(settings)) as url:
        ready = httpx.get(f"{url}/readyz", timeout=30)
        answer = httpx.get(f"{url}/v1/memories", headers=bearer(token_for(issuer, "alice")),
                           timeout=30)
    assert ready.status_code == 503
    assert answer.status_code == 503, answer.text
    assert answer.json()["type"].endswith("/database-unavailable"), answer.text
    assert len(idp.issued) >= 1  # the gateway asked the identity provider for its token
    for text in (ready.text, answer.text):
        assert CLIENT_SECRET not in text and idp.issued[0] not in text


def test_a_settings_file_names_an_oracle_tenant_beside_a_postgresql_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from oam_gateway.config.settings import load_settings

    (tmp_path / "client-secret").write_text(CLIENT_SECRET, encoding="utf-8")
    toml = tmp_path / "gateway.toml"
    toml.write_text(f"""
issuer = "https://idp.example"
audience = "oam"
jwks_file = "/jwks.json"
tenant_claim = "tenant"

[tenants.globex]
memory_store_id = "demo"
schema_owner = "oam_demo"
identity_provider = "idp"

[tenants.acme]
memory_store_id = "demo"
schema_owner = "OAM_OWNER"
end_user_mode = "token"

[tenants.acme.oracle]
dsn = "{DSN}"
user = "OAM_RUNTIME"

[tenants.acme.oracle.access_token]
provider = "entra_id"
token_url = "https://login.microsoftonline.com/t/oauth2/v2.0/token"
client_id = "{CLIENT_ID}"
client_secret_file = "{tmp_path / 'client-secret'}"
scope = "{SCOPE}"
""", encoding="utf-8")
    monkeypatch.setenv("OAM_GATEWAY_TENANTS__GLOBEX__DATABASE_URL", "postgresql://rt:pw@db/x")
    with pytest.raises(ValidationError, match="needs password or password_file"):
        load_settings(toml)  # the pool password is not in the file
    monkeypatch.setenv("OAM_GATEWAY_TENANTS__ACME__ORACLE__PASSWORD", POOL_PASSWORD)
    tenants = load_settings(toml).tenant_settings()
    assert tenants["globex"].engine == "postgresql" and tenants["acme"].engine == "oracle"
    oracle = tenants["acme"].oracle
    assert oracle is not None and oracle.password_value() == POOL_PASSWORD
    assert oracle.access_token.client_secret_value() == CLIENT_SECRET


def test_the_request_timeout_bounds_each_database_round_trip(idp: FakeIdentityProvider) -> None:
    from oracleagentmemory.engines.oracle.worker_pool import CallTimeout

    built = _runtime(idp, transaction_timeout_seconds=2.5)
    built.runtime.open()
    [arguments] = built.built
    callback = arguments["session_callback"]
    assert isinstance(callback, CallTimeout) and callback.milliseconds == 3500  # + 1 s grace
    pool = built.runtime.engine.pool  # the driver takes the callback
    try:
        assert pool.session_callback is callback
    finally:
        built.runtime.close()
    unbounded = _runtime(idp)
    unbounded.runtime.open()
    assert "session_callback" not in unbounded.built[0]  # no timeout: unbounded
    unbounded.runtime.close()


@pytest.mark.parametrize(("mode", "subject", "expected"), [
    ("local", "alice", "ALICE"),  # CREATE END USER alice stores ALICE
    ("local", '"mixedCase"', "mixedCase"),  # a quoted name keeps its case
    ("token", "alice@example.com", "alice@example.com"),  # the database takes the claim as is
])
def test_callers_are_named_as_the_oracle_database_names_them(
        tmp_path: Path, mode: str, subject: str, expected: str) -> None:
    """The principal's user_name is what rows' user_id must hold: on Oracle, the value of
    ORA_END_USER_CONTEXT.username for that caller (else the data grants' owner predicate would
    refuse every insert and hide every row)."""
    from gateway_harness import AUDIENCE, ISSUER, make_issuer, token_for
    from oam_gateway.auth.verifier import TokenVerifier

    issuer, jwks_file = make_issuer(tmp_path)
    settings = GatewaySettings(oracle=OracleDatabaseSettings(**_oracle()),
                               memory_store_id="demo", schema_owner="OAM_OWNER",
                               end_user_mode=mode, issuer=ISSUER, audience=AUDIENCE,  # type: ignore[arg-type]
                               jwks_file=jwks_file)
    principal = asyncio.run(TokenVerifier.from_settings(settings).verify(
        token_for(issuer, subject)))
    assert principal.user_name == expected and principal.subject == subject


def test_a_subject_that_names_no_oracle_end_user_is_refused(tmp_path: Path) -> None:
    from gateway_harness import AUDIENCE, ISSUER, make_issuer, token_for
    from oam_gateway.auth.verifier import TokenRejected, TokenVerifier

    issuer, jwks_file = make_issuer(tmp_path)
    settings = GatewaySettings(oracle=OracleDatabaseSettings(**_oracle()),
                               memory_store_id="demo", schema_owner="OAM_OWNER",
                               end_user_mode="local", issuer=ISSUER, audience=AUDIENCE,
                               jwks_file=jwks_file)
    verifier = TokenVerifier.from_settings(settings)
    with pytest.raises(TokenRejected, match="names no Oracle end user"):
        asyncio.run(verifier.verify(token_for(issuer, 'al"ice')))
    assert asyncio.run(verifier.verify(token_for(issuer, "alice"))).user_name == "ALICE"
