"""The PostgreSQL end-user security context: a signed, short-lived assertion of who the end user is.

The runtime application signs the assertion with its application key (HMAC-SHA-256); the
database verifies it in ``oam_sec.claims()`` against the stored key and the login that uses it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oracleagentmemory.engines.interfaces import EndUserContext, IdentityProviderUser
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

TOKEN_PREFIX = "oamapp1"
DEFAULT_LIFETIME_SECONDS = 60
_APP_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
_PROVIDER = re.compile(r"[a-z][a-z0-9_]{0,30}")
_JWT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
MAX_TOKEN_LENGTH = 16384
"""The longest identity-provider token a context carries."""


@dataclass(frozen=True)
class ApplicationCredential:
    """An application identity: its name and its secret key."""

    app_name: str
    key: bytes = field(repr=False)

    @classmethod
    def parse(cls, token: object) -> ApplicationCredential:
        """Parse a database access token ``oamapp1.<app_name>.<hex key>`` (from ``oam-admin``)."""
        if not isinstance(token, str) or not token:
            raise InvalidArgumentError("database_access_token must be a non-empty str")
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != TOKEN_PREFIX or not _APP_NAME.fullmatch(parts[1]):
            raise InvalidArgumentError(
                "database_access_token is not an application token issued by "
                "`oam-admin application create` (expected oamapp1.<app>.<key>)"
            )
        try:
            key = bytes.fromhex(parts[2])
        except ValueError:
            raise InvalidArgumentError("database_access_token has a malformed key") from None
        if len(key) < 32:
            raise InvalidArgumentError("database_access_token has a key shorter than 32 bytes")
        return cls(parts[1], key)

    def token(self) -> str:
        """The token form, printed once when the application is created."""
        return f"{TOKEN_PREFIX}.{self.app_name}.{self.key.hex()}"


def padded_keys(key: bytes) -> tuple[bytes, bytes]:
    """``(key XOR ipad, key XOR opad)`` for HMAC-SHA-256, as the database stores them."""
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    block = key.ljust(64, b"\0")
    return bytes(b ^ 0x36 for b in block), bytes(b ^ 0x5C for b in block)


@dataclass(frozen=True)
class PostgresEndUserSecurityContext(EndUserContext):
    """Who the end user is, for which application, with which groups and requested data roles."""

    credential: ApplicationCredential = field(repr=False)
    username: str
    """The user name rows carry (``"<provider>:<name>"`` for identity-provider users); empty
    for a token until the database has verified it (see :meth:`verified_username`)."""
    kind: str
    groups: tuple[str, ...] = ()
    data_roles: tuple[str, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=dict)
    lifetime_seconds: int = DEFAULT_LIFETIME_SECONDS
    provider: str | None = None
    token: str | None = field(default=None, repr=False)
    _signed: list[tuple[str, float]] = field(default_factory=list, init=False, repr=False,
                                             compare=False)
    _verified: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def verified_username(self) -> str | None:
        """The user name the database verified (for a token: ``None`` until first used)."""
        if self.username:
            return self.username
        return self._verified[0] if self._verified else None

    def record_verified(self, username: str) -> bool:
        """Record what the database verified; ``False`` when it is not this context's user."""
        expected = self.verified_username()
        if expected is None:
            self._verified[:] = [username]
            return True
        return username == expected

    def assertion(self, now: float | None = None) -> str:
        """A signed assertion ``<hex(claims)>.<hex(hmac)>`` with at least half its lifetime left.

        The same assertion is reused until half its lifetime has passed (signing costs more than
        the database work it saves: the database verifies each assertion once per session). With
        ``now`` given, a fresh one is signed as of that time.
        """
        if now is None:
            current = time.time()
            if self._signed and current < self._signed[0][1]:
                return self._signed[0][0]
            signed = self._sign(current)
            self._signed[:] = [(signed, current + self.lifetime_seconds / 2)]
            return signed
        return self._sign(now)

    def _sign(self, now: float) -> str:
        claims: dict[str, Any] = {
            "app": self.credential.app_name,
            "u": self.username.split(":", 1)[-1] if self.kind == "idp" else self.username,
            "k": self.kind,
            "g": list(self.groups),
            "r": list(self.data_roles),
            "a": dict(self.attributes),
            "exp": now + self.lifetime_seconds,
            "n": secrets.token_hex(8),
        }
        if self.provider is not None:
            claims["p"] = self.provider
        if self.token is not None:
            claims["t"] = self.token
        body = json.dumps(claims, separators=(",", ":"), sort_keys=True).encode("utf-8").hex()
        signature = hmac.new(self.credential.key, body.encode("ascii"), hashlib.sha256).hexdigest()
        return f"{body}.{signature}"


