"""The shell lines ``oam-gateway dev`` prints: tokens for the demo users and ``curl`` calls.

They are meant to be pasted into a shell as they are (tests run them so): the ``export`` lines
set one token variable per demo user, each ``curl`` line calls the running gateway.
"""

from __future__ import annotations

import json
import shlex

__all__ = ["DEMO_MEMORY", "DEMO_QUERY", "flow_lines"]

DEMO_MEMORY = "Alice takes her coffee black, without sugar"
DEMO_QUERY = "how does alice like her coffee?"


def _token_variable(user: str) -> str:
    """The shell variable holding ``user``'s token (``ALICE_TOKEN``)."""
    return f"{user.upper()}_TOKEN"


def _post(base: str, path: str, user: str, body: dict[str, object]) -> str:
    bearer = f"-H \"Authorization: Bearer ${_token_variable(user)}\""
    return (f"curl -s -w '\\n' -X POST {base}{path} {bearer} "
            f"-H 'Content-Type: application/json' -d {shlex.quote(json.dumps(body))}")


def flow_lines(base: str, tokens: dict[str, str], lifetime_seconds: int,
               state_dir: str) -> list[str]:
    """The printed walk-through: ``tokens`` maps the demo users (first: the writer, second:
    another user) to their minted tokens."""
    writer, other = list(tokens)[:2]
    token_command = f"oam-gateway token --user {writer}"
    if state_dir:
        token_command += f" --state-dir {shlex.quote(state_dir)}"
    search = {"query": DEMO_QUERY, "k": 5}
    return [
        f"# tokens of the demo users {writer} and {other} (valid {lifetime_seconds // 60} "
        f"minutes; a new one: {token_command})",
        *(f"export {_token_variable(user)}={shlex.quote(token)}" for user, token in tokens.items()),
        f"# {writer} adds a memory, then finds it",
        _post(base, "/v1/memories", writer, {"content": DEMO_MEMORY}),
        _post(base, "/v1/search", writer, search),
        f"# {other} searches the same store and sees none of {writer}'s rows",
        _post(base, "/v1/search", other, search),
        "# who the gateway says you are; whether the database is reachable; the API docs",
        f"curl -s -w '\\n' -H \"Authorization: Bearer ${_token_variable(writer)}\" {base}/v1/me",
        f"curl -s -w '\\n' {base}/readyz",
        f"curl -s -o /dev/null -w '%{{http_code}} %{{content_type}}\\n' {base}/docs"
        f"   # open {base}/docs in a browser",
    ]
