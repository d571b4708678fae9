"""Print the SQL that makes one protected memory store on Oracle, for SQLcl or SQL*Plus.

An interim step while ``oam-admin`` cannot connect to Oracle (see deploy/oracle/README.md):
the statements come from the SDK's own offline renderers (the Oracle engine's managed-store
DDL, ``oracleagentmemory.engines.oracle.ddl``, and the Deep Data Security renderer,
``oam_policies.oracle``), the same text ``oam-admin`` will run once it supports Oracle. Nothing
is executed: pipe the output to SQLcl as the identity each part names::

    python deploy/oracle/render_sql.py owner --memory-store-id demo --schema-owner oam_owner \
        --vector-dim 256 > owner.sql          # run as OAM_OWNER
    python deploy/oracle/render_sql.py admin --memory-store-id demo --schema-owner oam_owner \
        --vector-dim 256 --end-user alice --end-user bob > admin.sql   # run as OAM_POLICY_ADMIN

NOT YET RUN AGAINST A LIVE DATABASE.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from oam_policies import SHIPPED_POLICIES
from oam_policies.oracle import (
    OracleTarget,
    render_create_data_role,
    render_create_end_user,
    render_grant_data_role,
    render_policy,
)
from oracleagentmemory.engines.identifiers import MANAGED_TABLES, REGISTRY_TABLE
from oracleagentmemory.engines.interfaces import SchemaOptions
from oracleagentmemory.engines.oracle import ddl
from oracleagentmemory.engines.oracle.names import OracleObjects, derive_store_names


def store_objects(memory_store_id: str, schema_owner: str) -> OracleObjects:
    """The store's quoted, schema-qualified names."""
    return OracleObjects.of(derive_store_names(memory_store_id=memory_store_id,
                                               table_name_prefix=None,
                                               schema_owner=schema_owner))


def data_role(memory_store_id: str, policy: str) -> str:
    """The local data role that carries ``policy``'s grants for the store (interim naming)."""
    return f"{memory_store_id}_oam_{policy}"


def owner_statements(o: OracleObjects, vector_dim: int, search_index_sync: str) -> list[str]:
    """The registry table and the store's tables and indexes (run as the schema owner)."""
    options = SchemaOptions(vector_dim=vector_dim, search_mode="vector",
                            search_index_sync=search_index_sync, default_ttl_days=None,
                            max_ttl_days=None)
    return [ddl.registry_table(o), *ddl.create_store(o, options)]


def admin_statements(o: OracleObjects, memory_store_id: str,
                     end_users: Sequence[str]) -> list[str]:
    """Data roles, the shipped policies' data grants and mandatory data grants, local end users
    and their data roles (run as the policy administrator)."""
    tables = {t: o.names.table(t) for t in MANAGED_TABLES}
    tables["registry"] = REGISTRY_TABLE
    statements: list[str] = []
    for policy in SHIPPED_POLICIES.values():
        role = data_role(memory_store_id, policy.name)
        statements.append(render_create_data_role(role))
        statements.extend(render_policy(policy, OracleTarget(owner=o.owner, tables=tables,
                                                             data_role=role)))
    statements.extend(render_create_end_user(user) for user in end_users)
    if end_users:
        statements.extend(render_grant_data_role(data_role(memory_store_id, p.name), end_users)
                          for p in SHIPPED_POLICIES.values())
    return statements


def sql_script(statements: Sequence[str], identity: str) -> str:
    """``statements`` as a script that stops at the first error."""
    lines = [f"-- Run as {identity}. Rendered by deploy/oracle/render_sql.py; NOT YET RUN "
             "AGAINST A LIVE DATABASE.", "WHENEVER SQLERROR EXIT SQL.SQLCODE", ""]
    lines.extend(f"{statement};" for statement in statements)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and print the script."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("part", choices=("owner", "admin"),
                        help="owner: tables and indexes; admin: roles, grants, end users")
    parser.add_argument("--memory-store-id", required=True)
    parser.add_argument("--schema-owner", required=True)
    parser.add_argument("--vector-dim", type=int, required=True,
                        help="the embedder's dimension (this interim script makes vector stores)")
    parser.add_argument("--search-index-sync", choices=("on_commit", "manual"),
                        default="on_commit")
    parser.add_argument("--end-user", action="append", default=[], metavar="NAME",
                        help="a local end user to create and grant the policies to (repeat)")
    args = parser.parse_args(argv)
    o = store_objects(args.memory_store_id, args.schema_owner)
    if args.part == "owner":
        script = sql_script(owner_statements(o, args.vector_dim, args.search_index_sync),
                            "the schema owner")
    else:
        script = sql_script(admin_statements(o, args.memory_store_id, args.end_user),
                            "the policy administrator")
    sys.stdout.write(script)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
