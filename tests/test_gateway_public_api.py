"""The gateway uses the SDK's public API only.

Every module of ``gateway/oam_gateway`` is parsed: no attribute whose name starts with an
underscore is reached on anything but ``self`` or ``cls`` (dunders aside), no such name is
reached through ``getattr``-like calls, and nothing private of ``oracleagentmemory`` is
imported (a module path with a ``_`` component, or a ``_`` name). import-linter cannot say this
(its wildcards replace whole module names, and its forbidden contracts follow the public SDK's
own imports of its private modules), so this test does.
"""

from __future__ import annotations

import ast
from pathlib import Path

GATEWAY = Path(__file__).resolve().parents[1] / "gateway" / "oam_gateway"
SDK = "oracleagentmemory"
OWN = ("self", "cls")
"""Names through which a class reaches its own private attributes."""
ATTRIBUTE_CALLS = ("getattr", "setattr", "hasattr", "delattr")

ALLOWED: dict[tuple[str, str], str] = {
    ("middleware/rate_limit_memory.py", "MemoryStorage._MemoryStorage__schedule_expiry"):
        "limits' MemoryStorage offers no public way to pace its sweep of expired keys; "
        "tests/test_gateway_rate_limit_memory.py fails by name if limits renames the hook",
}
"""``(module path under oam_gateway, reach as written)`` -> why it is legitimate. Nothing of
the SDK: the one entry is a third-party library's hook."""


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_private_sdk_path(dotted: str) -> bool:
    parts = dotted.split(".")
    return parts[0] == SDK and any(is_private(part) for part in parts)


def private_reaches(source: str) -> list[str]:
    """Every private reach in ``source``, as ``"line: code"``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and is_private(node.attr):
            if not (isinstance(node.value, ast.Name) and node.value.id in OWN):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ATTRIBUTE_CALLS and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str) \
                    and is_private(name.value):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == SDK:
            if is_private_sdk_path(node.module) or any(is_private(a.name) for a in node.names):
                found.append(f"{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Import):
            found.extend(f"{node.lineno}: {ast.unparse(node)}" for alias in node.names
                         if is_private_sdk_path(alias.name))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and is_private_sdk_path(node.value) and node.value.isascii() \
                and all(part.isidentifier() for part in node.value.split(".")):
            found.append(f"{node.lineno}: {node.value!r}")  # importlib.import_module("...")
    return found


def gateway_modules() -> list[Path]:
    return sorted(GATEWAY.rglob("*.py"))


def test_the_gateway_reaches_nothing_private() -> None:
    modules = gateway_modules()
    assert len(modules) > 30 and GATEWAY / "rest" / "memories.py" in modules  # not a vacuous pass
    found = [f"{path.relative_to(GATEWAY)}:{reach}" for path in modules
             for reach in private_reaches(path.read_text(encoding="utf-8"))
             if (str(path.relative_to(GATEWAY)), reach.split(": ", 1)[1]) not in ALLOWED]
    assert found == []


def test_the_checker_flags_every_kind_of_private_reach() -> None:
    """Positive control: the reaches the gateway used to make, and the other spellings."""
    source = "\n".join([
        "from oracleagentmemory.core._x import y",
        "from oracleagentmemory.core import _helper",
        "from oracleagentmemory import _notset",
        "import oracleagentmemory.core._store_reads",
        "with client.store._atomic():",
        "    record = client._memory(memory_id, 'memory_id')",
        "value = self._client._store",
        "hook = getattr(client, '_memory')",
        "module = importlib.import_module('oracleagentmemory.core._x')",
        "mangled = client.__secret",
    ])
    flagged = private_reaches(source)
    assert sorted(int(reach.split(":")[0]) for reach in flagged) == list(range(1, 11))
    assert "5: client.store._atomic" in flagged
    assert "1: from oracleagentmemory.core._x import y" in flagged


def test_the_checker_leaves_public_and_own_names_alone() -> None:
    source = "\n".join([
        "from __future__ import annotations",
        "from oracleagentmemory.core import OracleAgentMemory, OracleDBMemoryStore",
        "import oracleagentmemory.errors",
        "with client.transaction():",
        "    record = client.get_memory(memory_id)",
        "value = self._client",
        "cache = cls._instances",
        "kind = record.__class__.__name__",
        "text = 'oracleagentmemory._notset is private, said in a sentence'",
        "public = getattr(client, 'store')",
    ])
    assert private_reaches(source) == []
