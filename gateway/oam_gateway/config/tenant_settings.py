"""One tenant's settings: its database, store, application secret and end-user identities.

A tenant is one protected memory store served through one runtime login: the gateway keeps a
connection pool and a client per tenant. How the caller becomes the database's end user is the
tenant's ``end_user_mode``:

- ``"vouched"`` (default): the application vouches for the verified caller as a user of the
  identity provider ``identity_provider`` (rows carry ``<identity_provider>:<subject>``);
- ``"local"``: the caller's subject names a local end user the administrator created;
- ``"token"``: the gateway forwards the caller's own bearer token, and the database verifies it
  again (issuer, audience, lifetime, signature) before it takes the user from it.

The database is PostgreSQL (``database_url``) or Oracle AI Database 26ai (an ``oracle`` table,
:class:`~oam_gateway.config.oracle_settings.OracleDatabaseSettings`): exactly one of them. An Oracle
tenant passes its callers as ``"token"`` (the caller's own token) or ``"local"`` (a local end
user named by the caller's subject); ``"vouched"`` and the application token are PostgreSQL's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from oracleagentmemory.errors import InvalidArgumentError
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from oam_gateway.config.oracle_settings import OracleDatabaseSettings

__all__ = ["EmbedderChoice", "EndUserMode", "SearchStrategyName", "TenantSettings"]

EndUserMode = Literal["vouched", "local", "token"]
EmbedderChoice = Literal["wordllama", "hashing", "none"]
SearchStrategyName = Literal["vector", "keyword", "hybrid"]


class TenantSettings(BaseModel):
    """Settings of one tenant (a ``[tenants.NAME]`` table of the settings file)."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    database_url: SecretStr | None = None
    """Connection URL of the tenant's PostgreSQL database as its runtime login (secret: it may
    hold a password); or give :attr:`oracle`."""
    oracle: OracleDatabaseSettings | None = None
    """The ``oracle`` table: the tenant's Oracle AI Database (instead of :attr:`database_url`)."""
    memory_store_id: str = Field(min_length=1)
    schema_owner: str = Field(min_length=1)
    app_token: SecretStr | None = None
    """The application's secret that opens end-user contexts (or use :attr:`app_token_file`)."""
    app_token_file: Path | None = None
    identity_provider: str | None = None
    """The identity provider's name in the database (the namespace of its users' rows)."""
    end_user_mode: EndUserMode = "vouched"
    group_roles: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Claims to roles: a caller in group ``G`` also asks for the data roles ``group_roles[G]``
    (the database grants only roles the end user or their groups hold)."""
    search_strategy: SearchStrategyName | None = None
    """The store's search strategy (``None``: the one the store was created with)."""
    embedder: EmbedderChoice = "wordllama"
    """``wordllama`` (the local model), ``hashing`` (tests and demos) or ``none`` (keyword)."""
    embedding_dimension: int = Field(default=256, ge=1, le=65_535)
    """The embedder's dimension: the store's ``vector_dim`` (wordllama: 64, 128 or 256)."""
    pool_min_size: int = Field(default=1, ge=0, le=256)
    pool_max_size: int = Field(default=8, ge=1, le=256)
    pool_timeout_seconds: float = Field(default=5.0, gt=0, le=120)
    """How long a request waits for a pooled connection before it answers 503, queueing behind
    other requests included (on Oracle, the pool's own wait after the queue takes up to as long
    again)."""
    console_client_id: str | None = Field(default=None, min_length=1)
    """The console's OAuth client at the identity provider (``/console`` signs this tenant's
    people in with it); ``None``: no console for this tenant."""
    console_client_secret: SecretStr | None = None
    """The console client's secret when the provider registered it as confidential (``None``:
    a public client, PKCE alone)."""

    @model_validator(mode="after")
    def _consistent(self) -> TenantSettings:
        if self.app_token is not None and self.app_token_file is not None:
            raise ValueError("give app_token or app_token_file, not both")
        if (self.database_url is None) == (self.oracle is None):
            raise ValueError("give database_url (PostgreSQL) or an oracle table (Oracle AI "
                             "Database), exactly one of them")
        if self.oracle is not None:
            _check_oracle_tenant(self)
        if self.end_user_mode == "vouched" and self.identity_provider is None:
            raise ValueError("end_user_mode 'vouched' needs identity_provider (the provider "
                             "whose users the application vouches for)")
        if self.pool_min_size > self.pool_max_size:
            raise ValueError("pool_min_size must not exceed pool_max_size")
        if self.console_client_secret is not None and self.console_client_id is None:
            raise ValueError("console_client_secret needs console_client_id")
        return self

    @property
    def engine(self) -> str:
        """``"oracle"`` or ``"postgresql"``: the database the tenant names."""
        return "oracle" if self.oracle is not None else "postgresql"

    def application_token(self) -> str | None:
        """The application token, read from the setting or its file (stripped)."""
        if self.app_token is not None:
            return self.app_token.get_secret_value()
        if self.app_token_file is None:
            return None
        text = self.app_token_file.read_text(encoding="utf-8").strip()
        if not text:
            raise InvalidArgumentError(f"the application token file {self.app_token_file} "
                                       "is empty", argument="app_token_file")
        return text


def _check_oracle_tenant(tenant: TenantSettings) -> None:
    if tenant.end_user_mode == "vouched":
        raise ValueError("end_user_mode 'vouched' is PostgreSQL's: an Oracle tenant needs "
                         "end_user_mode 'token' (the caller's own token) or 'local' (a local "
                         "end user named by the caller's subject)")
    if tenant.identity_provider is not None:
        raise ValueError("identity_provider namespaces PostgreSQL's user names; on Oracle the "
                         "database names the end user (the token's sub or upn, or the local "
                         "end user): leave identity_provider unset")
    if tenant.app_token is not None or tenant.app_token_file is not None:
        raise ValueError("an Oracle tenant takes no app_token: its database access token comes "
                         "from oracle.access_token")
    if tenant.end_user_mode == "local" and tenant.group_roles:
        raise ValueError("group_roles do not apply to local end users on Oracle (their data "
                         "roles are granted in the database); leave group_roles empty")
