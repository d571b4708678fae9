"""Deep Data Security commands: policies, runtime logins, applications, end users, grants.

They run as the policy administrator (who owns ``oam_sec`` and is a member of the schema owner
role; it may also be the schema owner itself). They call the SDK's admin API
(:mod:`oracleagentmemory.core.deepsec.admin` and :mod:`~oracleagentmemory.core.deepsec.identities`).
"""

from __future__ import annotations

import argparse

from oracleagentmemory.admin_cli import identity
from oracleagentmemory.admin_cli._common import (
    RUNTIME_PASSWORD_ENV,
    CliError,
    Console,
    UsageError,
    admin_connection,
    admin_url,
    chosen_policies,
    is_oracle_admin_url,
    owner_schema,
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
    identities,
    list_agent_memory_granted_policies,
    list_deep_data_security_policies,
    remove_deep_data_security_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.core.deepsec.policies import POLICY_BY_NAME
from oracleagentmemory.engines.security_admin import ApplicationInfo


def run_policies(args: argparse.Namespace, console: Console) -> int:
    """policies add / remove / list."""
    action: str = args.policies_command
    store_id: str = args.memory_store_id
    owner = owner_schema(args)
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


def runtime_login_created(url: str, login: str, owner: str, role: str) -> str:
    """The result line of ``runtime-login create``: what the new login holds, in the terms of
    the URL's database (Oracle grants two system privileges, PostgreSQL one role)."""
    if is_oracle_admin_url(url):
        return (f"runtime login {login!r} created: it holds exactly CREATE SESSION and CREATE "
                "END USER SECURITY CONTEXT (no role, no object privilege); it reaches the "
                f"tables of {owner!r} only as an end user, through installed policies")
    return (f"runtime login {login!r} created: member of {role!r} only; it reaches the "
            f"tables of {owner!r} only through installed policies")


def run_runtime_login(args: argparse.Namespace, console: Console) -> int:
    """runtime-login create / drop: logins whose only privilege is the schema's runtime role."""
    if args.runtime_login_command == "drop":
        require_yes(args, f"runtime-login drop removes login {args.login!r}: a runtime still "
                          "using it can no longer connect")
        with admin_connection(admin_url(args, console)) as admin:
            identities.drop_runtime_login(admin, args.login)
        console.out(f"runtime login {args.login!r} dropped")
        return 0
    owner = owner_schema(args)
    password = read_secret(args, RUNTIME_PASSWORD_ENV, "runtime login password")
    url = admin_url(args, console)
    with admin_connection(url) as admin:
        console.progress(f"creating runtime login {args.login!r} for schema {owner!r}")
        role = identities.create_runtime_login(admin, args.login, password, owner)
    console.out(runtime_login_created(url, args.login, owner, role))
    return 0


def _show(application: ApplicationInfo) -> str:
    return (f"{application.name}: login {application.login}, token mode "
            f"{'on' if application.require_token else 'off'}, stores "
            f"{', '.join(application.stores) or '-'}, identity providers "
            f"{', '.join(application.identity_providers) or '-'}")


def _print_token_once(console: Console, token: str) -> None:
    console.warn("the database access token (on standard output) is shown only this once: "
                 "store it in your secret manager now (the runtime passes it to "
                 "create_end_user_security_context)")
    console.out(token)


def run_application(args: argparse.Namespace, console: Console) -> int:
    """application create / bind / unbind / token-mode / show / list / rotate / drop.

    ``create`` and ``rotate`` print the database access token once, on stdout only.
    """
    action: str = args.application_command
    if action == "drop":
        require_yes(args, f"application drop removes application {args.name!r}: its token stops "
                          "working and its runtime can no longer act for any end user")
    if action == "rotate":
        require_yes(args, f"application rotate replaces the key of {args.name!r}: the current "
                          "token stops working at the runtime's next statement")
    with admin_connection(admin_url(args, console)) as admin:
        if action == "list":
            for application in identities.list_applications(admin):
                console.out(_show(application))
            return 0
        if action == "show":
            console.out(_show(identities.describe_application(admin, args.name)))
            return 0
        if action == "token-mode":
            identities.set_application_token_mode(admin, args.name, args.require_token)
            console.out(f"application {args.name!r}: token mode "
                        f"{'on' if args.require_token else 'off'}")
            return 0
        if action == "drop":
            if not identities.drop_application(admin, args.name):
                raise CliError(f"no application {args.name!r} exists")
            console.out(f"application {args.name!r} dropped")
            return 0
        if action == "rotate":
            console.progress(f"replacing the key of application {args.name!r}")
            _print_token_once(console, identities.rotate_application_key(admin, args.name))
            return 0
        stores, providers = identity.bindings(args)
        if action in ("bind", "unbind"):
            if not stores and not providers:
                raise UsageError(f"application {action} needs --store or --idp")
            if action == "bind":
                identities.bind_application(admin, args.name, stores=stores,
                                            identity_providers=providers)
            else:
                identities.unbind_application(admin, args.name, stores=stores,
                                              identity_providers=providers)
            console.out(f"application {args.name!r} {action}: " + ", ".join(
                [f"store {a}.{b}" for a, b in stores] + [f"idp {i}" for i in providers]))
            return 0
        console.progress(f"registering application {args.name!r} bound to login {args.login!r}")
        if not stores:
            console.warn("the application acts for no store until `oam-admin application bind "
                         "--store` names one")
        token = identities.create_application(admin, args.name, args.login, stores=stores,
                                              identity_providers=providers,
                                              require_token=args.require_token)
    _print_token_once(console, token)
    return 0


def run_end_user(args: argparse.Namespace, console: Console) -> int:
    """end-user create / drop / list: local end users (identity-provider users need none)."""
    action: str = args.end_user_command
    if action == "list":
        with admin_connection(admin_url(args, console)) as admin:
            for name in identities.list_end_users(admin):
                console.out(name)
        return 0
    name = check_required_id(args.name, "end user name")
    if action == "drop":
        require_yes(args, f"end-user drop removes local end user {name!r} and every grant to it")
    with admin_connection(admin_url(args, console)) as admin:
        if action == "create":
            created = identities.create_end_user(admin, name)
            console.out(f"local end user {name!r} " + ("created" if created else "already exists"))
            return 0
        if not identities.drop_end_user(admin, name):
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
    owner = owner_schema(args)
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
        grants = list_agent_memory_granted_policies(conn, args.memory_store_id,
                                                    owner_schema(args))
    for principal, policies in grants:
        console.out(f"{_describe(principal)}: {policy_label(policies)}")
    if not grants:
        console.progress(f"no grants on memory store {args.memory_store_id!r}")
    return 0
