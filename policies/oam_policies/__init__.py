"""Policy-as-code for Deep Data Security: data roles and data grants declared once, rendered to
PostgreSQL row-level security (and, with the Oracle engine, to Oracle Deep Data Security DDL)."""

from oam_policies.declarations import GLOBAL_MEMORIES, OWN_USER_ROWS, SHIPPED_POLICIES
from oam_policies.model import DataRolePolicy, TableGrant

__all__ = ["GLOBAL_MEMORIES", "OWN_USER_ROWS", "SHIPPED_POLICIES", "DataRolePolicy", "TableGrant"]
