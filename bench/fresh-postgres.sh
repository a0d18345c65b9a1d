#!/usr/bin/env bash
# fresh-postgres.sh runs one command against a PostgreSQL server of its own,
# made for this run and removed after it (the counterpart of
# fresh-mariadbd.sh): 128 MiB shared buffers, durable commits
# (synchronous_commit=on, fsync=on), pg_stat_statements loaded. The command
# finds the server in $RINGJOB_POSTGRES_DSN:
#
#   bench/fresh-postgres.sh sh -c 'go run ./bench -postgres "$RINGJOB_POSTGRES_DSN" -jobs 5000 -duration 20s'
#
# As root, the server runs as the postgres user (it refuses to run as
# root). PORT (default 55410) picks the port; PGBIN the directory of
# initdb and postgres (default: Debian's newest, else the PATH); PGOPTS
# more server settings (-c shared_buffers=1GB).
set -euo pipefail
port=${PORT:-55410}
bin=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -n "$bin" ] || bin=$(dirname "$(command -v postgres)")
dir=$(mktemp -d /tmp/fresh-postgres.XXXXXX)
as=()
if [ "$(id -u)" = 0 ]; then
	chown postgres: "$dir"
	as=(runuser -u postgres --)
fi
"${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1
"${as[@]}" "$bin/postgres" -D "$dir/data" -p "$port" -k "$dir" -c listen_addresses=127.0.0.1 \
	-c max_connections=300 -c shared_buffers=128MB -c synchronous_commit=on -c fsync=on \
	-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all ${PGOPTS:-} \
	>"$dir/postgres.log" 2>&1 &
pid=$!
# runuser passes no signals on: the server is stopped by pg_ctl.
trap '"${as[@]}" "$bin/pg_ctl" -D "$dir/data" stop -m fast >/dev/null 2>&1 || kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 120); do
	"$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break
	kill -0 "$pid" 2>/dev/null || { cat "$dir/postgres.log" >&2; exit 1; }
	sleep 0.5
done
RINGJOB_POSTGRES_DSN="postgres://postgres@127.0.0.1:$port/?sslmode=disable" "$@"
