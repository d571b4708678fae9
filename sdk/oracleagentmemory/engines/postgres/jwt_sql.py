"""Verify an identity provider's RS256 JWT inside PostgreSQL, with no extension.

:data:`JWT_INSTALL_STATEMENTS` creates, in the existing ``oam_sec`` schema, plain PL/pgSQL
functions that verify an RS256 (RSASSA-PKCS1-v1_5 with SHA-256) JSON Web Token against a JWKS
given as ``jsonb``: base64url decoding, big-endian bytes to ``numeric``, modular exponentiation
on ``numeric`` (exact at any size PostgreSQL supports) and the built-in ``sha256()``.

``oam_sec.jwt_rs256_claims(token, jwks, issuer, audience, at, leeway_seconds)`` returns the
token's claims only when the header, key selection, signature and the ``iss``, ``aud``,
``exp``, ``nbf`` and ``iat`` claims all check out, and NULL otherwise; it never raises (except
for a cancel or a statement timeout, which it lets through).

Every function runs with ``search_path = pg_catalog, pg_temp``, so built-in functions,
operators and types always win over same-named objects elsewhere (``pg_temp`` is never
searched for functions or operators, and comes after ``pg_catalog`` for types); the ``oam_sec``
helpers are called schema-qualified. Bytea constants are built with ``decode(..., 'hex')`` so
the bodies mean the same whatever ``standard_conforming_strings`` is. The statements are
idempotent (``CREATE OR REPLACE``) and assume ``CREATE SCHEMA IF NOT EXISTS oam_sec`` has run;
they grant nothing: whoever may call them needs ``USAGE`` on ``oam_sec``.
"""

from __future__ import annotations

MAX_TOKEN_OCTETS = 16384
"""Longer tokens are rejected before any decoding."""

_B64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

