#!/bin/sh
# Provisions the demo tenant of deploy/compose.yaml through oam-admin, as the admin identity
# (the PostgreSQL superuser of the db service): a development issuer standing in for the
# identity provider, the memory store and its Deep Data Security policies, the identity
# provider, the runtime login, the application identity (its token written for the gateway),
# the grant of the policies to the provider's group, and the database write audit.
#
# Run once by the compose service "provision" before the gateway starts; running it again does
# nothing more (each step leaves a marker in the state directory; `docker compose down -v`
# removes the markers together with the database). Secrets are read from files, never taken
# from the command line.
set -eu

SECRETS_DIR=${SECRETS_DIR:-/run/secrets}
STATE_DIR=${OAM_STATE_DIR:-/var/lib/oam-gateway}      # shared with the gateway (read-only there)
ISSUER_DIR=${OAM_ISSUER_DIR:-/var/lib/oam-issuer}     # the demo issuer's private key: never shared
STORE=${OAM_MEMORY_STORE_ID:-demo}
SCHEMA_OWNER=${OAM_SCHEMA_OWNER:-public}
IDP=${OAM_IDENTITY_PROVIDER:-demo}
ISSUER=${OAM_ISSUER:-https://dev-issuer.oam.local}
AUDIENCE=${OAM_AUDIENCE:-oam-gateway}
GROUP=${OAM_GROUP:-users}
LOGIN=${OAM_RUNTIME_LOGIN:-oam_runtime}
APP=${OAM_APPLICATION:-oam_gateway}
VECTOR_DIM=${OAM_VECTOR_DIM:-256}

if [ -z "${OAM_ADMIN_URL:-}" ]; then
    # The superuser's password reaches libpq through PGPASSWORD, not through a URL or argv.
    PGPASSWORD=$(cat "$SECRETS_DIR/postgres_password")
    export PGPASSWORD
    export OAM_ADMIN_URL="postgresql://postgres@${OAM_DB_HOST:-db}:5432/${OAM_DB_NAME:-oam}"
fi

umask 077
mkdir -p "$STATE_DIR" "$ISSUER_DIR"

done_already() { [ -f "$STATE_DIR/.provisioned-$1" ]; }
mark_done() { : > "$STATE_DIR/.provisioned-$1"; }

if ! done_already issuer; then
    oam-admin dev-issuer init --dir "$ISSUER_DIR" --issuer "$ISSUER"
    oam-admin dev-issuer jwks --dir "$ISSUER_DIR" > "$STATE_DIR/jwks.json.new"
    mv "$STATE_DIR/jwks.json.new" "$STATE_DIR/jwks.json"
    mark_done issuer
fi

# Both create what is absent and check what exists: safe to repeat.
oam-admin store create --memory-store-id "$STORE" --vector-dim "$VECTOR_DIM"
oam-admin policies add --memory-store-id "$STORE" --schema-owner "$SCHEMA_OWNER"

if ! done_already idp; then
    oam-admin idp add --name "$IDP" --issuer "$ISSUER" --audience "$AUDIENCE" \
        --jwks-file "$STATE_DIR/jwks.json"
    mark_done idp
fi

if ! done_already runtime-login; then
    oam-admin runtime-login create --login "$LOGIN" --schema-owner "$SCHEMA_OWNER" \
        --password-stdin < "$SECRETS_DIR/runtime_password"
    mark_done runtime-login
fi

if ! done_already application; then
    # The database mints the application's token and shows it once: it goes to a file of mode
    # 0600 that only the gateway's user (the same UID) reads.
    oam-admin application create --name "$APP" --login "$LOGIN" --store "$STORE" \
        --schema-owner "$SCHEMA_OWNER" --idp "$IDP" > "$STATE_DIR/app_token.new"
    mv "$STATE_DIR/app_token.new" "$STATE_DIR/app_token"
    mark_done application
fi

if ! done_already grant; then
    oam-admin grant --memory-store-id "$STORE" --schema-owner "$SCHEMA_OWNER" \
        --group "$GROUP" --idp "$IDP"
    mark_done grant
fi

if ! done_already audit; then
    oam-admin audit enable --memory-store-id "$STORE" --schema-owner "$SCHEMA_OWNER"
    mark_done audit
fi

echo "provisioned: store $STORE (schema $SCHEMA_OWNER), identity provider $IDP, group $GROUP," \
     "runtime login $LOGIN, application $APP" >&2
