"""The ``oam_sec`` security schema on PostgreSQL: installed and owned by the admin identity.

It holds application identities (an HMAC key per application, bound to the runtime login role
allowed to use it), local end users, data roles with their grants to end users and identity-
provider groups, and the policies installed per store. The runtime login can read none of it; it
can only call ``oam_sec.apply_assertion(assertion[, seal])``, ``oam_sec.end_user()``,
``oam_sec.has_data_role(role)`` and ``oam_sec.verified_user(role)`` (granted to PUBLIC: they only
ever describe the caller's own assertion). One policy administrator owns ``oam_sec`` per database;
to manage a store's policies it must be a member of the store's schema-owner role (or be that role).

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

On a session the SDK alone used since its last clean-session scan, the SDK applies with
:data:`SEALED_APPLY` instead: the same steps as plain SQL over what PUBLIC may read, handing
every case but a kept seal and an assertion verified already to ``apply_assertion``.
"""

from __future__ import annotations

from oracleagentmemory.engines.postgres.jwt_sql import JWT_INSTALL_STATEMENTS

ASSERTION_SETTING = "oam.end_user_assertion"
"""The transaction-local setting that carries the assertion."""
CACHE_LIMIT = 256
"""At most this many verified assertions are kept per backend (emptied past it)."""
MAX_LIFETIME_SECONDS = 900
"""The database refuses an assertion whose expiry lies further ahead than this."""

_CURRENT_VERIFICATION = """pg_catalog.current_setting('transaction_isolation')
               OPERATOR(pg_catalog.=) 'read committed'
           AND c.expires_at OPERATOR(pg_catalog.>) pg_catalog.statement_timestamp()
           AND c.grants_version OPERATOR(pg_catalog.=)
               (SELECT v.version FROM oam_sec.grants_version v)"""
"""The row of ``oam_sec.session_end_user`` (alias ``c``; the view holds only the current
assertion's row, it compares the digest) that verified the current assertion: unexpired at
the statement's start (not the transaction's: an assertion stops working mid-transaction),
and no grant changed since. Only under READ COMMITTED: a REPEATABLE READ or SERIALIZABLE
snapshot would keep showing grants, users and keys as they were when the transaction began,
so a revoke would never reach it. Schema-qualified throughout, so no search_path can
redirect it."""

SEAL_SETTING = "oam.session_seal"
"""The session-level setting holding the seal of the last clean-session scan that passed."""
MIN_SEAL_CHARACTERS = 32
"""A shorter seal never lets the scan be skipped."""

TOKEN_LEEWAY_SECONDS = 30
"""Clock skew allowed on an identity-provider token's ``exp``, ``nbf`` and ``iat``."""

_TABLES = ("application", "end_user", "data_role", "data_role_grant", "identity_provider",
           "application_store", "application_idp")
"""Tables whose changes invalidate every recorded verification."""

_SESSION_SETTINGS = """pg_catalog.current_setting('client_encoding') OPERATOR(pg_catalog.=) 'UTF8'
           AND pg_catalog.current_setting('DateStyle') OPERATOR(pg_catalog.~~) 'ISO,%'
           AND pg_catalog.current_setting('row_security') OPERATOR(pg_catalog.=) 'on'
           AND pg_catalog.current_setting('transaction_read_only') OPERATOR(pg_catalog.=) 'off'"""
"""The settings the SDK reads results with (part of :data:`_PRISTINE_SESSION`)."""

_SESSION_OBJECTS_ABSENT = (
    "NOT EXISTS (SELECT 1 FROM pg_catalog.pg_prepared_statements s WHERE s.from_sql)"
    """
           AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_cursors k WHERE k.is_holdable)
           AND (pg_catalog.pg_my_temp_schema() OPERATOR(pg_catalog.=) 0 OR NOT EXISTS (
                SELECT 1 FROM pg_catalog.pg_depend d
                 WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_namespace'::regclass
                   AND d.refobjid OPERATOR(pg_catalog.=) pg_catalog.pg_my_temp_schema()))""")
"""The session-lived objects of :data:`_PRISTINE_SESSION`: the scan a sealed session skips."""

