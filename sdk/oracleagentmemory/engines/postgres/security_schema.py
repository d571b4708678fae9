"""The ``oam_sec`` security schema on PostgreSQL: installed and owned by the admin identity.

It holds application identities (an HMAC key per application, bound to the runtime login role
allowed to use it), local end users, data roles with their grants to end users and identity-
provider groups, and the policies installed per store. The runtime login can read none of it; it
can only call ``oam_sec.end_user()``, ``oam_sec.has_data_role(role)`` and
``oam_sec.apply_assertion(assertion)`` (granted to PUBLIC: they only ever describe the caller's own
assertion). One policy administrator owns ``oam_sec`` per database; to manage a store's policies
it must be a member of the store's schema-owner role (or be that role).

An end-user assertion is ``<hex(json claims)>.<hex(HMAC-SHA-256(key, hex(json claims)))>``. The
claims are ``{"app", "u" (user), "k" ("local" or "idp"), "g" (groups), "r" (requested data
roles), "exp" (epoch seconds), "n" (nonce)}``. HMAC is computed with the built-in ``sha256()``
from keys stored pre-padded (``key XOR ipad``, ``key XOR opad``); no extension is needed.
"""

from __future__ import annotations

ASSERTION_SETTING = "oam.end_user_assertion"
"""The transaction-local setting that carries the assertion."""

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
    """CREATE OR REPLACE FUNCTION oam_sec.apply_assertion(assertion text) RETURNS text
        LANGUAGE plpgsql VOLATILE AS $fn$
    BEGIN
        PERFORM set_config('oam.end_user_assertion', assertion, true);
        RETURN oam_sec.end_user();
    END
    $fn$""",
    "REVOKE ALL ON ALL TABLES IN SCHEMA oam_sec FROM PUBLIC",
    "REVOKE ALL ON FUNCTION oam_sec.claims() FROM PUBLIC",
    # Anyone may ask "who does my own assertion say I am?"; nobody may read the key tables.
    "GRANT USAGE ON SCHEMA oam_sec TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.end_user() TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.has_data_role(text) TO PUBLIC",
    "GRANT EXECUTE ON FUNCTION oam_sec.apply_assertion(text) TO PUBLIC",
)
"""Idempotent statements that install or refresh the security schema."""

