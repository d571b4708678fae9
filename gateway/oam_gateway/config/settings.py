"""The gateway's settings: the token issuer, the tenants (database, store, app token), limits.

One-tenant mode gives the tenant's fields at the top level (``database_url``,
``memory_store_id``, ...) and needs no tenant claim in the tokens. Several tenants are
``[tenants.NAME]`` tables (:class:`~oam_gateway.config.tenant_settings.TenantSettings`), and
``tenant_claim`` names the token claim that picks one.

Read from the environment (prefix ``OAM_GATEWAY_``, e.g. ``OAM_GATEWAY_ISSUER``), from a TOML
file with :func:`load_settings` (the environment overrides the file), or given as keyword
arguments. Secrets (the database URL, which may carry a password, and the application
token) are :class:`~pydantic.SecretStr`: they never appear in ``repr``, ``str`` or logs. The
application token comes from ``OAM_GATEWAY_APP_TOKEN`` or from the file named by
``OAM_GATEWAY_APP_TOKEN_FILE``, never both.

Example::

    settings = GatewaySettings(database_url="postgresql://...", memory_store_id="demo",
                               schema_owner="oam_demo", issuer="https://idp.example",
                               audience="oam", jwks_file="jwks.json")
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from oracleagentmemory.errors import InvalidArgumentError
from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from oam_gateway.config.limits import LimitSettings
from oam_gateway.config.oracle_settings import OracleDatabaseSettings
from oam_gateway.config.tenant_settings import (
    EmbedderChoice,
    EndUserMode,
    SearchStrategyName,
    TenantSettings,
)
from oam_gateway.observability.telemetry import TelemetrySettings

__all__ = ["ASYMMETRIC_ALGORITHMS", "ENV_PREFIX", "Algorithm", "GatewaySettings", "load_settings"]

Algorithm = Literal["RS256", "ES256", "EdDSA", "Ed25519", "HS256"]
"""The signature algorithms the gateway can accept (``none`` is never one of them)."""

ASYMMETRIC_ALGORITHMS: tuple[Algorithm, ...] = ("RS256", "ES256", "EdDSA", "Ed25519")
"""The default allow-list: RS256, ES256 and Ed25519 (``EdDSA`` is its pre-RFC 9864 name)."""

ENV_PREFIX = "OAM_GATEWAY_"


class GatewaySettings(BaseSettings):
    """Settings of the gateway: one tenant at the top level, or several in :attr:`tenants`."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="__",
                                      extra="forbid", frozen=True, hide_input_in_errors=True)

    database_url: SecretStr | None = None
    """One-tenant mode: connection URL of the tenant's database as its runtime login (secret:
    it may hold a password)."""
    oracle: OracleDatabaseSettings | None = None
    """One-tenant mode: the ``[oracle]`` table naming the tenant's Oracle AI Database (instead
    of :attr:`database_url`)."""
    memory_store_id: str | None = Field(default=None, min_length=1)
    schema_owner: str | None = Field(default=None, min_length=1)
    app_token: SecretStr | None = None
    """The application's secret that opens end-user contexts (or use :attr:`app_token_file`)."""
    app_token_file: Path | None = None
    tenant: str = Field(default="default", min_length=1)
    """The tenant's name (one-tenant mode: every principal belongs to it)."""
    end_user_mode: EndUserMode | None = None
    """One-tenant mode: how callers become end users (default ``vouched`` when
    :attr:`identity_provider` is set, else ``local``)."""
    group_roles: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    search_strategy: SearchStrategyName | None = None
    embedder: EmbedderChoice = "wordllama"
    embedding_dimension: int = Field(default=256, ge=1, le=65_535)
    pool_min_size: int = Field(default=1, ge=0, le=256)
    pool_max_size: int = Field(default=8, ge=1, le=256)
    pool_timeout_seconds: float = Field(default=5.0, gt=0, le=120)
    console_client_id: str | None = Field(default=None, min_length=1)
    """One-tenant mode: the console's OAuth client at the identity provider (``None``: no
    console)."""
    console_client_secret: SecretStr | None = None
    """One-tenant mode: the console client's secret, when it is confidential."""

    tenants: dict[str, TenantSettings] = Field(default_factory=dict)
    """Several tenants by name (then the one-tenant fields above stay unset)."""
    tenant_claim: str | None = None
    """The token claim naming the caller's tenant; required with several tenants."""

    issuer: str = Field(min_length=1)
    """The ``iss`` claim the tokens must carry, exactly."""
    audience: str = Field(min_length=1)
    """The ``aud`` value the tokens must carry."""
    jwks_file: Path | None = None
    jwks_url: str | None = None
    """Fetched on first use and on an unknown ``kid``; ``https`` (``http`` to loopback only)."""
    jwks_refetch_seconds: float = Field(default=30.0, ge=0)
    """The least time between two fetches of :attr:`jwks_url`."""
    algorithms: tuple[Algorithm, ...] = ASYMMETRIC_ALGORITHMS
    allow_hs256: bool = False
    """HS256 (a shared secret as an ``oct`` key in the JWKS) is accepted only when this is set."""
    leeway_seconds: int = Field(default=30, ge=0, le=300)
    """Clock skew tolerated on ``exp``, ``nbf`` and ``iat``."""
    max_token_bytes: int = Field(default=8192, ge=256)
    token_cache_size: int = Field(default=10_000, ge=0)
    """How many verified tokens are remembered until they expire (0: verify every request)."""
    required_token_type: str | None = None
    """When set (``"at+jwt"``, RFC 9068), the token's ``typ`` header must name it: ID tokens and
    other JWTs of the issuer are refused as access tokens. ``None`` accepts any ``typ``."""

    identity_provider: str | None = None
    """The provider's namespace: user names become ``<identity_provider>:<user>`` when set."""
    user_claim: str = Field(default="sub", min_length=1)
    groups_claim: str = Field(default="groups", min_length=1)

    scope_claim: str = Field(default="scope", min_length=1)
    """The claim holding the token's scopes (a space-separated string or a list)."""
    require_scopes: bool = True
    """Reads need ``memory:read`` and writes ``memory:write``; off, any valid token may do both."""

    console_cookie_secret: SecretStr | None = Field(default=None, min_length=32)
    """The console's key (at least 32 characters, e.g. ``openssl rand -base64 32``; or use
    :attr:`console_cookie_secret_file`): it signs the sign-in cookie and seals the sessions a
    shared store keeps, and must be the same in every replica and worker, or a sign-in
    started on one fails at another's callback. Unset, each process makes a random key at
    start-up (one process only; the gateway logs a WARNING when it runs several workers or
    shares its limits through a store without one)."""
    console_cookie_secret_file: Path | None = None
    """A file holding :attr:`console_cookie_secret` (a mounted secret), read when the gateway
    starts and stripped of surrounding white space."""
    console_session_store_uri: str = "memory://"
    """Where the console keeps its sessions and the sign-ins already used: ``memory://``
    (this process: a person signed in on one replica is signed out on another) or a shared
    Redis, ``redis://host:6379/0`` or ``rediss://...`` (needs ``coredis``, the project's
    ``redis`` extra, and :attr:`console_cookie_secret`), usually the one
    ``limits.rate_limit_storage_uri`` names. Each session is a key that expires with it
    (eight hours at most) and sign-out deletes; its access token is sealed (AES-256-GCM) with
    a key derived from the browser's session id, which the store never sees. While the store
    does not answer the console answers 503 (the API is not affected)."""
    console_session_store_timeout_seconds: float = Field(default=1.0, gt=0, le=10)
    """How long a console request waits for the shared session store (to connect, or to
    answer) before it answers 503."""

    readiness_timeout_seconds: float = Field(default=2.0, gt=0, le=30)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)

    @field_validator("algorithms")
    @classmethod
    def _no_duplicates(cls, value: tuple[Algorithm, ...]) -> tuple[Algorithm, ...]:
        if not value:
            raise ValueError("algorithms must list at least one algorithm")
        return tuple(dict.fromkeys(value))

    @model_validator(mode="after")
    def _consistent(self) -> GatewaySettings:
        if "HS256" in self.algorithms and not self.allow_hs256:
            raise ValueError("HS256 is listed in algorithms but allow_hs256 is not set")
        if self.app_token is not None and self.app_token_file is not None:
            raise ValueError("give app_token or app_token_file, not both")
        self._check_console_store()
        one_tenant = [name for name in _ONE_TENANT_FIELDS if name in self.model_fields_set]
        if self.tenants:
            if one_tenant:
                raise ValueError(f"{one_tenant[0]} belongs in a [tenants.NAME] table when "
                                 "tenants are listed")
            if len(self.tenants) > 1 and self.tenant_claim is None:
                raise ValueError("several tenants need tenant_claim (the claim naming one)")
        else:
            missing = [name for name in ("database_url", "memory_store_id", "schema_owner")
                       if getattr(self, name) is None
                       and not (name == "database_url" and self.oracle is not None)]
            if missing:
                raise ValueError(f"{missing[0]} is required (or list [tenants.NAME] tables)")
            self.tenant_settings()  # the one tenant's own rules
        if (self.jwks_file is None) == (self.jwks_url is None):
            raise ValueError("give jwks_file or jwks_url (one of them) for the issuer's keys")
        if self.jwks_url is not None and not _secure_url(self.jwks_url):
            raise ValueError("jwks_url must be https (http only to a loopback address)")
        return self

    def _check_console_store(self) -> None:
        if self.console_cookie_secret is not None and self.console_cookie_secret_file is not None:
            raise ValueError("give console_cookie_secret or console_cookie_secret_file, not both")
        scheme = self.console_session_store_uri.split("://", 1)[0]
        if scheme not in ("memory", "redis", "rediss") or "://" not in \
                self.console_session_store_uri:
            raise ValueError("console_session_store_uri must be memory:// or a redis:// or "
                             "rediss:// URL")
        if scheme != "memory" and (self.console_cookie_secret is None
                                   and self.console_cookie_secret_file is None):
            raise ValueError("a shared console_session_store_uri needs console_cookie_secret "
                             "(or console_cookie_secret_file), the same in every replica")

    def console_key(self) -> bytes | None:
        """The console's key (:attr:`console_cookie_secret` or its file), or ``None`` when
        neither is set."""
        if self.console_cookie_secret is not None:
            return self.console_cookie_secret.get_secret_value().encode()
        if self.console_cookie_secret_file is None:
            return None
        text = self.console_cookie_secret_file.read_text(encoding="utf-8").strip()
        if len(text) < 32:
            raise InvalidArgumentError(f"the console key file {self.console_cookie_secret_file}"
                                       " holds fewer than 32 characters",
                                       argument="console_cookie_secret_file")
        return text.encode()

    @property
    def effective_algorithms(self) -> tuple[Algorithm, ...]:
        """The allow-list the verifier uses: :attr:`algorithms`, plus HS256 when enabled."""
        if self.allow_hs256 and "HS256" not in self.algorithms:
            return (*self.algorithms, "HS256")
        return self.algorithms

    def tenant_settings(self) -> dict[str, TenantSettings]:
        """Every tenant by name: :attr:`tenants`, or the one tenant of the top-level fields."""
        if self.tenants:
            return dict(self.tenants)
        assert self.memory_store_id is not None and self.schema_owner is not None
        mode = self.end_user_mode or ("vouched" if self.identity_provider else "local")
        return {self.tenant: TenantSettings(
            database_url=self.database_url, oracle=self.oracle,
            memory_store_id=self.memory_store_id, schema_owner=self.schema_owner,
            app_token=self.app_token,
            app_token_file=self.app_token_file, identity_provider=self.identity_provider,
            end_user_mode=mode, group_roles=self.group_roles,
            search_strategy=self.search_strategy, embedder=self.embedder,
            embedding_dimension=self.embedding_dimension,
            pool_min_size=self.pool_min_size, pool_max_size=self.pool_max_size,
            pool_timeout_seconds=self.pool_timeout_seconds,
            console_client_id=self.console_client_id,
            console_client_secret=self.console_client_secret)}

    def application_token(self) -> str | None:
        """One-tenant mode: the application token, from the setting or its file (stripped)."""
        [tenant] = self.tenant_settings().values()
        return tenant.application_token()