_PRISTINE_SESSION = f"({_SESSION_SETTINGS}\n           AND {_SESSION_OBJECTS_ABSENT})"
"""Whether this session holds nothing its own SQL made that could stand in for what the SDK
runs as the end user, or make it misread results. Checked before every assertion is set:

- the settings the SDK reads results with: UTF8, ISO dates, row security on, a writable
  transaction;
- no prepared statement created by SQL (``PREPARE`` can replace the SDK's protocol-level
  statements, which SQL cannot create);
- no object at all in its temporary schema (a temp table shadows an unqualified table name, a
  temp type or domain an unqualified type such as ``jsonb``, and a domain's ``CHECK`` runs any
  function); every object of a schema depends on it in ``pg_depend``;
- no holdable cursor (a ``WITH HOLD`` cursor outlives the transaction that declared it; others
  end with it, and the apply opens the transaction).
"""

_REFUSE = ("pg_catalog.int4div(1, pg_catalog.int4(pg_catalog.statement_timestamp() IS NULL))"
           "::pg_catalog.text")
"""Division by zero, which the planner cannot fold: how an apply refuses in a pipeline, so the
server skips every statement queued after it."""

SEALED_APPLY = f"""SELECT COALESCE(
    (SELECT c.username FROM oam_sec.session_end_user c
      WHERE {_SESSION_SETTINGS}
        AND pg_catalog.current_setting('{SEAL_SETTING}', true) OPERATOR(pg_catalog.=) $2
        AND {_CURRENT_VERIFICATION}),
    oam_sec.apply_assertion($1, $2),
    {_REFUSE})
  WHERE pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true) IS NOT NULL
    AND pg_catalog.set_config('{ASSERTION_SETTING}', $1, true) IS NOT NULL"""
"""The apply of a session the SDK alone used since its last clean-session scan
(``session_seals``): the steps of ``oam_sec.apply_assertion($1, $2)`` when the seal ``$2`` is
the session's and the assertion ``$1`` verified already, as plain SQL of the runtime login (no
``SECURITY DEFINER``, no ``SET search_path``, no PL/pgSQL: it reads only what PUBLIC may read,
and every name and operator is schema-qualified). Its one-time filter sets the transaction's
generic plans and assertion; then the settings the SDK reads results with and the seal are
checked and the assertion looked up in the session's verified assertions (an InitPlan, run
when the COALESCE first needs it, so after the assertion is set). Any other case (settings,
seal, an assertion not verified here yet, expired, or verified before a grant changed) is
``oam_sec.apply_assertion``'s, which scans, verifies or refuses; a refusal fails the statement
(:data:`_REFUSE`). The SDK runs it only as a named statement of a sealed session, prepared
after its scan passed."""

