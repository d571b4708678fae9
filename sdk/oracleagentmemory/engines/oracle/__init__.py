"""The Oracle AI Database 26ai engine (python-oracledb, thin mode).

So far: identifiers (:mod:`.names`), bind conversion and keyword-query escaping (:mod:`.binds`)
and the managed-table DDL (:mod:`.ddl`), all without a database connection.
"""