def _names(value: object, argument: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidArgumentTypeError(f"{argument} must be a list of str")
    out = []
    for n, item in enumerate(value):
        if not isinstance(item, str) or not item or len(item) > 256:
            raise InvalidArgumentError(
                f"{argument}[{n}] must be a non-empty str of at most 256 characters")
        out.append(item)
    return tuple(out)


def create_end_user_security_context(
    database_access_token: str,
    end_user_identity: tuple[str, str | None] | IdentityProviderUser | str,
    data_roles: Sequence[str] | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> PostgresEndUserSecurityContext:
    """Create an end-user security context (the call shape of ``oracledb``'s function).

    ``database_access_token`` is the application token printed by ``oam-admin
    application create``. ``end_user_identity`` is one of:

    - ``(name, key)``: a local end user created with ``oam-admin end-user create`` (``key`` is
      a lookup key and may be ``None``); rows carry ``name``;
    - :class:`IdentityProviderUser`: a user the application authenticated with a registered
      identity provider; rows carry ``"<provider>:<name>"``;
    - a ``str``: the identity provider's own token (a JWT signed with RS256), which the database
      verifies itself (issuer, audience, lifetime, signature) and takes the user name and groups
      from; rows carry ``"<provider>:<user claim>"``. The only form an application in token mode
      may use.
    """
    credential = ApplicationCredential.parse(database_access_token)
    provider: str | None = None
    token: str | None = None
    groups: tuple[str, ...] = ()
    if isinstance(end_user_identity, str):
        if not _JWT.fullmatch(end_user_identity) or len(end_user_identity) > MAX_TOKEN_LENGTH:
            raise InvalidArgumentError(
                "end_user_identity token must be a compact JWT (three base64url parts) of at "
                f"most {MAX_TOKEN_LENGTH} characters"
            )
        username, kind, token = "", "token", end_user_identity
    elif isinstance(end_user_identity, IdentityProviderUser):
        provider = end_user_identity.provider
        if not isinstance(provider, str) or not _PROVIDER.fullmatch(provider):
            raise InvalidArgumentError(
                "end_user_identity.provider must name the identity provider registered with "
                "`oam-admin idp add` (lower-case letters, digits, underscores), got "
                f"{provider!r}"
            )
        name = end_user_identity.username
        if not isinstance(name, str) or not name.strip() or len(name) > 128:
            raise InvalidArgumentError(
                "end_user_identity name must be a non-empty str of at most 128 characters")
        username, kind = f"{provider}:{name}", "idp"
        groups = _names(list(end_user_identity.groups), "end_user_identity.groups")
    elif isinstance(end_user_identity, (tuple, list)) and len(end_user_identity) == 2:
        username, kind = end_user_identity[0], "local"
        if end_user_identity[1] is not None and not isinstance(end_user_identity[1], str):
            raise InvalidArgumentTypeError("end_user_identity key must be a str or None")
        if not isinstance(username, str) or not username.strip() or len(username) > 128:
            raise InvalidArgumentError(
                "end_user_identity name must be a non-empty str of at most 128 characters")
        if ":" in username:
            raise InvalidArgumentError(
                "a local end user's name never contains ':' (identity-provider "
                             "users are '<provider>:<name>')")
    else:
        raise InvalidArgumentTypeError(
            "end_user_identity must be a (name, key) tuple for a local end user, an "
            "IdentityProviderUser or an identity provider's token (str)"
        )
    if attributes is not None and not isinstance(attributes, Mapping):
        raise InvalidArgumentTypeError("attributes must be a dict or None")
    return PostgresEndUserSecurityContext(
        credential=credential,
        username=username,
        kind=kind,
        groups=groups,
        data_roles=_names(data_roles, "data_roles"),
        attributes=dict(attributes or {}),
        provider=provider,
        token=token,
    )
