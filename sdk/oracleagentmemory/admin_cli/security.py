"""Deep Data Security commands: policies, runtime logins, applications, end users, grants.

They run as the policy administrator (who owns ``oam_sec`` and is a member of the schema owner
role; it may also be the schema owner itself). All SQL lives in the SDK's admin API.
"""

from __future__ import annotations

import argparse

import psycopg

from oracleagentmemory.admin_cli import identity
from oracleagentmemory.admin_cli._common import (
    RUNTIME_PASSWORD_ENV,
    CliError,
    Console,
    UsageError,
    admin_connection,
    admin_url,
    chosen_policies,
    policy_label,
    read_secret,
    require_yes,
)
from oracleagentmemory.core._validation import check_required_id
from oracleagentmemory.core.deepsec import (
    DeepDataSecurityPolicy,
    LocalEndUserPrincipal,
    OciGroupPrincipal,
    Principal,
    add_deep_data_security_policies,
    grant_agent_memory_policies,
    list_agent_memory_granted_policies,
    list_deep_data_security_policies,
    remove_deep_data_security_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.core.deepsec.policies import POLICY_BY_NAME
from oracleagentmemory.engines.identifiers import validate_schema_owner
from oracleagentmemory.engines.postgres import deepsec_admin


def run_policies(args: argparse.Namespace, console: Console) -> int:
    """policies add / remove / list."""
    action: str = args.policies_command
    store_id: str = args.memory_store_id
    owner: str = args.owner_schema
    if action == "list":
        with admin_connection(admin_url(args, console)) as conn:
            installed = list_deep_data_security_policies(conn, owner, store_id)
        for policy in installed:
            console.out(policy.declaration.name)
        return 0
    policies = chosen_policies(args.policy) or list(POLICY_BY_NAME.values())
    if action == "remove":
        require_yes(args, f"policies remove takes {policy_label(policies)} off memory store "
                          f"{store_id!r} with every grant of it, and end users lose that access")
        with admin_connection(admin_url(args, console)) as conn:
            console.progress(f"removing {policy_label(policies)} from memory store {store_id!r}")
            remove_deep_data_security_policies(conn, owner, store_id, policies)
        console.out(f"removed: {policy_label(policies)}")
        return 0
    with admin_connection(admin_url(args, console)) as conn:
        console.progress(f"installing {policy_label(policies)} on memory store {store_id!r} "
                         f"in schema {owner!r} (row-level security, column privileges)")
        add_deep_data_security_policies(conn, owner, store_id, policies)
    console.out(f"installed: {policy_label(policies)}")
    return 0


def run_runtime_login(args: argparse.Namespace, console: Console) -> int:
    """runtime-login create: a login whose only privilege is the schema's runtime role."""
    owner = validate_schema_owner(args.owner_schema)
    password = read_secret(args, RUNTIME_PASSWORD_ENV, "runtime login password")
    with admin_connection(admin_url(args, console)) as conn:
        console.progress(f"creating runtime login {args.login!r} for schema {owner!r}")
        with conn.transaction():
            deepsec_admin.create_runtime_login(conn, args.login, password, owner)
    role = deepsec_admin.runtime_role_name(owner)
    console.out(f"runtime login {args.login!r} created: member of {role!r} only; it reaches the "
                f"tables of {owner!r} only through installed policies")
    return 0


def run_application(args: argparse.Namespace, console: Console) -> int:
    """application create / bind / unbind / token-mode / show.

    ``create`` prints the database access token once, on stdout only.
    """
    action: str = args.application_command
    with admin_connection(admin_url(args, console)) as conn:
        if action == "show":
            shown = deepsec_admin.application_bindings(conn, args.name)
            console.out(f"{args.name}: login {shown['login']}, token mode "
                        f"{'on' if shown['require_token'] else 'off'}, stores "
                        f"{', '.join(shown['stores']) or '-'}, identity providers "
                        f"{', '.join(shown['identity_providers']) or '-'}")
            return 0
        if action == "token-mode":
            with conn.transaction():
                deepsec_admin.set_require_token(conn, args.name, args.require_token)
            console.out(f"application {args.name!r}: token mode "
                        f"{'on' if args.require_token else 'off'}")
            return 0
        stores, providers = identity.bindings(args)
        if action in ("bind", "unbind"):
            if not stores and not providers:
                raise UsageError(f"application {action} needs --store or --idp")
            with conn.transaction():
                if action == "bind":
                    deepsec_admin.bind_application(conn, args.name, stores=stores,
                                                   identity_providers=providers)
                else:
                    deepsec_admin.unbind_application(conn, args.name, stores=stores,
                                                     identity_providers=providers)
            console.out(f"application {args.name!r} {action}: " + ", ".join(
                [f"store {a}.{b}" for a, b in stores] + [f"idp {i}" for i in providers]))
            return 0
        console.progress(f"registering application {args.name!r} bound to login {args.login!r}")
        if not stores:
            console.warn("the application acts for no store until `oam-admin application bind "
                         "--store` names one")
        try:
            with conn.transaction():
                deepsec_admin.install_security_schema(conn)
                credential = deepsec_admin.create_application(conn, args.name, args.login)
                deepsec_admin.bind_application(conn, args.name, stores=stores,
                                               identity_providers=providers)
                if args.require_token:
                    deepsec_admin.set_require_token(conn, args.name, True)
        except psycopg.errors.UniqueViolation:
            raise CliError(f"application {args.name!r} already exists; its token was shown when "
                           "it was created and cannot be shown again") from None
    console.warn("the database access token (on standard output) is shown only this once: "
                 "store it in your secret manager now (the runtime passes it to "
                 "create_end_user_security_context)")
    console.out(credential.token())
    return 0


def run_end_user(args: argparse.Namespace, console: Console) -> int:
    """end-user create / drop: local end users (identity-provider users need none)."""
    name = check_required_id(args.name, "end user name")
    if args.end_user_command == "drop":
        require_yes(args, f"end-user drop removes local end user {name!r} and every grant to it")
    with admin_connection(admin_url(args, console)) as conn, conn.transaction():
        if args.end_user_command == "create":
            deepsec_admin.install_security_schema(conn)
            created = deepsec_admin.create_end_user(conn, name)
            console.out(f"local end user {name!r} " + ("created" if created else "already exists"))
            return 0
        if not deepsec_admin.drop_end_user(conn, name):
            raise CliError(f"local end user {name!r} does not exist")
    console.out(f"local end user {name!r} dropped")
    return 0


def _principals(args: argparse.Namespace) -> list[Principal]:
    principals: list[Principal] = [LocalEndUserPrincipal(u) for u in args.user or []]
    principals += [OciGroupPrincipal(g, args.idp) for g in args.group or []]
    if not principals:
        raise UsageError(f"{args.command} needs at least one --user NAME or --group NAME")
    return principals


def _describe(principal: Principal) -> str:
    if isinstance(principal, LocalEndUserPrincipal):
        return f"user {principal.username}"
    assert isinstance(principal, OciGroupPrincipal)
    provider = f"{principal.identity_provider}:" if principal.identity_provider else ""
    return f"group {provider}{principal.group_name}"


def run_grant(args: argparse.Namespace, console: Console) -> int:
    """grant / revoke data roles (installed policies) to local end users and groups."""
    principals = _principals(args)
    store_id: str = args.memory_store_id
    owner: str = args.owner_schema
    with admin_connection(admin_url(args, console)) as conn:
        policies: list[DeepDataSecurityPolicy] | None = chosen_policies(args.policy)
        if policies is None:
            policies = list_deep_data_security_policies(conn, owner, store_id)
            if not policies:
                raise CliError(f"no policy is installed on memory store {store_id!r} in schema "
                               f"{owner!r}; run `oam-admin policies add` first")
        who = ", ".join(_describe(p) for p in principals)
        if args.command == "grant":
            console.progress(f"granting {policy_label(policies)} on {store_id!r} to {who}")
            grant_agent_memory_policies(conn, store_id, owner, principals, policies)
            console.out(f"granted {policy_label(policies)} on memory store {store_id!r} to {who}")
        else:
            console.progress(f"revoking {policy_label(policies)} on {store_id!r} from {who}")
            revoke_agent_memory_policies(conn, store_id, owner, principals, policies)
            console.out(f"revoked {policy_label(policies)} on memory store {store_id!r} "
                        f"from {who}")
    return 0


def run_grants_list(args: argparse.Namespace, console: Console) -> int:
    """grants list: one line per principal with its policies."""
    with admin_connection(admin_url(args, console)) as conn:
        grants = list_agent_memory_granted_policies(conn, args.memory_store_id, args.owner_schema)
    for principal, policies in grants:
        console.out(f"{_describe(principal)}: {policy_label(policies)}")
    if not grants:
        console.progress(f"no grants on memory store {args.memory_store_id!r}")
    return 0
