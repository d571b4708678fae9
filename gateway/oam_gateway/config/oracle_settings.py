"""An Oracle tenant's database settings: the DSN and TLS wallet, the pool account, and the
client-credentials grant that gets the gateway's database access token (issue 12, item 5).

A tenant names an Oracle AI Database 26ai with an ``[tenants.NAME.oracle]`` table (one-tenant
mode: ``[oracle]``) instead of a PostgreSQL ``database_url``. Deep Data Security needs TLS
(python-oracledb refuses an access token on a plain TCP connection, DPY-2034, and an end-user
security context too, DPY-2073), and a database access token issued by OCI IAM or Microsoft
Entra ID (there is no local token: Deep Data Security Guide, "Configure Python Applications").

Secrets follow the gateway's rule: a :class:`~pydantic.SecretStr` from the settings or the
environment, or a file named by the matching ``*_file`` key (a mounted secret), never both; never
shown by ``repr``, ``str`` or the logs.

Example (TOML)::

    [tenants.acme.oracle]
    dsn = "tcps://db.example.com:2484/memorypdb?ssl_server_dn_match=true"
    wallet_location = "/run/secrets/oracle-wallet"
    user = "OAM_RUNTIME"
    password_file = "/run/secrets/oam-runtime-password"

    [tenants.acme.oracle.access_token]
    provider = "entra_id"
    token_url = "https://login.microsoftonline.com/<tenant id>/oauth2/v2.0/token"
    client_id = "<gateway client id>"
    client_secret_file = "/run/secrets/gateway-client-secret"
    scope = "https://example.com/memorypdb/.default"
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from oracleagentmemory.errors import InvalidArgumentError
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

__all__ = ["ENTRA_DEFAULT_SCOPE_SUFFIX", "DatabaseAccessTokenSettings", "OracleDatabaseSettings",
           "TokenProviderName", "dsn_uses_tls"]

TokenProviderName = Literal["oci_iam", "entra_id"]

ENTRA_DEFAULT_SCOPE_SUFFIX = "/.default"
"""Entra ID's client-credentials grant takes one scope, the resource's ``<resource>/.default``
(Microsoft identity platform, "OAuth 2.0 client credentials flow")."""

_TNS_ALIAS = re.compile(r"[A-Za-z][\w.$#-]*")


def _read_secret(value: SecretStr | None, file: Path | None, argument: str) -> str | None:
    """The secret given inline or in ``file`` (stripped); ``None`` when neither is given."""
    if value is not None:
        return value.get_secret_value()
    if file is None:
        return None
    text = file.read_text(encoding="utf-8").strip()
    if not text:
        raise InvalidArgumentError(f"the secret file {file} ({argument}) is empty",
                                   argument=argument)
    return text


def _secure_token_url(url: str) -> bool:
    """Whether ``url`` is ``https`` (``http`` to a loopback address only: local tests)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return bool(parts.hostname)
    return parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1")


def dsn_uses_tls(dsn: str) -> bool | None:
    """Whether ``dsn`` asks for TLS: ``True``/``False`` for an Easy Connect string or a connect
    descriptor, ``None`` for a ``tnsnames.ora`` alias (its entry decides)."""
    text = dsn.strip()
    if text.startswith("("):
        return "(PROTOCOL=TCPS)" in re.sub(r"\s+", "", text).upper()
    if _TNS_ALIAS.fullmatch(text):
        return None
    return text.lower().startswith("tcps://")


