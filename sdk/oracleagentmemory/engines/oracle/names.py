"""Oracle identifiers: the one place they are validated and quoted.

Every identifier the Oracle engine writes into SQL is upper-cased, checked against a strict
pattern (a letter first; then letters, digits, ``_``, ``$`` or ``#``; at most 128 bytes, the
limit of Oracle Database 12.2 and later) and double-quoted. Every object reference is
schema-qualified (``"OWNER"."ST_MEMORY"``): Deep Data Security end-user sessions run as
``XS$NULL``, so no statement may rely on a current schema.

A store's physical names come from :class:`~oracleagentmemory.engines.identifiers.StoreNames`
built with ``fold='upper'`` (what the PostgreSQL engine builds with ``fold='lower'``); the
managed table and index names it returns carry a lower-case suffix, upper-cased here.
Quoting an upper-case name is the same as writing it unquoted, except that a reserved word
(``USER``, ``LEVEL``...) is then accepted as a name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from oracleagentmemory.engines.identifiers import REGISTRY_TABLE, StoreNames, store_names
from oracleagentmemory.errors import InvalidArgumentError, InvalidArgumentTypeError

MAX_IDENTIFIER_BYTES = 128
"""Longest Oracle identifier, in bytes (Oracle Database 12.2 and later)."""

IDENTIFIER_FOLD = "upper"
"""Oracle folds unquoted identifiers to upper case."""

_IDENTIFIER = re.compile(r"[A-Z][A-Z0-9_$#]*")

_RESERVED_WORDS_TEXT = """
    ACCESS ADD ALL ALTER AND ANY AS ASC AUDIT BETWEEN BY CHAR CHECK CLUSTER COLUMN COLUMN_VALUE
    COMMENT COMPRESS CONNECT CREATE CURRENT DATE DECIMAL DEFAULT DELETE DESC DISTINCT DROP ELSE
    EXCLUSIVE EXISTS FILE FLOAT FOR FROM GRANT GROUP HAVING IDENTIFIED IMMEDIATE IN INCREMENT
    INDEX INITIAL INSERT INTEGER INTERSECT INTO IS LEVEL LIKE LOCK LONG MAXEXTENTS MINUS
    MLSLABEL MODE MODIFY NESTED_TABLE_ID NOAUDIT NOCOMPRESS NOT NOWAIT NULL NUMBER OF OFFLINE ON
    ONLINE OPTION OR ORDER PCTFREE PRIOR PUBLIC RAW RENAME RESOURCE REVOKE ROW ROWID ROWNUM ROWS
    SELECT SESSION SET SHARE SIZE SMALLINT START SUCCESSFUL SYNONYM SYSDATE TABLE THEN TO
    TRIGGER UID UNION UNIQUE UPDATE USER VALIDATE VALUES VARCHAR VARCHAR2 VIEW WHENEVER WHERE
    WITH
"""

RESERVED_WORDS: frozenset[str] = frozenset(_RESERVED_WORDS_TEXT.split())
"""Oracle SQL reserved words (SQL Language Reference, "Oracle SQL Reserved Words"): they are
valid names only when quoted. Every name this module renders is quoted; the managed column
names, written unquoted in the DDL, must avoid this list (a test checks it)."""


def normalise(name: object, *, what: str = "identifier") -> str:
    """``name`` upper-cased and validated; raise :class:`InvalidArgumentError` if it breaks
    the rule (ASCII: letter first; letters, digits, ``_``, ``$``, ``#``; at most 128 bytes).

    The rule is checked on ``name`` as given, not only on its upper case: Python upper-cases
    some non-ASCII letters to ASCII ones (``"alıce".upper() == "ALICE"``, ``"ſ"`` to ``"S"``,
    ``"ﬀ"`` to ``"FF"``), so a look-alike name would otherwise stand for another end user,
    role or login (an admin granting, revoking or dropping ``alıce`` would act on ``ALICE``).
    """
    if not isinstance(name, str):
        raise InvalidArgumentTypeError(f"{what} must be a str, got {type(name).__name__}")
    upper = name.upper()
    if not name.isascii() or not _IDENTIFIER.fullmatch(upper) or \
            len(upper.encode("utf-8")) > MAX_IDENTIFIER_BYTES:
        raise InvalidArgumentError(
            f"{what} must start with a letter and contain only letters, digits, _, $ or #, "
            f"at most {MAX_IDENTIFIER_BYTES} bytes; got {name!r}", argument=what)
    return upper


def quote(name: object, *, what: str = "identifier") -> str:
    """The validated, upper-cased, double-quoted identifier: ``"ST_MEMORY"``."""
    return f'"{normalise(name, what=what)}"'


def qualified(owner: object, name: object, *, what: str = "identifier") -> str:
    """``"OWNER"."NAME"``, both parts validated."""
    return f"{quote(owner, what='schema owner')}.{quote(name, what=what)}"


def derive_store_names(*, memory_store_id: str | None, table_name_prefix: str | None,
                       schema_owner: str | None) -> StoreNames:
    """A store's names with Oracle's rules: upper case, 128-byte identifiers."""
    return store_names(memory_store_id=memory_store_id, table_name_prefix=table_name_prefix,
                       schema_owner=schema_owner, fold=IDENTIFIER_FOLD,
                       max_identifier_length=MAX_IDENTIFIER_BYTES)


@dataclass(frozen=True)
class OracleObjects:
    """The quoted, schema-qualified names of one store's objects.

    ``owner`` is the schema holding the store: ``StoreNames.schema`` when the store was opened
    with ``schema_owner``, else the session user the engine resolved (``SELECT USER FROM
    dual``) before rendering any statement.
    """

    names: StoreNames
    owner: str

    @classmethod
    def of(cls, names: StoreNames, session_user: str | None = None) -> OracleObjects:
        """Resolve the owner: the store's schema, else ``session_user``; one is required."""
        owner = names.schema if names.schema is not None else session_user
        if owner is None:
            raise InvalidArgumentError(
                "an Oracle store needs an explicit owner: every reference is schema-qualified "
                "(end-user sessions run as XS$NULL); pass the session user")
        return cls(names=names, owner=normalise(owner, what="schema owner"))

    def table(self, logical: str) -> str:
        """``"OWNER"."<PREFIX><TABLE>"`` of managed table ``logical``."""
        return qualified(self.owner, self.names.table(logical), what="table name")

    def registry(self) -> str:
        """``"OWNER"."AGENT_MEMORY_STORE_REGISTRY"``."""
        return qualified(self.owner, REGISTRY_TABLE, what="table name")

    def index(self, suffix: str) -> str:
        """``"OWNER"."<PREFIX><SUFFIX>"`` of a managed index (indexes are qualified too)."""
        return qualified(self.owner, self.names.object_name(suffix), what="index name")

    def object_name(self, suffix: str) -> str:
        """The unquoted, upper-case name of a managed object (for dictionary lookups)."""
        return normalise(self.names.object_name(suffix), what="object name")