JWT_INSTALL_STATEMENTS: tuple[str, ...] = (
    # base64url (RFC 4648 section 5) without padding. Invalid input gives NULL, never an
    # error: a character outside the alphabet (padding '=' included), a length of 1 mod 4,
    # or a non-canonical encoding (non-zero unused trailing bits), so each byte string has
    # exactly one accepted encoding and a signature cannot be re-encoded.
    f"""CREATE OR REPLACE FUNCTION oam_sec.b64url_decode(data text) RETURNS bytea
        LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
        SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        n integer := length(data);
        raw bytea;
    BEGIN
        IF translate(data, '{_B64URL_ALPHABET}', '') <> '' OR mod(n, 4) = 1 THEN
            RETURN NULL;
        END IF;
        raw := decode(translate(data, '-_', '+/') || repeat('=', mod(4 - mod(n, 4), 4)),
                      'base64');
        -- encode() wraps lines at 76 characters and pads; translate() drops both.
        IF translate(encode(raw, 'base64'), E'+/\\n=', '-_') <> data THEN
            RETURN NULL;
        END IF;
        RETURN raw;
    END
    $fn$""",
    # Big-endian unsigned bytes to numeric (the empty string is 0). The hex digits are
    # left-padded to a multiple of 15 and taken 15 (60 bits, which fit a positive bigint) per
    # step, one statement per step, so a 4096-bit value takes 69 steps.
    """CREATE OR REPLACE FUNCTION oam_sec.bytes_to_numeric(data bytea) RETURNS numeric
        LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
        SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        steps integer := div(2 * octet_length(data) + 14, 15)::integer;
        hex text := lpad(encode(data, 'hex'), 15 * steps, '0');
        acc numeric := 0;
    BEGIN
        FOR i IN 0..steps - 1 LOOP
            acc := acc * 1152921504606846976
                   + ('x0' || substr(hex, 15 * i + 1, 15))::bit(64)::bigint;
        END LOOP;
        RETURN acc;
    END
    $fn$""",
    # base ^ exp mod modulus by right-to-left square-and-multiply, exact for integers of any
    # size (numeric '*' is exact; mod() and div() truncate exactly). The exponent is consumed
    # 30 bits at a time as a bigint. NULL unless all three are integers, exp >= 0 and
    # modulus >= 1; a negative base is reduced into [0, modulus).
    """CREATE OR REPLACE FUNCTION oam_sec.modexp(base numeric, exp numeric, modulus numeric)
        RETURNS numeric LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
        SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        m numeric := trunc(modulus);
        b numeric;
        e numeric := trunc(exp);
        result numeric := 1;
        chunk bigint;
    BEGIN
        IF base <> trunc(base) OR exp <> trunc(exp) OR modulus <> trunc(modulus)
                OR e < 0 OR m < 1 THEN
            RETURN NULL;
        END IF;
        IF m = 1 THEN
            RETURN 0;
        END IF;
        b := mod(trunc(base), m);
        IF b < 0 THEN
            b := b + m;
        END IF;
        WHILE e > 0 LOOP
            chunk := mod(e, 1073741824)::bigint;
            e := div(e, 1073741824);
            FOR i IN 1..30 LOOP
                IF (chunk & 1) = 1 THEN
                    result := mod(result * b, m);
                END IF;
                chunk := chunk >> 1;
                EXIT WHEN chunk = 0 AND e = 0;
                b := mod(b * b, m);
            END LOOP;
        END LOOP;
        RETURN result;
    END
    $fn$""",
    # The claims of an RS256 JWT, or NULL unless all of these hold (RFC 7515, 7518, 7519,
    # 8017): at most MAX_TOKEN_OCTETS; exactly three non-empty canonical base64url parts;
    # the header is a JSON object with "alg" exactly "RS256", no "crit", and "typ" (if
    # present) "JWT" or "at+jwt" in any case; the key is the one key of jwks->'keys' with
    # "kty" "RSA", the header's "kid" (a string) and, where present, "use" "sig", "alg"
    # "RS256" and "key_ops" containing "verify" (without a "kid" the JWKS must hold exactly
    # one RSA key, which must qualify likewise); its modulus has 2048..8192 bits (leading zero
    # octets ignored) and is odd, its exponent is odd in 3..2^31-1; the signature has exactly
    # k octets (k = modulus length) and is < n; s^e mod n equals, as an integer and so over
    # all k octets, the EMSA-PKCS1-v1_5 encoding 00 01 FF..FF 00 || DigestInfo(SHA-256) ||
    # SHA-256(header_b64 '.' payload_b64); the payload is a JSON object whose "iss" is issuer,
    # whose "aud" is audience or an array holding it, with a numeric "exp" and
    # at < exp + leeway, at >= nbf - leeway if "nbf" is present (numeric), iat <= at + leeway
    # if "iat" is present (numeric). NULL too for any NULL argument, a negative leeway or an
    # infinite ``at``. The cheap checks run before the RSA arithmetic.
    """CREATE OR REPLACE FUNCTION oam_sec.jwt_rs256_claims(
            token text, jwks jsonb, issuer text, audience text, at timestamptz,
            leeway_seconds integer DEFAULT 0)
        RETURNS jsonb LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE
        SET search_path = pg_catalog, pg_temp AS $fn$
    DECLARE
        parts text[];
        header jsonb;
        claims jsonb;
        candidates jsonb[];
        jwk jsonb;
        n_raw bytea;
        e_raw bytea;
        sig bytea;
        k integer;
        bits integer;
        e bigint;
        n numeric;
        s numeric;
        em bytea;
        now_s numeric;
        leeway numeric := leeway_seconds;
    BEGIN
        IF octet_length(token) > """ + str(MAX_TOKEN_OCTETS) + """ OR leeway_seconds < 0
                OR NOT isfinite(at) THEN
            RETURN NULL;
        END IF;
        parts := string_to_array(token, '.');
        IF cardinality(parts) <> 3 OR parts[1] = '' OR parts[2] = '' OR parts[3] = '' THEN
            RETURN NULL;
        END IF;

        header := convert_from(oam_sec.b64url_decode(parts[1]), 'UTF8')::jsonb;
        IF NOT coalesce(jsonb_typeof(header) = 'object'
                AND header->'alg' = '"RS256"'::jsonb
                AND NOT header ? 'crit'
                AND (NOT header ? 'typ' OR (jsonb_typeof(header->'typ') = 'string'
                     AND lower(header->>'typ') IN ('jwt', 'at+jwt')))
                AND (NOT header ? 'kid' OR jsonb_typeof(header->'kid') = 'string')
                AND jsonb_typeof(jwks->'keys') = 'array', false) THEN
            RETURN NULL;
        END IF;

        claims := convert_from(oam_sec.b64url_decode(parts[2]), 'UTF8')::jsonb;
        now_s := extract(epoch FROM at);
        IF NOT coalesce(jsonb_typeof(claims) = 'object'
                AND claims->'iss' = to_jsonb(issuer)
                AND (claims->'aud' = to_jsonb(audience)
                     OR (jsonb_typeof(claims->'aud') = 'array' AND EXISTS (
                         SELECT FROM jsonb_array_elements(claims->'aud') AS a(v)
                         WHERE a.v = to_jsonb(audience))))
                AND jsonb_typeof(claims->'exp') = 'number'
                AND now_s < (claims->>'exp')::numeric + leeway
                AND (NOT claims ? 'nbf' OR (jsonb_typeof(claims->'nbf') = 'number'
                     AND now_s >= (claims->>'nbf')::numeric - leeway))
                AND (NOT claims ? 'iat' OR (jsonb_typeof(claims->'iat') = 'number'
                     AND (claims->>'iat')::numeric <= now_s + leeway)), false) THEN
            RETURN NULL;
        END IF;

        IF header ? 'kid' THEN
            SELECT array_agg(j.key) INTO candidates
                FROM jsonb_array_elements(jwks->'keys') AS j(key)
                WHERE j.key->'kty' = '"RSA"'::jsonb AND j.key->'kid' = header->'kid';
        ELSE
            SELECT array_agg(j.key) INTO candidates
                FROM jsonb_array_elements(jwks->'keys') AS j(key)
                WHERE j.key->'kty' = '"RSA"'::jsonb;
        END IF;
        IF coalesce(cardinality(candidates), 0) <> 1 THEN
            RETURN NULL;
        END IF;
        jwk := candidates[1];
        IF NOT coalesce((NOT jwk ? 'use' OR jwk->'use' = '"sig"'::jsonb)
                AND (NOT jwk ? 'alg' OR jwk->'alg' = '"RS256"'::jsonb)
                AND (NOT jwk ? 'key_ops' OR (jsonb_typeof(jwk->'key_ops') = 'array'
                     AND jwk->'key_ops' @> '["verify"]'::jsonb))
                AND jsonb_typeof(jwk->'n') = 'string'
                AND jsonb_typeof(jwk->'e') = 'string', false) THEN
            RETURN NULL;
        END IF;

        n_raw := ltrim(oam_sec.b64url_decode(jwk->>'n'), decode('00', 'hex'));
        e_raw := ltrim(oam_sec.b64url_decode(jwk->>'e'), decode('00', 'hex'));
        sig := oam_sec.b64url_decode(parts[3]);
        k := octet_length(n_raw);
        IF NOT coalesce(k BETWEEN 256 AND 1024 AND octet_length(e_raw) BETWEEN 1 AND 4
                AND octet_length(sig) = k AND (get_byte(n_raw, k - 1) & 1) = 1, false) THEN
            RETURN NULL;
        END IF;
        bits := 8 * (k - 1) + length(ltrim(get_byte(n_raw, 0)::bit(8)::text, '0'));
        e := ('x' || lpad(encode(e_raw, 'hex'), 16, '0'))::bit(64)::bigint;
        IF bits NOT BETWEEN 2048 AND 8192 OR e < 3 OR e > 2147483647 OR (e & 1) = 0 THEN
            RETURN NULL;
        END IF;
        n := oam_sec.bytes_to_numeric(n_raw);
        s := oam_sec.bytes_to_numeric(sig);
        IF s >= n THEN
            RETURN NULL;
        END IF;
        em := decode('0001' || repeat('ff', k - 54)
                     || '003031300d060960864801650304020105000420', 'hex')
              || sha256(convert_to(parts[1] || '.' || parts[2], 'UTF8'));
        IF oam_sec.modexp(s, e, n) IS DISTINCT FROM oam_sec.bytes_to_numeric(em) THEN
            RETURN NULL;
        END IF;
        RETURN claims;
    EXCEPTION WHEN OTHERS THEN
        RETURN NULL;
    END
    $fn$""",
    "COMMENT ON FUNCTION oam_sec.b64url_decode(text) IS "
    "'base64url without padding to bytea; NULL unless valid and canonical'",
    "COMMENT ON FUNCTION oam_sec.bytes_to_numeric(bytea) IS "
    "'big-endian unsigned bytes to numeric'",
    "COMMENT ON FUNCTION oam_sec.modexp(numeric, numeric, numeric) IS "
    "'base ^ exp mod modulus, exact; NULL unless integers with exp >= 0 and modulus >= 1'",
    "COMMENT ON FUNCTION oam_sec.jwt_rs256_claims(text, jsonb, text, text, timestamptz, "
    "integer) IS 'claims of an RS256 JWT verified against the JWKS, issuer, audience and "
    "time; NULL if anything fails'",
)
"""Idempotent statements creating ``oam_sec.b64url_decode``, ``oam_sec.bytes_to_numeric``,
``oam_sec.modexp`` and ``oam_sec.jwt_rs256_claims``."""
