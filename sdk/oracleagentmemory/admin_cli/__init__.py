"""``oam-admin``: the admin identity's command-line tool.

It connects as the schema owner (store lifecycle, purges) or as the policy administrator
(policies, runtime logins, applications, end users, grants), never as an end user, and never opens
a ``SchemaPolicy.NO_CHECK`` store. Entry point: :func:`oracleagentmemory.admin_cli.main.main`.
"""