class DatabaseAccessTokenSettings(BaseModel):
    """The OAuth 2.0 client-credentials grant of the gateway's database access token (the
    ``access_token`` table of an Oracle tenant)."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    provider: TokenProviderName
    """The identity provider: ``oci_iam`` (an OCI IAM identity domain) or ``entra_id``
    (Microsoft Entra ID)."""
    token_url: str = Field(min_length=1)
    """The provider's token endpoint: ``https://<domain>.identity.oraclecloud.com/oauth2/v1/token``
    (OCI IAM) or ``https://login.microsoftonline.com/<tenant id>/oauth2/v2.0/token`` (Entra ID);
    ``https`` (``http`` to loopback only)."""
    client_id: str = Field(min_length=1)
    """The gateway's client id, registered with the provider as a confidential application."""
    client_secret: SecretStr | None = None
    """The gateway's client secret (or use :attr:`client_secret_file`)."""
    client_secret_file: Path | None = None
    """A file holding the client secret (a mounted secret), read when the gateway starts and
    stripped of surrounding white space."""
    scope: str = Field(min_length=1)
    """The scope asked for: on Entra ID the database resource's ``<application id URI>/.default``;
    on OCI IAM the database application's primary audience followed by its scope (as the
    identity domain shows it, e.g. ``OracleDBDB_ACCESS_SCOPE``)."""
    refresh_margin_seconds: float = Field(default=60.0, ge=0, le=3600)
    """A token is fetched again this long before it expires."""
    timeout_seconds: float = Field(default=10.0, gt=0, le=120)
    """How long one token request may take."""

    @model_validator(mode="after")
    def _consistent(self) -> DatabaseAccessTokenSettings:
        if (self.client_secret is None) == (self.client_secret_file is None):
            raise ValueError("give client_secret or client_secret_file (one of them) for the "
                             "database access token")
        if not _secure_token_url(self.token_url):
            raise ValueError("token_url must be https (http only to a loopback address)")
        if self.provider == "entra_id" and (
                len(self.scope.split()) != 1
                or not self.scope.endswith(ENTRA_DEFAULT_SCOPE_SUFFIX)
                or self.scope == ENTRA_DEFAULT_SCOPE_SUFFIX):
            raise ValueError("an entra_id scope for client credentials is one "
                             "'<resource>/.default' scope (e.g. "
                             "'https://example.com/memorypdb/.default')")
        return self

    def client_secret_value(self) -> str:
        """The client secret, from the setting or its file."""
        secret = _read_secret(self.client_secret, self.client_secret_file, "client_secret")
        assert secret is not None  # the validator requires one of them
        return secret


class OracleDatabaseSettings(BaseModel):
    """An Oracle AI Database 26ai tenant's database (the ``oracle`` table of a tenant)."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    dsn: str = Field(min_length=1)
    """An Easy Connect string (``tcps://host:port/service``), a connect descriptor, or a
    ``tnsnames.ora`` alias (with :attr:`config_dir`). It must use TLS: Deep Data Security
    attaches end-user contexts over TCPS only."""
    config_dir: Path | None = None
    """The directory of ``tnsnames.ora`` (for an alias DSN; an unzipped cloud wallet)."""
    wallet_location: Path | None = None
    """The directory of the client's PEM wallet (``ewallet.pem``) for TLS."""
    wallet_password: SecretStr | None = None
    """The PEM wallet's password when it is encrypted (or use :attr:`wallet_password_file`)."""
    wallet_password_file: Path | None = None
    """A file holding the wallet password (a mounted secret)."""
    user: str | None = Field(default=None, min_length=1)
    """The runtime pool account when it logs in with a password (``CREATE SESSION`` and
    ``CREATE END USER SECURITY CONTEXT`` only). Unset: the pool logs in with the database
    access token (a user ``IDENTIFIED GLOBALLY`` as the gateway's client)."""
    password: SecretStr | None = None
    """The pool account's password (or use :attr:`password_file`); only with :attr:`user`."""
    password_file: Path | None = None
    """A file holding the pool account's password (a mounted secret)."""
    pool_increment: int = Field(default=1, ge=1, le=64)
    """How many connections the pool opens at a time when it grows."""
    access_token: DatabaseAccessTokenSettings
    """The ``access_token`` table: how the gateway gets its database access token (required:
    Deep Data Security takes no end-user context without one)."""

    @model_validator(mode="after")
    def _consistent(self) -> OracleDatabaseSettings:
        if self.wallet_password is not None and self.wallet_password_file is not None:
            raise ValueError("give wallet_password or wallet_password_file, not both")
        if (self.wallet_password is not None or self.wallet_password_file is not None) and (
                self.wallet_location is None):
            raise ValueError("a wallet password needs wallet_location (the wallet it opens)")
        if self.password is not None and self.password_file is not None:
            raise ValueError("give password or password_file, not both")
        has_password = self.password is not None or self.password_file is not None
        if self.user is not None and not has_password:
            raise ValueError("user (the pool account) needs password or password_file")
        if self.user is None and has_password:
            raise ValueError("a pool password needs user (without user the pool logs in with "
                             "the database access token)")
        if dsn_uses_tls(self.dsn) is False:
            raise ValueError("the Oracle dsn must use TLS: an Easy Connect string starting "
                             "with tcps://, or a descriptor with (PROTOCOL=TCPS); Deep Data "
                             "Security attaches end-user contexts over TLS only")
        if dsn_uses_tls(self.dsn) is None and self.config_dir is None:
            raise ValueError(f"the dsn {self.dsn!r} is a tnsnames.ora alias: give config_dir "
                             "(the directory of tnsnames.ora)")
        return self

    def wallet_password_value(self) -> str | None:
        """The wallet password, from the setting or its file (``None`` when not given)."""
        return _read_secret(self.wallet_password, self.wallet_password_file, "wallet_password")

    def password_value(self) -> str | None:
        """The pool account's password, from the setting or its file (``None``: token login)."""
        return _read_secret(self.password, self.password_file, "password")