INSTALL_STATEMENTS: tuple[str, ...] = (
    "CREATE SCHEMA IF NOT EXISTS oam_sec",
    "REVOKE ALL ON SCHEMA oam_sec FROM PUBLIC",
    """CREATE TABLE IF NOT EXISTS oam_sec.application (
        app_name text PRIMARY KEY CHECK (app_name ~ '^[a-z][a-z0-9_]{0,62}$'),
        login_role text NOT NULL,
        ipad_key bytea NOT NULL CHECK (length(ipad_key) = 64),
        opad_key bytea NOT NULL CHECK (length(opad_key) = 64),
        created_at timestamptz NOT NULL DEFAULT now())""",
    # Token mode: the application key alone speaks for nobody; every end user must come with a
    # token of an identity provider the application is bound to.
    "ALTER TABLE oam_sec.application ADD COLUMN IF NOT EXISTS require_token boolean NOT NULL "
    "DEFAULT false",
    """CREATE TABLE IF NOT EXISTS oam_sec.end_user (
        username text PRIMARY KEY CHECK (length(username) BETWEEN 1 AND 128),
        created_at timestamptz NOT NULL DEFAULT now())""",
    # An identity provider is a namespace: its users' rows carry '<name>:<user>' and its groups
    # are granted as '<name>:<group>', so they never meet local end users (no ':' in their
    # names) or another provider's users.
    """CREATE TABLE IF NOT EXISTS oam_sec.identity_provider (
        name text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,30}$'),
        issuer text NOT NULL UNIQUE CHECK (length(issuer) BETWEEN 1 AND 1024),
        audience text NOT NULL CHECK (length(audience) BETWEEN 1 AND 1024),
        jwks jsonb NOT NULL CHECK (jsonb_typeof(jwks->'keys') = 'array'),
        user_claim text NOT NULL DEFAULT 'sub' CHECK (length(user_claim) BETWEEN 1 AND 128),
        groups_claim text NOT NULL DEFAULT 'groups'
            CHECK (length(groups_claim) BETWEEN 1 AND 128),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now())""",
    # The stores and identity providers an application may act for; the database grants its
    # end users nothing elsewhere.
    """CREATE TABLE IF NOT EXISTS oam_sec.application_store (
        app_name text NOT NULL REFERENCES oam_sec.application (app_name) ON DELETE CASCADE,
        schema_name text NOT NULL,
        store_key text NOT NULL,
        PRIMARY KEY (app_name, schema_name, store_key))""",
    """CREATE TABLE IF NOT EXISTS oam_sec.application_idp (
        app_name text NOT NULL REFERENCES oam_sec.application (app_name) ON DELETE CASCADE,
        idp_name text NOT NULL REFERENCES oam_sec.identity_provider (name) ON DELETE CASCADE,
        PRIMARY KEY (app_name, idp_name))""",
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
      for table in _TABLES),
    *JWT_INSTALL_STATEMENTS,
    # The claims of the current assertion, verified and normalised, or NULL: {"app", "k",
    # "u" (the user name rows carry), "g" (namespaced groups), "r" (requested data roles),
    # "exp" (epoch seconds; the earlier of the assertion's and its token's)}.
    f"""CREATE OR REPLACE FUNCTION oam_sec.claims() RETURNS jsonb
        LANGUAGE plpgsql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        assertion text := current_setting('oam.end_user_assertion', true);
        at timestamptz := statement_timestamp();
        body text;
        signature text;
        payload jsonb;
        app oam_sec.application%ROWTYPE;
        idp oam_sec.identity_provider%ROWTYPE;
        kind text;
        username text;
        groups jsonb := '[]';
        expiry double precision;
        token jsonb;
    BEGIN
        IF assertion IS NULL OR assertion = ''
                OR current_setting('transaction_isolation') <> 'read committed' THEN
            RETURN NULL;
        END IF;
        -- Exactly <hex body>.<64 hex digits>: nothing before, between or after.
        IF length(assertion) > 65601
                OR assertion !~ '^([0-9a-f][0-9a-f])+[.][0-9a-f]{{64}}$' THEN
            RETURN NULL;
        END IF;
        body := split_part(assertion, '.', 1);
        signature := split_part(assertion, '.', 2);
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
        -- Against the statement's time, not the transaction's; and never too far ahead.
        IF jsonb_typeof(payload->'exp') IS DISTINCT FROM 'number' THEN
            RETURN NULL;
        END IF;
        expiry := (payload->>'exp')::double precision;
        IF expiry <= extract(epoch FROM at)
                OR expiry > extract(epoch FROM at) + {MAX_LIFETIME_SECONDS} THEN
            RETURN NULL;
        END IF;
        kind := payload->>'k';
        IF app.require_token AND kind IS DISTINCT FROM 'token' THEN
            RETURN NULL;
        END IF;
        IF kind = 'local' THEN
            username := payload->>'u';
            IF coalesce(username, '') = '' OR position(':' IN username) > 0
                    OR NOT EXISTS (SELECT 1 FROM oam_sec.end_user WHERE end_user.username
                                   = payload->>'u') THEN
                RETURN NULL;
            END IF;
        ELSIF kind = 'idp' THEN
            -- A user the application vouches for, of a provider it is bound to.
            SELECT i.* INTO idp FROM oam_sec.identity_provider i
              JOIN oam_sec.application_idp b ON b.idp_name = i.name
             WHERE b.app_name = app.app_name AND i.name = payload->>'p';
            IF NOT FOUND OR coalesce(payload->>'u', '') = ''
                    OR jsonb_typeof(coalesce(payload->'g', '[]')) <> 'array' THEN
                RETURN NULL;
            END IF;
            username := idp.name || ':' || (payload->>'u');
            groups := coalesce(payload->'g', '[]');
        ELSIF kind = 'token' THEN
            -- The provider's own token, verified here: issuer, audience, lifetime, RS256.
            SELECT i.* INTO idp FROM oam_sec.identity_provider i
              JOIN oam_sec.application_idp b ON b.idp_name = i.name
             WHERE b.app_name = app.app_name AND i.issuer = convert_from(oam_sec.b64url_decode(
                   split_part(payload->>'t', '.', 2)), 'UTF8')::jsonb->>'iss';
            IF NOT FOUND THEN
                RETURN NULL;
            END IF;
            token := oam_sec.jwt_rs256_claims(payload->>'t', idp.jwks, idp.issuer, idp.audience,
                                              at, {TOKEN_LEEWAY_SECONDS});
            IF token IS NULL OR jsonb_typeof(token->idp.user_claim) IS DISTINCT FROM 'string'
                    OR token->>idp.user_claim = '' THEN
                RETURN NULL;
            END IF;
            username := idp.name || ':' || (token->>idp.user_claim);
            IF jsonb_typeof(token->idp.groups_claim) = 'array' THEN
                groups := token->idp.groups_claim;
            END IF;
            expiry := least(expiry, (token->>'exp')::double precision + {TOKEN_LEEWAY_SECONDS});
        ELSE
            RETURN NULL;
        END IF;
        IF length(username) > 300 THEN
            RETURN NULL;
        END IF;
        RETURN jsonb_build_object(
            'app', app.app_name, 'k', kind, 'u', username, 'exp', expiry,
            'r', coalesce(payload->'r', '[]'),
            'g', coalesce((SELECT jsonb_agg(idp.name || ':' || (g #>> '{{}}')) FROM
                           jsonb_array_elements(groups) g WHERE jsonb_typeof(g) = 'string'),
                          '[]'));
    EXCEPTION WHEN others THEN
        RETURN NULL;
    END
    $fn$""",
    # The data roles the verified claims hold: those granted to the local user or to one of
    # the namespaced groups, on stores the application is bound to, narrowed to the requested
    # roles when there are any.
    """CREATE OR REPLACE FUNCTION oam_sec.granted_roles(p jsonb) RETURNS text[]
        LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
        SELECT coalesce(array_agg(DISTINCT g.role_name ORDER BY g.role_name), '{}')
          FROM oam_sec.data_role_grant g
          JOIN oam_sec.data_role d ON d.role_name = g.role_name
          JOIN oam_sec.application_store s ON s.schema_name = d.schema_name
               AND s.store_key = d.store_key AND s.app_name = p->>'app'
         WHERE p IS NOT NULL
           AND ((g.principal_type = 'user' AND p->>'k' = 'local' AND g.principal = p->>'u')
             OR (g.principal_type = 'group' AND p->'g' ? g.principal))
           AND (jsonb_array_length(p->'r') = 0 OR p->'r' ? g.role_name)
    $fn$""",
    """CREATE OR REPLACE FUNCTION oam_sec.end_user() RETURNS text
        LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
        SELECT oam_sec.claims()->>'u'
    $fn$""",
    """CREATE OR REPLACE FUNCTION oam_sec.has_data_role(role text) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
        SELECT role = ANY(oam_sec.granted_roles(oam_sec.claims()))
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
    # The login that verified the row: a later backend of another login that reuses the pid
    # must not find it (the application and its login were checked only then).
    "ALTER TABLE oam_sec.session_cache ADD COLUMN IF NOT EXISTS login text NOT NULL DEFAULT ''",
    "CREATE INDEX IF NOT EXISTS session_cache_expiry_ix ON oam_sec.session_cache (expires_at)",
    # What the runtime may read of it: the row of its current assertion only (security_barrier:
    # no leaky function of the caller's sees other rows). Earlier users of the same backend
    # stay hidden.
    """CREATE OR REPLACE VIEW oam_sec.session_end_user WITH (security_barrier) AS
        SELECT digest, username, data_roles, expires_at, grants_version
        FROM oam_sec.session_cache
        WHERE pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()
          AND login OPERATOR(pg_catalog.=) (SESSION_USER)::text
          AND digest OPERATOR(pg_catalog.=) pg_catalog.sha256(pg_catalog.convert_to(
              pg_catalog.current_setting('oam.end_user_assertion', true), 'UTF8'))""",
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
           AND (c.digest = v_digest OR c.grants_version <> v_version
                OR c.expires_at <= statement_timestamp());
        -- Expired rows of other backends (exited ones included), never waiting for a backend
        -- that is removing the same rows.
        DELETE FROM oam_sec.session_cache c WHERE c.ctid IN (
            SELECT x.ctid FROM oam_sec.session_cache x
             WHERE x.expires_at <= statement_timestamp()
             LIMIT 1000 FOR UPDATE SKIP LOCKED);
        IF (SELECT count(*) FROM oam_sec.session_cache c WHERE c.pid = pg_backend_pid())
                >= {CACHE_LIMIT} THEN
            DELETE FROM oam_sec.session_cache c WHERE c.pid = pg_backend_pid();
        END IF;
        INSERT INTO oam_sec.session_cache
            (pid, digest, username, data_roles, expires_at, grants_version, login)
        VALUES (pg_backend_pid(), v_digest, v_payload->>'u', oam_sec.granted_roles(v_payload),
                to_timestamp((v_payload->>'exp')::double precision), v_version, session_user);
        RETURN v_payload->>'u';
    END
    $fn$""",
    # Sets the assertion for this transaction; returns the user it verifies as (NULL if none).
    # An assertion this backend already verified is found in one lookup; only a new one is
    # verified in full (verify_assertion). A session whose SQL could redirect the statements
    # that run as the end user gets no assertion at all (_PRISTINE_SESSION). The transaction
    # also gets generic plans: under row-level security planning costs several times more
    # (every policy adds its lookups), and the store's statements plan alike for any values.
    # With a seal (connections the SDK pools itself, engines/postgres/session_seals.py): the
    # scan for session-lived objects is skipped when the seal is the one this session kept
    # from its last scan that passed, and a scan that passes keeps the caller's seal (a
    # session-level setting; a rolled-back apply leaves the earlier one). The SDK sends a seal
    # nobody has seen whenever SQL other than its own may have run on the session since, so
    # what that SQL could read or set of the setting never counts. Without one (NULL, or
    # shorter than MIN_SEAL_CHARACTERS) every call scans. The settings are checked every time.
    # PL/pgSQL: its expressions run without a statement each (about 20 us less per call than
    # the same steps as an SQL function).
    "DROP FUNCTION IF EXISTS oam_sec.apply_assertion(text)",  # one argument until the seal
    f"""CREATE OR REPLACE FUNCTION oam_sec.apply_assertion(assertion text, seal text DEFAULT NULL)
        RETURNS text LANGUAGE plpgsql VOLATILE SECURITY DEFINER
        SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        v_set text;
        v_user text;
    BEGIN
        v_set := set_config('plan_cache_mode', 'force_generic_plan', true);
        IF NOT coalesce({_SESSION_SETTINGS}, false) THEN
            v_set := set_config('oam.end_user_assertion', '', true);
            RETURN NULL;
        END IF;
        IF seal IS NULL OR length(seal) < {MIN_SEAL_CHARACTERS}
                OR current_setting('oam.session_seal', true) IS DISTINCT FROM seal THEN
            IF NOT coalesce({_SESSION_OBJECTS_ABSENT}, false) THEN
                v_set := set_config('oam.end_user_assertion', '', true);
                RETURN NULL;
            END IF;
            IF length(seal) >= {MIN_SEAL_CHARACTERS} THEN
                v_set := set_config('oam.session_seal', seal, false);
            END IF;
        END IF;
        IF set_config('oam.end_user_assertion', coalesce(assertion, ''), true) = '' THEN
            RETURN NULL;
        END IF;
        SELECT c.username INTO v_user FROM oam_sec.session_end_user c
         WHERE {_CURRENT_VERIFICATION};
        RETURN coalesce(v_user, oam_sec.verify_assertion());
    END
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
    "REVOKE ALL ON FUNCTION oam_sec.granted_roles(jsonb) FROM PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.b64url_decode(text) FROM PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.bytes_to_numeric(bytea) FROM PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.modexp(numeric, numeric, numeric) FROM PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.jwt_rs256_claims(text, jsonb, text, text, timestamptz, "
    "integer) FROM PUBLIC",
    # Anyone may ask "who does my own assertion say I am?"; nobody may read the key tables.
    "GRANT USAGE ON SCHEMA oam_sec TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.end_user() TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.has_data_role(text) TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.apply_assertion(text, text) TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.verified_user(text) TO PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.bump_grants_version() FROM PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.verify_assertion() FROM PUBLIC",
    "DROP FUNCTION IF EXISTS oam_sec.session_is_pristine()",  # inlined since
    "GRANT SELECT ON oam_sec.grants_version TO PUBLIC",
    "GRANT SELECT ON oam_sec.session_end_user TO PUBLIC",
)
"""Idempotent statements that install or refresh the security schema."""

