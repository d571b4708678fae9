"""The database side of the gateway: every tenant's runtime (``tenants``, ``tenant_runtime``,
``postgres_tenant``, ``oracle_tenant`` with ``oracle_pool`` and ``db_access_token``), its
callers' end-user contexts (``context_cache``), the verified caller (``principal``), one
request's wait for a connection (``database_wait``), readiness (``health``) and the text a
database cannot store (``unstorable_text``). It reaches databases only through the SDK's public
API and imports none of the HTTP layers above it."""
