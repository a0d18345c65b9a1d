#!/usr/bin/env bash
# fresh-mariadbd.sh runs one command against a MariaDB server of its own,
# made for this run and removed after it, with the settings of the shared
# server (128 MiB buffer pool, 96 MiB redo log, flush at every commit).
# The command finds the server in $RINGJOB_MYSQL_DSN, which bench and
# bench/stmt read.
#
#   bench/fresh-mariadbd.sh go run ./bench -jobs 10000 -duration 30s
#
# Why: at 10,000 jobs the benchmark on a long-lived shared server drifts
# into an overloaded mode from one run to the next (docs/benchmarks.md);
# a fresh server per run is the steadier way to compare two
# builds. PORT (default 33410) picks the port.
#
# TRACE=FILE also keeps the server's last 60,000 statements
# (performance_schema) and writes them to FILE after the command: when each
# started, how long it took, the rows it changed and its first 160
# characters, for `go run ./bench/trace FILE` (what ran when within each
# second).
set -euo pipefail
port=${PORT:-33410}
dir=$(mktemp -d /tmp/fresh-mariadbd.XXXXXX)
mariadb-install-db --no-defaults --datadir="$dir/data" --user="$(id -un)" \
	--auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1
mariadbd --no-defaults --datadir="$dir/data" --socket="$dir/s" --port="$port" \
	--bind-address=127.0.0.1 --user="$(id -un)" \
	--innodb-buffer-pool-size=128M --innodb-log-file-size=96M \
	--innodb-flush-log-at-trx-commit=1 --max-connections=500 \
	--log-error="$dir/error.log" ${TRACE:+--performance-schema=ON \
	--performance-schema-events-statements-history-long-size=60000 \
	--performance-schema-consumer-events-statements-current=ON \
	--performance-schema-consumer-events-statements-history-long=ON} &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 120); do
	mariadb -h 127.0.0.1 -P "$port" -u root -e 'SELECT 1' >/dev/null 2>&1 && break
	kill -0 "$pid" 2>/dev/null || { cat "$dir/error.log" >&2; exit 1; }
	sleep 0.5
done
if [ -z "${TRACE:-}" ]; then
	RINGJOB_MYSQL_DSN="root@tcp(127.0.0.1:$port)/" "$@"
	exit
fi
status=0
RINGJOB_MYSQL_DSN="root@tcp(127.0.0.1:$port)/" "$@" || status=$?
# The first line pairs the wall clock with the statement timer: both are
# read when the marker statement starts.
q() { mariadb -h 127.0.0.1 -P "$port" -u root -N -B -e "$1"; }
{
	q "SELECT 'ringjob-trace-marker', UNIX_TIMESTAMP(NOW(6)); SELECT TIMER_START FROM performance_schema.events_statements_history_long WHERE SQL_TEXT LIKE 'SELECT ''ringjob-trace-marker''%' ORDER BY TIMER_START DESC LIMIT 1" |
		awk 'NR == 1 { wall = $2 } NR == 2 { print "# marker", wall, $1 }'
	q "SELECT TIMER_START, TIMER_WAIT, ROWS_AFFECTED, LEFT(REPLACE(REPLACE(SQL_TEXT, '\n', ' '), '\t', ' '), 160) FROM performance_schema.events_statements_history_long WHERE SQL_TEXT IS NOT NULL ORDER BY TIMER_START"
} >"$TRACE"
exit $status
