"""Record a package's public API, and compare two records.

One walker serves both sides: run as a script with the Python of a venv holding Oracle's
``oracleagentmemory`` package, it writes the vendor's record (``tests/data/vendor_api_26_8.json``)::

    /tmp/vendor-venv/bin/python tests/vendor_api.py > tests/data/vendor_api_26_8.json

and ``tests/test_vendor_api.py`` imports it to describe our package the same way and to diff.

A module's public names are its ``__all__`` when it has one, else the names without a leading
underscore that the module itself binds (read from its code object: a name stored right after an
import instruction is imported, not defined), leaving out modules, loggers and type variables.
A name is a ``class`` (its constructor's parameters; its public members that a class of the package
defines: methods with their parameters, properties, class attributes, or ``inherited`` from
another public class, described there; an enum's members), a
``function`` (its parameters), an ``alias`` (a typing construct, or a class bound under another
name), a ``constant`` (a plain value), an ``object`` (anything else, by type name), or, in the
vendor's record, a ``reexport`` of a class or function another public module defines. A parameter
is ``"kind name"`` or ``"kind name=default"``: kinds ``po`` (positional only), ``pk`` (positional
or keyword), ``*``, ``kw`` (keyword only), ``**``; defaults are the ``repr`` of plain values,
``Enum.MEMBER`` for enum members, ``<factory>`` for a dataclass or pydantic default factory, and
``<TypeName>`` for any other object (a sentinel such as ``NOT_SET_MARKER`` is ``<NotSetMarker>``).
Parameters whose names start with an underscore are private and left out.
"""

from __future__ import annotations

import dataclasses
import dis
import enum
import importlib
import importlib.util
import inspect
import json
import logging
import pkgutil
import re
import sys
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

__all__ = ["Record", "compare", "record_modules", "record_package", "public_module_names"]

Record = dict[str, Any]
"""``{module name: {public name: description}}``, as JSON."""

PLAIN = (bool, int, float, str, bytes, type(None))
KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "po",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "pk",
    inspect.Parameter.VAR_POSITIONAL: "*",
    inspect.Parameter.KEYWORD_ONLY: "kw",
    inspect.Parameter.VAR_KEYWORD: "**",
}
IMPORTS = frozenset({"IMPORT_NAME", "IMPORT_FROM"})
_QUALIFIED = re.compile(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)")


def public_module_names(root: str) -> list[str]:
    """The importable modules of package ``root`` with no ``_``-prefixed path component."""
    package = importlib.import_module(root)
    names = [root]
    for info in pkgutil.walk_packages(package.__path__, root + "."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def _imported_names(module: types.ModuleType) -> set[str]:
    """Names the module's top-level code binds only by importing them."""
    spec = importlib.util.find_spec(module.__name__)
    loader = spec.loader if spec is not None else None
    get_code = getattr(loader, "get_code", None)
    code = get_code(module.__name__) if get_code is not None else None
    if code is None:
        return set()
    imported: set[str] = set()
    defined: set[str] = set()
    previous = ""
    for instruction in dis.get_instructions(code):
        if instruction.opname in ("STORE_NAME", "STORE_GLOBAL"):
            (imported if previous in IMPORTS else defined).add(str(instruction.argval))
        previous = instruction.opname
    return imported - defined


def _public_names(module: types.ModuleType) -> list[str]:
    exported = getattr(module, "__all__", None)
    if exported is not None:
        return sorted(str(name) for name in exported)
    imported = _imported_names(module)
    names = []
    for name, value in vars(module).items():
        if name.startswith("_") or name in imported:
            continue
        if isinstance(value, (types.ModuleType, logging.Logger, TypeVar)):
            continue
        names.append(name)
    return sorted(names)


def _in_package(obj: object, root: str) -> bool:
    return str(getattr(obj, "__module__", "") or "").split(".")[0] == root


def _default(value: object) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, PLAIN):
        return repr(value)
    if isinstance(value, (tuple, frozenset, list)) and all(isinstance(v, PLAIN) for v in value):
        items = sorted(value, key=repr) if isinstance(value, frozenset) else list(value)
        return f"{type(value).__name__}({items!r})"
    if repr(value) == "<factory>" or type(value).__name__ == "_HAS_DEFAULT_FACTORY_CLASS":
        return "<factory>"
    return f"<{type(value).__name__.lstrip('_')}>"


