"""The ``oam_sec`` security schema on PostgreSQL: installed and owned by the admin identity.

It holds application identities (an HMAC key per application, bound to the runtime login role
allowed to use it), local end users, data roles with their grants to end users and identity-
provider groups, and the policies installed per store. The runtime login can read none of it; it
can only call ``oam_sec.apply_assertion(assertion)``, ``oam_sec.end_user()``,
``oam_sec.has_data_role(role)`` and ``oam_sec.verified_user(role)`` (granted to PUBLIC: they only ever
describe the caller's own assertion). One policy administrator owns ``oam_sec`` per database; to
manage a store's policies it must be a member of the store's schema-owner role (or be that role).

An end-user assertion is ``<hex(json claims)>.<hex(HMAC-SHA-256(key, hex(json claims)))>``. The
claims are ``{"app", "u" (user), "k" ("local" or "idp"), "g" (groups), "r" (requested data
roles), "exp" (epoch seconds), "n" (nonce)}``. HMAC is computed with the built-in ``sha256()``
from keys stored pre-padded (``key XOR ipad``, ``key XOR opad``); no extension is needed.

Verification happens once per backend and assertion: ``apply_assertion`` (``SECURITY
DEFINER``) sets the transaction-local assertion and looks its SHA-256 up in
``oam_sec.session_cache``; only an assertion this backend has not verified yet is verified in full
(``oam_sec.claims()``) and recorded there with the end user and the data roles granted to them.
The row-level-security policies call ``oam_sec.verified_user(role)`` once per statement: one
lookup of the current assertion in the caller's own rows of that table
(``oam_sec.session_end_user``). A row counts only while its assertion is
unexpired and no grant, end user, data role or application has changed since it was verified
(``oam_sec.grants_version``, bumped by triggers), so a revoke takes effect at the runtime's next
statement. The runtime can read its own backend's rows and write none.
"""

from __future__ import annotations

ASSERTION_SETTING = "oam.end_user_assertion"
"""The transaction-local setting that carries the assertion."""
CACHE_LIMIT = 256
"""At most this many verified assertions are kept per backend (emptied past it)."""

_CURRENT_VERIFICATION = """c.digest OPERATOR(pg_catalog.=) pg_catalog.sha256(pg_catalog.convert_to(
                   pg_catalog.current_setting('oam.end_user_assertion', true), 'UTF8'))
           AND c.expires_at OPERATOR(pg_catalog.>) pg_catalog.now()
           AND c.grants_version OPERATOR(pg_catalog.=)
               (SELECT v.version FROM oam_sec.grants_version v)"""
"""The row of ``oam_sec.session_end_user`` (alias ``c``) that verified the current assertion:
its digest, unexpired, and no grant changed since. Schema-qualified throughout, so no
search_path can redirect it."""

