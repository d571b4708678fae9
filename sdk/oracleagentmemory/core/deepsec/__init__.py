"""Deep Data Security: end-user security contexts, shipped policies and the admin API."""

from oracleagentmemory.core.deepsec.admin import (
    LocalEndUserPrincipal,
    OciGroupPrincipal,
    Principal,
    add_deep_data_security_policies,
    get_end_user_username,
    grant_agent_memory_policies,
    list_agent_memory_granted_policies,
    list_deep_data_security_policies,
    remove_deep_data_security_policies,
    revoke_agent_memory_policies,
)
from oracleagentmemory.core.deepsec.context import OracleMemoryEndUserSecurityContext
from oracleagentmemory.core.deepsec.policies import (
    DeepDataSecurityPolicy,
    GlobalMemoriesDeepDataSecurityPolicy,
    UserOwnRowsDeepDataSecurityPolicy,
)
from oracleagentmemory.engines import IdentityProviderUser, create_end_user_security_context
from oracleagentmemory.errors import EndUserContextError

__all__ = [
    "DeepDataSecurityPolicy",
    "EndUserContextError",
    "GlobalMemoriesDeepDataSecurityPolicy",
    "IdentityProviderUser",
    "LocalEndUserPrincipal",
    "OciGroupPrincipal",
    "OracleMemoryEndUserSecurityContext",
    "Principal",
    "UserOwnRowsDeepDataSecurityPolicy",
    "add_deep_data_security_policies",
    "create_end_user_security_context",
    "get_end_user_username",
    "grant_agent_memory_policies",
    "list_agent_memory_granted_policies",
    "list_deep_data_security_policies",
    "remove_deep_data_security_policies",
    "revoke_agent_memory_policies",
]