def _parameters(target: Callable[..., object], drop_first: bool = False) -> list[str] | None:
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    parameters = list(signature.parameters.values())
    if drop_first and parameters and parameters[0].kind in (
            inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
        parameters = parameters[1:]
    described = []
    for parameter in parameters:
        if parameter.name.startswith("_"):
            continue
        entry = f"{KINDS[parameter.kind]} {parameter.name}"
        if parameter.default is not inspect.Parameter.empty:
            entry += f"={_default(parameter.default)}"
        described.append(entry)
    return described


def _alias_target(value: object) -> str:
    if typing.get_origin(value) is typing.Literal:
        return "Literal" + repr(sorted(typing.get_args(value), key=repr))
    if isinstance(value, type):
        return value.__qualname__
    return _QUALIFIED.sub(r"\1", repr(value))


def _is_alias(value: object) -> bool:
    return typing.get_origin(value) is not None or isinstance(value, types.UnionType)


def _fields(cls: type) -> set[str]:
    names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    model_fields = getattr(cls, "model_fields", None)
    if isinstance(model_fields, dict):
        names.update(str(name) for name in model_fields)
    return names


def _is_public_class(owner: type) -> bool:
    return not any(part.startswith("_")
                   for part in [*owner.__module__.split("."), *owner.__qualname__.split(".")])


def _member(cls: type, name: str, root: str, wanted: bool) -> dict[str, Any] | None:
    """Member ``name`` of ``cls``. Unless ``wanted``, only a member a class of the package
    defines, and one inherited from another public class of it as ``inherited``."""
    for owner in cls.__mro__:
        if name in vars(owner):
            raw = vars(owner)[name]
            break
    else:
        return None
    if not wanted:
        if not _in_package(owner, root):
            return None
        if owner is not cls and _is_public_class(owner):
            return {"kind": "inherited", "from": _identity(owner)}
    if isinstance(raw, property) or type(raw).__name__ == "cached_property":
        return {"kind": "property"}
    if isinstance(raw, staticmethod):
        return {"kind": "staticmethod", "params": _parameters(raw.__func__)}
    if isinstance(raw, classmethod):
        return {"kind": "classmethod", "params": _parameters(raw.__func__, drop_first=True)}
    if inspect.isfunction(raw):
        return {"kind": "method", "params": _parameters(raw, drop_first=True)}
    if inspect.ismethoddescriptor(raw):
        return {"kind": "method", "params": _parameters(getattr(cls, name), drop_first=True)}
    if isinstance(raw, type):
        return {"kind": "class"}
    return {"kind": "attribute", "value": _default(raw)}


def _describe_class(cls: type, root: str, like: dict[str, Any] | None) -> dict[str, Any]:
    described: dict[str, Any] = {"kind": "class"}
    if issubclass(cls, enum.Enum):
        described["members"] = {m.name: repr(m.value) for m in cls}
        return described
    described["init"] = _parameters(cls)
    fields = _fields(cls)
    wanted = None if like is None else set(like.get("members") or ())
    members: dict[str, Any] = {}
    for name in sorted(dir(cls)):
        if name.startswith("_") or (name in fields and wanted is None):
            continue
        if wanted is not None and name not in wanted:
            continue
        member = _member(cls, name, root, wanted is not None)
        if member is not None:
            members[name] = member
    described["members"] = members
    return described


def describe(name: str, value: object, root: str,
             like: dict[str, Any] | None = None) -> dict[str, Any]:
    """The description of public name ``name`` bound to ``value`` in package ``root``; with
    ``like``, a class's members are those ``like`` lists, wherever the class gets them."""
    if isinstance(value, type) and not _is_alias(value):
        if value.__name__ != name:
            return {"kind": "alias", "target": _alias_target(value)}
        return {**_describe_class(value, root, like), "id": _identity(value)}
    if _is_alias(value):
        return {"kind": "alias", "target": _alias_target(value)}
    if inspect.isroutine(value):
        params = _parameters(typing.cast(Callable[..., Any], value))
        return {"kind": "function", "params": params, "id": _identity(value)}
    if isinstance(value, dict):
        return {"kind": "constant", "value": repr(sorted(value.items(), key=repr))}
    if isinstance(value, (*PLAIN, tuple, frozenset, list)):
        return {"kind": "constant", "value": _default(value)}
    return {"kind": "object", "type": type(value).__name__.lstrip("_")}


def _identity(value: object) -> str:
    return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', '?')}"


def record_modules(names: Iterable[str], root: str, like: Record | None = None) -> Record:
    """Describe modules ``names``; one that does not import is left out.

    Without ``like``, a class or function that another of ``names`` defines is recorded as
    ``{"kind": "reexport", "of": "<defining module>.<name>"}``. With ``like``, every name ``like``
    lists for a module is described in full where the module has it."""
    names = sorted(names)
    record: Record = {}
    for module_name in names:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        wanted = _public_names(module) if like is None else sorted(like.get(module_name, {}))
        described: dict[str, Any] = {}
        for name in wanted:
            if not hasattr(module, name):
                continue
            value = getattr(module, name)
            home = getattr(value, "__module__", None)
            if (like is None and home != module_name and home in names
                    and getattr(value, "__name__", None) == name
                    and (isinstance(value, type) or inspect.isroutine(value))):
                described[name] = {"kind": "reexport", "of": f"{home}.{name}"}
            else:
                model = None if like is None else like[module_name][name]
                described[name] = describe(name, value, root, model)
        record[module_name] = described
    return record


def record_package(root: str) -> Record:
    """Describe every public module of package ``root``."""
    return record_modules(public_module_names(root), root)


def _lookup(record: Record, dotted: str) -> dict[str, Any] | None:
    module, _, name = dotted.rpartition(".")
    return typing.cast("dict[str, Any] | None", record.get(module, {}).get(name))


def _parse(parameter: str) -> tuple[str, str, str]:
    kind, _, rest = parameter.partition(" ")
    name, has_default, default = rest.partition("=")
    return name, kind, default if has_default else "(none)"


def _compare_params(key: str, vendor: list[str] | None, ours: list[str] | None,
                    out: dict[str, str]) -> None:
    if vendor is None or ours is None:
        if vendor != ours:
            out[key] = f"signature: vendor {vendor}, ours {ours}"
        return
    ours_by_name = {p[0]: (i, p) for i, p in enumerate(map(_parse, ours))}
    for index, (name, kind, default) in enumerate(map(_parse, vendor)):
        where = f"{key}({name})"
        if name not in ours_by_name:
            out[where] = "missing parameter"
            continue
        at, (_, our_kind, our_default) = ours_by_name[name]
        problems = []
        if kind != our_kind:
            problems.append(f"kind: vendor {kind}, ours {our_kind}")
        if default != our_default:
            problems.append(f"default: vendor {default}, ours {our_default}")
        if kind in ("po", "pk") and at != index:
            problems.append(f"position: vendor {index}, ours {at}")
        if problems:
            out[where] = "; ".join(problems)
    vendor_names = {_parse(p)[0] for p in vendor}
    for name, kind, default in map(_parse, ours):
        if name not in vendor_names and default == "(none)" and kind not in ("*", "**"):
            out[f"{key}({name})"] = "extra required parameter"


def _compare_entries(key: str, vendor: dict[str, Any], ours: dict[str, Any],
                     out: dict[str, str]) -> None:
    if vendor["kind"] != ours["kind"]:
        out[key] = f"kind: vendor {vendor['kind']}, ours {ours['kind']}"
        return
    for field in ("target", "value", "type"):
        if vendor.get(field) != ours.get(field):
            out[key] = f"{field}: vendor {vendor.get(field)}, ours {ours.get(field)}"
            return
    if "params" in vendor:
        _compare_params(key, vendor["params"], ours.get("params"), out)
    if "init" in vendor:
        _compare_params(key, vendor["init"], ours.get("init"), out)
    vendor_members = vendor.get("members")
    if vendor_members is None:
        return
    ours_members = ours.get("members") or {}
    for member, description in vendor_members.items():
        where = f"{key}.{member}"
        if isinstance(description, dict) and description["kind"] == "inherited":
            continue
        if member not in ours_members:
            out[where] = "missing member"
        elif isinstance(description, str):
            if description != ours_members[member]:
                out[where] = f"value: vendor {description}, ours {ours_members[member]}"
        else:
            _compare_entries(where, description, ours_members[member], out)


def compare(vendor: Record, ours: Record) -> dict[str, str]:
    """Every way ``ours`` differs from ``vendor`` where code written for the vendor could notice:
    ``{key: what differs}``. Names, members and optional parameters only ``ours`` has are fine.

    A missing module or name hides what lies under it; a vendor re-export must be, in ours, the
    very object ours has under the name the vendor re-exports; an inherited member is compared
    on the class it is inherited from."""
    out: dict[str, str] = {}
    for module, names in vendor.items():
        if module not in ours:
            out[module] = "missing module"
            continue
        for name, description in names.items():
            key = f"{module}.{name}"
            mine = _lookup(ours, key)
            if mine is None:
                out[key] = "missing name"
            elif description["kind"] == "reexport":
                original = _lookup(ours, description["of"])
                if original is not None and mine.get("id") != original.get("id"):
                    out[key] = (f"not the object at {description['of']}: ours is "
                                f"{mine.get('id', mine['kind'])}, there {original.get('id')}")
            else:
                _compare_entries(key, description, mine, out)
    return out


def main() -> None:
    """Print the record of the ``oracleagentmemory`` installed in this interpreter, as JSON."""
    record = record_package("oracleagentmemory")
    json.dump(record, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