_ONE_TENANT_FIELDS = ("database_url", "oracle", "memory_store_id", "schema_owner", "app_token",
                      "app_token_file", "end_user_mode", "group_roles", "search_strategy",
                      "embedder", "embedding_dimension", "pool_min_size", "pool_max_size",
                      "pool_timeout_seconds", "identity_provider", "console_client_id",
                      "console_client_secret")


def _secure_url(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme == "https":
        return bool(parts.hostname)
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")


def load_settings(toml_file: Path | None = None) -> GatewaySettings:
    """The settings from ``toml_file`` (top-level keys named as the fields), overridden by the
    environment; from the environment alone when no file is given."""
    if toml_file is None:
        return GatewaySettings()  # type: ignore[call-arg]  # the environment supplies them
    if not toml_file.is_file():
        raise InvalidArgumentError(f"the settings file {toml_file} does not exist",
                                   argument="toml_file")

    class _FromFile(GatewaySettings):
        @classmethod
        def settings_customise_sources(
                cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                env_settings: PydanticBaseSettingsSource,
                dotenv_settings: PydanticBaseSettingsSource,
                file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, env_settings,
                    TomlConfigSettingsSource(settings_cls, toml_file=toml_file))

    loaded = _FromFile()  # type: ignore[call-arg]
    return GatewaySettings.model_validate({name: getattr(loaded, name)  # only the given ones
                                           for name in loaded.model_fields_set})
