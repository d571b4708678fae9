"""``oam-admin model load|list|drop``: in-database ONNX embedding models, as the schema owner.

An ``OracleDBEmbedder`` (and so ``SearchStrategy.HYBRID``) embeds with a model stored in the
database. These commands load one from an ``.onnx`` file (``DBMS_VECTOR.LOAD_ONNX_MODEL``, BLOB
overload: no directory object on the server), list the owner's models and drop one. They need
an ``oracle://`` URL of the schema owner (``--url`` or ``$OAM_ADMIN_URL``; the password in
``$OAM_ORACLE_PASSWORD``): PostgreSQL has no in-database models.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from oracleagentmemory.admin_cli._common import (
    CliError,
    Console,
    UsageError,
    admin_url,
    require_yes,
)
from oracleagentmemory.engines.oracle import onnx_model
from oracleagentmemory.engines.oracle.embedding import model_name
from oracleagentmemory.engines.oracle.url import connect, is_oracle_url
from oracleagentmemory.errors import InvalidArgumentError

_ACTIONS = {
    "load": "load an ONNX embedding model file into the schema owner's schema",
    "list": "list the schema owner's in-database models",
    "drop": "drop an in-database model (needs --yes)",
}


def add_model_parser(subparsers: Any, common: argparse.ArgumentParser | None = None
                     ) -> argparse.ArgumentParser:
    """Add the ``model`` command and its actions to ``subparsers`` (``common``: options every
    command accepts, such as ``--url``, added to each level as its parent)."""
    parents = [common] if common is not None else []
    text = "in-database ONNX embedding models (Oracle): load, list, drop, as the schema owner"
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "model", help=text, description=text, parents=parents, allow_abbrev=False)
    parser.set_defaults(handler=run_model)
    actions = parser.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    for action, help_text in _ACTIONS.items():
        sub = actions.add_parser(action, help=help_text, description=help_text,
                                 parents=parents, allow_abbrev=False)
        if action == "list":
            continue
        sub.add_argument("--name", required=True, metavar="NAME",
                         help="the model's name (an unquoted identifier, folded to upper case)")
        if action == "load":
            sub.add_argument("--file", required=True, metavar="PATH",
                             help="the .onnx model file (at most 1 GB)")
            sub.add_argument("--metadata", metavar="JSON",
                             help="the model's JSON metadata (default: an embedding model "
                                  "whose input is DATA)")
        else:
            sub.add_argument("--yes", action="store_true",
                             help="confirm this destructive command")
    return parser


def _oracle_url(args: argparse.Namespace, console: Console) -> str:
    url = admin_url(args, console)
    if is_oracle_url(url):
        return url
    scheme = url.split("://", 1)[0].lower() if "://" in url else "a URL without a scheme"
    raise UsageError(
        f"in-database ONNX models are Oracle's: `oam-admin model` needs an oracle:// URL of the "
        f"schema owner (--url or $OAM_ADMIN_URL), got {scheme} (PostgreSQL has no in-database "
        "models; use another embedder there)")


def _name(args: argparse.Namespace) -> str:
    try:
        return model_name(args.name)
    except InvalidArgumentError as exc:
        raise UsageError(str(exc)) from None


def _metadata(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--metadata is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--metadata must be a JSON object")
    return value


def _model_file(path_text: str) -> bytes:
    """The file's bytes; a missing, empty or larger than 1 GB file is refused before reading."""
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise UsageError(f"--file {path_text}: no such file")
    size = path.stat().st_size
    if size > onnx_model.MAX_MODEL_BYTES:
        raise UsageError(f"--file {path_text} is {size} bytes; Oracle loads ONNX models of at "
                         f"most 1 GB ({onnx_model.MAX_MODEL_BYTES} bytes)")
    if size == 0:
        raise UsageError(f"--file {path_text} is empty")
    return path.read_bytes()


def run_model(args: argparse.Namespace, console: Console) -> int:
    """Load, list or drop in-database models through the schema owner's Oracle connection."""
    action: str = args.model_command
    name = _name(args) if action != "list" else ""
    metadata = _metadata(getattr(args, "metadata", None)) if action == "load" else None
    if action == "drop":
        require_yes(args, f"dropping model {name} breaks every embedder and hybrid index "
                          "that uses it")
    url = _oracle_url(args, console)
    data = _model_file(args.file) if action == "load" else b""
    connection = connect(url)
    try:
        if action == "load":
            console.progress(f"loading {len(data)} bytes as model {name}")
            console.out(onnx_model.load_onnx_model(connection, name, data, metadata))
        elif action == "drop":
            console.out(onnx_model.drop_onnx_model(connection, name))
        elif action == "list":
            for model in onnx_model.list_onnx_models(connection):
                created = model.created.isoformat() if model.created else ""
                size = "" if model.size_mb is None else f"{model.size_mb:g}"
                console.out("\t".join((model.name, model.mining_function or "",
                                       model.algorithm or "", size, created)))
        else:  # argparse allows only the actions above
            raise CliError(f"unknown model action {action!r}")
    finally:
        connection.close()
    return 0
