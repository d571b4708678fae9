"""The state directory of ``oam-gateway dev``: the issuer's key and the demo tenant's secrets.

Everything ``dev`` needs to find the demo tenant again lives here, so a second run reuses it:

- ``signing-key.json``, ``issuer.json``, ``jwks.json``: the development token issuer (named
  after the URL the last ``dev`` served, as its authorization server is on that origin);
- ``app-token``: the demo application's database access token (never printed or logged);
- ``runtime.pgpass``: the runtime login's password (a libpq password file);
- ``admin.pgpass``: the passwords of the schema owner and the policy administrator;
- ``users.json``: the demo users and their groups (the issuer's stand-in user directory).

Secret files are created with mode 0600 and kept at it.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import platformdirs
from oracleagentmemory.devissuer import DevIssuer

__all__ = ["ADMIN_PASSFILE", "APP_TOKEN_FILE", "JWKS_FILE", "RUNTIME_PASSFILE", "USERS_FILE",
           "DevState", "default_state_dir", "login_url", "write_private"]

JWKS_FILE = "jwks.json"
APP_TOKEN_FILE = "app-token"
RUNTIME_PASSFILE = "runtime.pgpass"
ADMIN_PASSFILE = "admin.pgpass"
USERS_FILE = "users.json"


def default_state_dir() -> Path:
    """Where ``dev`` keeps its state by default (a per-user directory)."""
    return Path(platformdirs.user_data_dir("oam-gateway")) / "dev"


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as a file of mode 0600 (replaced atomically)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _keep_private(path: Path) -> None:
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        os.chmod(path, 0o600)


@dataclass(frozen=True)
class DevState:
    """The files of one ``dev`` state directory."""

    directory: Path

    def issuer(self, issuer_id: str) -> DevIssuer:
        """The development issuer named ``issuer_id`` (its key created on first use, kept
        after; a new name is recorded, as ``dev`` names it after the URL it serves); its JWKS
        written next to its key."""
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "issuer.json"
        issuer = (DevIssuer.load(self.directory) if config.exists()
                  else DevIssuer.create(self.directory, issuer_id))
        if issuer.issuer != issuer_id:
            config.write_text(json.dumps({"issuer": issuer_id}), encoding="utf-8")
            issuer = DevIssuer(issuer_id, issuer.key)
        self.jwks_file.write_text(json.dumps(issuer.jwks()), encoding="utf-8")
        return issuer

    def existing_issuer(self) -> DevIssuer | None:
        """The development issuer kept here, or ``None`` when there is none (never made)."""
        if not (self.directory / "issuer.json").exists():
            return None
        return DevIssuer.load(self.directory)

    @property
    def jwks_file(self) -> Path:
        """The issuer's public keys (the gateway's JWKS file)."""
        return self.directory / JWKS_FILE

    @property
    def app_token_file(self) -> Path:
        """The demo application's access token (mode 0600)."""
        return self.directory / APP_TOKEN_FILE

    @property
    def runtime_passfile(self) -> Path:
        """The runtime login's libpq password file (mode 0600)."""
        return self.directory / RUNTIME_PASSFILE

    @property
    def admin_passfile(self) -> Path:
        """The admin logins' libpq password file (mode 0600)."""
        return self.directory / ADMIN_PASSFILE

    def app_token(self) -> str | None:
        """The saved application token, or ``None`` when there is none."""
        path = self.app_token_file
        if not path.is_file():
            return None
        _keep_private(path)
        return path.read_text(encoding="utf-8").strip() or None

    def save_app_token(self, token: str) -> None:
        """Keep the application token (mode 0600)."""
        write_private(self.app_token_file, token + "\n")

    def password(self, passfile: Path, role: str) -> tuple[str, bool]:
        """``role``'s password from ``passfile``, made (and saved) when missing; and whether
        it was made now."""
        lines = passfile.read_text(encoding="utf-8").splitlines() if passfile.is_file() else []
        for line in lines:
            fields = line.split(":", 4)
            if len(fields) == 5 and fields[3] == role and fields[4]:
                _keep_private(passfile)
                return fields[4], False
        password = secrets.token_urlsafe(32)  # never holds the ':' or '\\' pgpass escapes
        write_private(passfile, "".join(f"{line}\n" for line in lines)
                      + f"*:*:*:{role}:{password}\n")
        return password, True

    def users(self) -> dict[str, list[str]]:
        """The demo users and their groups (empty before provisioning)."""
        path = self.directory / USERS_FILE
        if not path.is_file():
            return {}
        loaded = json.loads(path.read_text(encoding="utf-8"))
        return {str(name): [str(g) for g in groups] for name, groups in loaded.items()}

    def save_users(self, users: dict[str, list[str]]) -> None:
        """Record the demo users and their groups."""
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / USERS_FILE).write_text(json.dumps(users, indent=2) + "\n",
                                                 encoding="utf-8")


def login_url(url: str, role: str, passfile: Path) -> str:
    """``url`` (the embedded server's) as ``role``, its password read from ``passfile``."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    query = [p for p in parts.query.split("&")
             if p and p.split("=", 1)[0] not in ("password", "passfile")]
    query.append(f"passfile={quote(str(passfile), safe='/')}")
    return urlunsplit((parts.scheme, f"{quote(role, safe='')}@{host}", parts.path,
                       "&".join(query), parts.fragment))
