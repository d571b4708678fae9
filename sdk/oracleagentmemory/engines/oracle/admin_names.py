"""Names of the Deep Data Security objects the Oracle admin creates, and group principals.

Pure functions, no I/O. Data roles are database-wide (not schema objects), so a store's data
role names its owner, its store key and the policy, and ends with a hash of exactly those three
(owner and store key may themselves contain ``_``: without the hash ``A_B``/``C`` and ``A``/``B_C``
would meet). An identity-provider group gets one data role **mapped** to it (Oracle cannot grant
a mapped role, ORA-52512: Deep Data Security Guide, "Grant and Revoke Data Roles"): the data
grants of every store and policy granted to the group are attached to that one role, each named
``<ROLE>_<POLICY>_<TABLE>_DG<n>`` by :func:`oam_policies.oracle.grant_name`.

Group principals are ``"<provider>:<group>"`` as the engine-neutral admin API writes them; the
provider is one of the database's own identity-provider types (the ``IDENTITY_PROVIDER_TYPE``
parameter, Database Reference: ``AZURE_AD | OCI_IAM | NONE``), lower case, and the group becomes
the role's mapping: ``IAM_OAUTH_GROUP=<group>`` (OCI IAM) or ``AZURE_ROLE=<group>`` (Entra ID app
role), as the Deep Data Security Guide's ``CREATE DATA ROLE ... MAPPED TO`` shows.
"""

from __future__ import annotations

import hashlib
import re

from oracleagentmemory.engines.oracle.names import MAX_IDENTIFIER_BYTES, OracleObjects, normalise
from oracleagentmemory.errors import InvalidArgumentError

MAPPING_KEYS: dict[str, str] = {"oci_iam": "IAM_OAUTH_GROUP", "azure_ad": "AZURE_ROLE"}
"""Identity provider (``IDENTITY_PROVIDER_TYPE``, lower case) -> the ``MAPPED TO`` key of its
groups."""

GROUP_ROLE_PREFIX = "OAM_GROUP_"
"""Every data role mapped to a group by the SDK starts with this."""

_HASH_CHARS = 8
_GROUP_LABEL_CHARS = 40
_MAX_MAPPING_BYTES = 1023
_GROUP = re.compile(r"[^'\"\x00-\x1f\x7f]+")


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:_HASH_CHARS].upper()


def store_data_role(objects: OracleObjects, policy_name: str) -> str:
    """The local data role carrying ``policy_name``'s grants on one store (unquoted, upper case):
    ``<OWNER>_<STORE>_OAM_<POLICY>_<HASH>``, cut to fit 128 bytes before the hash."""
    store = objects.names.store_key or "DEFAULT"
    policy = normalise(policy_name, what="policy name")
    label = f"{objects.owner}_{store}_OAM_{policy}"
    label = label[:MAX_IDENTIFIER_BYTES - _HASH_CHARS - 1]
    return normalise(f"{label}_{_digest(objects.owner, objects.names.store_key, policy)}",
                     what="data role")


def group_mapping(principal: str) -> str:
    """``MAPPED TO`` text of a ``"<provider>:<group>"`` principal (``IAM_OAUTH_GROUP=<group>``)."""
    provider, separator, group = principal.partition(":") if isinstance(principal, str) \
        else ("", "", "")
    if not separator or provider not in MAPPING_KEYS:
        raise InvalidArgumentError(
            f"an Oracle group is '<identity provider>:<group>' with the database's identity "
            f"provider ({' or '.join(sorted(MAPPING_KEYS))}); got {principal!r}",
            argument="principal")
    mapping = f"{MAPPING_KEYS[provider]}={group}"
    if not _GROUP.fullmatch(group) or len(mapping.encode()) > _MAX_MAPPING_BYTES:
        raise InvalidArgumentError(
            f"group {group!r} cannot be mapped: no quotes or control characters, and the "
            f"mapping must fit {_MAX_MAPPING_BYTES} bytes (ORA-28303)", argument="group_name")
    return mapping


def principal_of_mapping(mapping: str) -> str | None:
    """The ``"<provider>:<group>"`` a ``MAPPED TO`` text stands for (``None``: not a group
    mapping this SDK makes). Reads ``DBA_DATA_ROLES.MAPPED_TO`` on the assumption that it holds
    the text exactly as ``CREATE DATA ROLE ... MAPPED TO`` gave it (documented as the "external
    name"; not verified live)."""
    key, separator, group = mapping.partition("=")
    for provider, expected in MAPPING_KEYS.items():
        if separator and key == expected and group:
            return f"{provider}:{group}"
    return None


def group_data_role(mapping: str) -> str:
    """The data role mapped to one group: ``OAM_GROUP_<GROUP, folded>_<HASH of the mapping>``."""
    group = mapping.partition("=")[2]
    label = re.sub(r"[^A-Z0-9_]", "_", group.upper())[:_GROUP_LABEL_CHARS] or "X"
    return normalise(f"{GROUP_ROLE_PREFIX}{label}_{_digest(mapping)}", what="data role")
