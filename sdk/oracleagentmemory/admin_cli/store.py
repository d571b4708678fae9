"""``oam-admin store ...`` and ``oam-admin purge-expired``: run as the schema owner."""

from __future__ import annotations

import argparse
from typing import Any

from oracleagentmemory._notset import NOT_SET_MARKER
from oracleagentmemory.admin_cli._common import (
    CliError,
    Console,
    admin_url,
    is_oracle_admin_url,
    policy_label,
    require_yes,
    sdk_progress,
)
from oracleagentmemory.admin_cli.store_embedder import (
    MODEL_OPTION,
    check_model_options,
    store_source,
)
from oracleagentmemory.core import (
    MemoryRetentionConfig,
    OracleDBMemoryStore,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oracleagentmemory.core.deepsec.admin import (
    StoreProtection,
    add_deep_data_security_policies,
    deep_data_security_protection,
)
from oracleagentmemory.errors import InvalidArgumentError

_POLICY_OF = {
    "create": SchemaPolicy.CREATE_IF_EMPTY,
    "check": SchemaPolicy.REQUIRE_EXISTING,
    "upgrade": SchemaPolicy.CREATE_IF_NECESSARY,
    "recreate": SchemaPolicy.RECREATE,
}
_VERB = {
    "create": "creating (when absent) and validating",
    "check": "checking",
    "upgrade": "creating missing objects and upgrading",
    "recreate": "dropping and recreating",
}

_RECREATE_REFUSED = (
    "memory store {store_id!r} is protected by Deep Data Security policies and this "
    "identity cannot administer the oam_sec security schema: recreating it would leave "
    "the new tables without row-level security and the runtime without access; run "
    "store recreate as the schema owner that is also a member of the policy "
    "administrator role (it re-applies the policies and keeps the grants), or remove "
    "the policies first (oam-admin policies remove); nothing was changed")
_RECREATE_REFUSED_ORACLE = (
    "memory store {store_id!r} is protected by Deep Data Security policies (data grants) and "
    "this identity does not hold the privileges that install them (CREATE DATA ROLE, CREATE "
    "ANY DATA GRANT... see deploy/oracle/bootstrap.sql): recreating it would leave the new "
    "tables without their data grants and the end users without access; run store recreate "
    "as a schema owner that also holds those privileges (it re-applies the policies), or "
    "remove the policies first (oam-admin policies remove, as the policy administrator) and "
    "add them again after; nothing was changed")


def recreate_refused(url: str, store_id: str) -> str:
    """Why ``store recreate`` refuses a protected store this identity cannot re-protect, in the
    terms of the URL's database."""
    template = _RECREATE_REFUSED_ORACLE if is_oracle_admin_url(url) else _RECREATE_REFUSED
    return template.format(store_id=store_id)


def policies_to_reapply(url: str, store_id: str) -> str:
    """The warning after an upgrade or recreate whose policies this identity could not
    re-apply."""
    covered = "its data grants cover" if is_oracle_admin_url(url) \
        else "the runtime's column privileges cover"
    return (f"memory store {store_id!r} is protected by Deep Data Security policies: run "
            f"`oam-admin policies add` as the policy administrator so {covered} the current "
            "columns")


def _options(args: argparse.Namespace) -> dict[str, Any]:
    """Store constructor options from the shape flags (only those given)."""
    kwargs: dict[str, Any] = {}
    if getattr(args, "vector_dim", None) is not None:
        kwargs["vector_dim"] = args.vector_dim
    if getattr(args, "search_strategy", None) is not None:
        kwargs["search_strategy"] = SearchStrategy(args.search_strategy)
    if getattr(args, "search_index_sync", None) is not None:
        kwargs["search_index_sync"] = SearchIndexSyncMode(args.search_index_sync)
    default_ttl = getattr(args, "default_ttl_days", None)
    max_ttl = getattr(args, "max_ttl_days", None)
    if default_ttl is not None or max_ttl is not None:
        kwargs["memory_retention_config"] = MemoryRetentionConfig(
            default_ttl_days=NOT_SET_MARKER if default_ttl is None else default_ttl,
            max_ttl_days=NOT_SET_MARKER if max_ttl is None else max_ttl,
        )
    return kwargs


def _describe(store: OracleDBMemoryStore, store_id: str, console: Console) -> None:
    retention = store.memory_retention_config.resolved()
    lines = {
        "memory_store_id": store_id,
        "schema_version": store.schema_version,
        "search_strategy": store.search_strategy.value,
        "vector_dim": store.vector_dim,
        "default_ttl_days": retention[0],
        "max_ttl_days": retention[1],
    }
    for key, value in lines.items():
        console.out(f"{key}: {'none' if value is None else value}")


def _protection_before(action: str, url: str, owner: str | None, store_id: str,
                       console: Console) -> StoreProtection | None:
    """For upgrade and recreate: what protects the store now (refusing a recreate that would
    leave a protected store unprotected)."""
    if action not in ("upgrade", "recreate"):
        return None
    protection = deep_data_security_protection(url, owner, store_id)
    if action == "recreate" and protection.row_security and not protection.may_administer:
        raise CliError(recreate_refused(url, store_id))
    return protection


def _protect_again(action: str, protection: StoreProtection | None, store_id: str, url: str,
                   console: Console) -> None:
    """Re-apply the store's policies over its new or upgraded tables (grants are kept)."""
    if protection is None or not protection.row_security:
        return
    if not protection.may_administer or not protection.policies:
        console.warn(policies_to_reapply(url, store_id))
        return
    chosen = list(protection.policies)
    console.progress(f"re-applying {policy_label(chosen)} on memory store {store_id!r} "
                     "(grants are kept)")
    add_deep_data_security_policies(url, protection.owner_schema, store_id, chosen)
    console.progress(f"memory store {store_id!r} is protected again: {policy_label(chosen)}")


def run_store(args: argparse.Namespace, console: Console) -> int:
    """create / check / upgrade / recreate one store.

    ``upgrade`` and ``recreate`` leave a protected store protected: they re-apply its installed
    policies (whose grants are kept), and ``recreate`` refuses, before dropping anything, an
    identity that could not re-apply them. With ``--in-database-model`` (Oracle) the store opens
    on the command's own small pool with an ``OracleDBEmbedder`` of that model, which a hybrid
    store's index needs (:mod:`.store_embedder`).
    """
    action: str = args.store_command
    store_id: str = args.memory_store_id
    if action == "recreate":
        require_yes(args, f"store recreate drops every record of memory store {store_id!r}")
    model = check_model_options(args)
    url = admin_url(args, console)
    kwargs = _options(args)
    owner = getattr(args, "owner_schema", None)
    if owner is not None:
        kwargs["schema_owner"] = owner
    protection = _protection_before(action, url, owner, store_id, console)
    console.progress(f"{_VERB[action]} memory store {store_id!r}"
                     + (f" (in-database model {model})" if model else ""))
    with store_source(url, model, getattr(args, "vector_dim", None)) as source, \
            sdk_progress(console):
        try:
            store = OracleDBMemoryStore(source.embedder, source.pool,
                                        schema_policy=_POLICY_OF[action],
                                        memory_store_id=store_id, **kwargs)
        except InvalidArgumentError as exc:
            if exc.argument == "embedder" and is_oracle_admin_url(url):
                raise CliError(f"{exc}; pass {MODEL_OPTION} NAME --vector-dim N") from exc
            raise
        try:
            _describe(store, store_id, console)
        finally:
            store.close()
    _protect_again(action, protection, store_id, url, console)
    console.progress("done")
    return 0


def run_purge(args: argparse.Namespace, console: Console) -> int:
    """Delete expired rows of one store; per-table progress on stderr, the total on stdout."""
    store_id: str = args.memory_store_id
    url = admin_url(args, console)
    kwargs: dict[str, Any] = {}
    if args.owner_schema is not None:
        kwargs["schema_owner"] = args.owner_schema
    console.progress(f"purging expired rows of memory store {store_id!r}")
    with sdk_progress(console):
        store = OracleDBMemoryStore(None, url, schema_policy=SchemaPolicy.REQUIRE_EXISTING,
                                    memory_store_id=store_id, **kwargs)
        try:
            removed = store.purge_expired()
        finally:
            store.close()
    console.out(f"removed {removed} expired rows from memory store {store_id!r}")
    return 0
