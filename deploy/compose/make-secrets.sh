#!/bin/sh
# Creates the secret files deploy/compose.yaml mounts (once; existing files are kept):
#   postgres_password  the PostgreSQL superuser's password (the admin identity of the demo)
#   runtime_password   the runtime login's password (provision sets it, the gateway uses it)
#   database_url       the gateway's database URL: the runtime login with its password
# The directory is private to you (0700). The files inside are readable by the containers'
# users (the database runs as "postgres", the gateway as UID 10001), which docker compose does
# not remap for file secrets.
set -eu
dir=$(dirname "$0")/secrets
login=${OAM_RUNTIME_LOGIN:-oam_runtime}
mkdir -p "$dir"
chmod 0700 "$dir"
random() { python3 -c 'import secrets; print(secrets.token_urlsafe(32))'; }
new_file() {  # new_file NAME VALUE: write VALUE (no newline) unless NAME exists
    if [ ! -e "$dir/$1" ]; then
        (umask 022 && printf '%s' "$2" > "$dir/$1")
        chmod 0444 "$dir/$1"
        echo "created $dir/$1" >&2
    fi
}
new_file postgres_password "$(random)"
new_file runtime_password "$(random)"
new_file database_url "postgresql://$login:$(cat "$dir/runtime_password")@db:5432/oam"