INSTALL_STATEMENTS: tuple[str, ...] = (
    "CREATE SCHEMA IF NOT EXISTS oam_sec",
    "REVOKE ALL ON SCHEMA oam_sec FROM PUBLIC",
    """CREATE TABLE IF NOT EXISTS oam_sec.application (
        app_name text PRIMARY KEY CHECK (app_name ~ '^[a-z][a-z0-9_]{0,62}$'),
        login_role text NOT NULL,
        ipad_key bytea NOT NULL CHECK (length(ipad_key) = 64),
        opad_key bytea NOT NULL CHECK (length(opad_key) = 64),
        created_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS oam_sec.end_user (
        username text PRIMARY KEY CHECK (length(username) BETWEEN 1 AND 128),
        created_at timestamptz NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS oam_sec.data_role (
        role_name text PRIMARY KEY CHECK (role_name ~ '^[a-z][a-z0-9_]{0,62}$'),
        schema_name text NOT NULL,
        store_key text NOT NULL,
        policy_name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (schema_name, store_key, policy_name))""",
    """CREATE TABLE IF NOT EXISTS oam_sec.data_role_grant (
        role_name text NOT NULL REFERENCES oam_sec.data_role (role_name) ON DELETE CASCADE,
        principal_type text NOT NULL CHECK (principal_type IN ('user', 'group')),
        principal text NOT NULL CHECK (length(principal) BETWEEN 1 AND 256),
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (role_name, principal_type, principal))""",
    # Bumped by every change to who may do what; a verified assertion cached under an older
    # version no longer counts, so a revoke takes effect at the runtime's next statement.
    """CREATE TABLE IF NOT EXISTS oam_sec.grants_version (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        version bigint NOT NULL DEFAULT 1)""",
    "INSERT INTO oam_sec.grants_version (singleton) VALUES (true) ON CONFLICT DO NOTHING",
    """CREATE OR REPLACE FUNCTION oam_sec.bump_grants_version() RETURNS trigger
        LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
    BEGIN
        UPDATE oam_sec.grants_version SET version = version + 1;
        RETURN NULL;
    END
    $fn$""",
    *(f"""CREATE OR REPLACE TRIGGER oam_grants_version
        AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON oam_sec.{table}
        FOR EACH STATEMENT EXECUTE FUNCTION oam_sec.bump_grants_version()"""
      for table in ("application", "end_user", "data_role", "data_role_grant")),
    """CREATE OR REPLACE FUNCTION oam_sec.claims() RETURNS jsonb
        LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        assertion text := current_setting('oam.end_user_assertion', true);
        body text;
        signature text;
        payload jsonb;
        app oam_sec.application%ROWTYPE;
    BEGIN
        IF assertion IS NULL OR assertion = '' THEN
            RETURN NULL;
        END IF;
        body := split_part(assertion, '.', 1);
        signature := split_part(assertion, '.', 2);
        IF body = '' OR signature = '' OR length(body) > 16384 THEN
            RETURN NULL;
        END IF;
        payload := convert_from(decode(body, 'hex'), 'UTF8')::jsonb;
        SELECT * INTO app FROM oam_sec.application WHERE app_name = payload->>'app';
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        IF NOT pg_has_role(session_user, app.login_role, 'MEMBER') THEN
            RETURN NULL;
        END IF;
        IF encode(sha256(app.opad_key || sha256(app.ipad_key || convert_to(body, 'UTF8'))), 'hex')
                <> signature THEN
            RETURN NULL;
        END IF;
        IF payload->>'exp' IS NULL
                OR (payload->>'exp')::double precision < extract(epoch FROM now()) THEN
            RETURN NULL;
        END IF;
        IF coalesce(payload->>'u', '') = '' THEN
            RETURN NULL;
        END IF;
        IF payload->>'k' = 'local' AND NOT EXISTS (
                SELECT 1 FROM oam_sec.end_user WHERE username = payload->>'u') THEN
            RETURN NULL;
        END IF;
        RETURN payload;
    EXCEPTION WHEN others THEN
        RETURN NULL;
    END
    $fn$""",
    """CREATE OR REPLACE FUNCTION oam_sec.end_user() RETURNS text
        LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
        SELECT oam_sec.claims()->>'u'
    $fn$""",
    # PL/pgSQL so that the assertion is verified once per call: in an SQL body the planner
    # inlines a "(SELECT oam_sec.claims() AS p) c" subquery into every use of c.p, which
    # verified the assertion five times per call.
    """CREATE OR REPLACE FUNCTION oam_sec.has_data_role(role text) RETURNS boolean
        LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        p jsonb := oam_sec.claims();
    BEGIN
        IF p IS NULL THEN
            RETURN false;
        END IF;
        RETURN coalesce((jsonb_array_length(coalesce(p->'r', '[]'::jsonb)) = 0 OR p->'r' ? role)
           AND EXISTS (
               SELECT 1 FROM oam_sec.data_role_grant g
               WHERE g.role_name = role
                 -- a grant to a local end user never extends to an identity-provider user
                 -- who happens to carry the same name
                 AND ((g.principal_type = 'user' AND p->>'k' = 'local' AND g.principal = p->>'u')
                   OR (g.principal_type = 'group'
                       AND coalesce(p->'g', '[]'::jsonb) ? g.principal))), false);
    END
    $fn$""",
    # The verified assertions of live sessions. Unlogged: a crash empties it, which only costs
    # a verification. Rows belong to one backend (pid) and expire with their assertion; a row
    # of an exited backend can only serve a new backend that reuses the pid and sets the very
    # same, still unexpired, assertion text.
    """CREATE UNLOGGED TABLE IF NOT EXISTS oam_sec.session_cache (
        pid integer NOT NULL,
        digest bytea NOT NULL,
        username text NOT NULL,
        data_roles text[] NOT NULL,
        expires_at timestamptz NOT NULL,
        grants_version bigint NOT NULL,
        PRIMARY KEY (pid, digest))""",
    # What the runtime may read of it: its own backend's rows (security_barrier: no leaky
    # function of the caller's sees other backends' rows).
    """CREATE OR REPLACE VIEW oam_sec.session_end_user WITH (security_barrier) AS
        SELECT digest, username, data_roles, expires_at, grants_version
        FROM oam_sec.session_cache WHERE pid = pg_catalog.pg_backend_pid()""",
    f"""CREATE OR REPLACE FUNCTION oam_sec.verify_assertion() RETURNS text
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        v_payload jsonb := oam_sec.claims();
        v_digest bytea := sha256(convert_to(
            current_setting('oam.end_user_assertion', true), 'UTF8'));
        v_version bigint;
    BEGIN
        IF v_payload IS NULL THEN
            RETURN NULL;
        END IF;
        SELECT version INTO v_version FROM oam_sec.grants_version;
        DELETE FROM oam_sec.session_cache c
         WHERE c.pid = pg_backend_pid()
           AND (c.digest = v_digest OR c.grants_version <> v_version OR c.expires_at <= now());
        -- Expired rows of other backends (exited ones included), never waiting for a backend
        -- that is removing the same rows.
        DELETE FROM oam_sec.session_cache c WHERE c.ctid IN (
            SELECT x.ctid FROM oam_sec.session_cache x WHERE x.expires_at <= now()
            FOR UPDATE SKIP LOCKED);
        IF (SELECT count(*) FROM oam_sec.session_cache c WHERE c.pid = pg_backend_pid())
                >= {CACHE_LIMIT} THEN
            DELETE FROM oam_sec.session_cache c WHERE c.pid = pg_backend_pid();
        END IF;
        INSERT INTO oam_sec.session_cache
            (pid, digest, username, data_roles, expires_at, grants_version)
        VALUES (pg_backend_pid(), v_digest, v_payload->>'u', ARRAY(
            SELECT DISTINCT g.role_name FROM oam_sec.data_role_grant g
             WHERE ((g.principal_type = 'user' AND v_payload->>'k' = 'local'
                     AND g.principal = v_payload->>'u')
                 OR (g.principal_type = 'group'
                     AND coalesce(v_payload->'g', '[]'::jsonb) ? g.principal))
               AND (jsonb_array_length(coalesce(v_payload->'r', '[]'::jsonb)) = 0
                    OR v_payload->'r' ? g.role_name)),
            to_timestamp((v_payload->>'exp')::double precision), v_version);
        RETURN v_payload->>'u';
    END
    $fn$""",
    # Sets the assertion for this transaction; returns the user it verifies as (NULL if none).
    # An assertion this backend already verified is found in one lookup; only a new one is
    # verified in full (verify_assertion).
    f"""CREATE OR REPLACE FUNCTION oam_sec.apply_assertion(assertion text) RETURNS text
        LANGUAGE sql VOLATILE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
        SELECT set_config('oam.end_user_assertion', coalesce(assertion, ''), true);
        SELECT CASE WHEN coalesce(assertion, '') = '' THEN NULL ELSE coalesce(
            (SELECT c.username FROM oam_sec.session_end_user c WHERE {_CURRENT_VERIFICATION}),
            oam_sec.verify_assertion()) END;
    $fn$""",
    # Called by the policies once per statement (an InitPlan). Plain SQL, not SECURITY DEFINER,
    # and not inlined (its body reads a table): planning a protected statement costs one
    # function call node per policy, and the body's plan is cached. Every operator and function
    # is schema-qualified, so no search_path can redirect it.
    f"""CREATE OR REPLACE FUNCTION oam_sec.verified_user(role text) RETURNS text
        LANGUAGE sql STABLE PARALLEL SAFE AS $fn$
        SELECT c.username FROM oam_sec.session_end_user c
         WHERE {_CURRENT_VERIFICATION}
           AND role OPERATOR(pg_catalog.=) ANY (c.data_roles)
    $fn$""",
    "REVOKE ALL ON ALL TABLES IN SCHEMA oam_sec FROM PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.claims() FROM PUBLIC",
    # Anyone may ask "who does my own assertion say I am?"; nobody may read the key tables.
    "GRANT USAGE ON SCHEMA oam_sec TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.end_user() TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.has_data_role(text) TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.apply_assertion(text) TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.verified_user(text) TO PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.bump_grants_version() FROM PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.verify_assertion() FROM PUBLIC",
    "GRANT SELECT ON oam_sec.grants_version TO PUBLIC",
    "GRANT SELECT ON oam_sec.session_end_user TO PUBLIC",
)
"""Idempotent statements that install or refresh the security schema."""

