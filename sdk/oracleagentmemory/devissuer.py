"""A local development identity provider: an RSA key in a directory, RS256 tokens, its JWKS.

For development and tests only (no network, no users of its own): it stands in for the identity
provider whose tokens the database verifies in token mode. ``oam-admin dev-issuer`` drives it.

Example::

    issuer = DevIssuer.create("./dev-issuer", "https://issuer.example.test")
    token = issuer.token("dana", audience="oam", groups=["support"])
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joserfc import jwt
from joserfc.jwk import RSAKey

from oracleagentmemory.errors import InvalidArgumentError

_KEY_FILE = "signing-key.json"
_CONFIG_FILE = "issuer.json"


@dataclass(frozen=True)
class DevIssuer:
    """An issuer identifier and its private signing key."""

    issuer: str
    key: RSAKey

    @classmethod
    def create(cls, directory: str | Path, issuer: str, key_bits: int = 2048) -> DevIssuer:
        """Make a new key in ``directory`` (private key file mode 0600); refuses to overwrite."""
        if not issuer:
            raise InvalidArgumentError("issuer must be a non-empty str")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        if (path / _KEY_FILE).exists():
            raise FileExistsError(f"{path / _KEY_FILE} exists; use DevIssuer.load")
        key = RSAKey.generate_key(key_bits, parameters={
            "kid": secrets.token_hex(8), "use": "sig", "alg": "RS256"})
        fd = os.open(path / _KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(key.as_dict(private=True), handle)
        (path / _CONFIG_FILE).write_text(json.dumps({"issuer": issuer}), encoding="utf-8")
        return cls(issuer, key)

    @classmethod
    def load(cls, directory: str | Path) -> DevIssuer:
        """The issuer kept in ``directory``."""
        path = Path(directory)
        config = json.loads((path / _CONFIG_FILE).read_text(encoding="utf-8"))
        key = RSAKey.import_key(json.loads((path / _KEY_FILE).read_text(encoding="utf-8")))
        return cls(str(config["issuer"]), key)

    def jwks(self) -> dict[str, Any]:
        """The public keys, as an identity provider publishes them."""
        return {"keys": [self.key.as_dict(private=False)]}

    def token(self, subject: str, *, audience: str, groups: Sequence[str] = (),
              lifetime_seconds: int = 300, **claims: Any) -> str:
        """An RS256 access token for ``subject`` with ``groups``, valid ``lifetime_seconds``."""
        now = int(time.time())
        payload = {"iss": self.issuer, "aud": audience, "sub": subject, "groups": list(groups),
                   "iat": now, "nbf": now, "exp": now + lifetime_seconds, **claims}
        header = {"alg": "RS256", "typ": "JWT", "kid": self.key.kid}
        return jwt.encode(header, payload, self.key, algorithms=["RS256"])
