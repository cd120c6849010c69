#!/usr/bin/env bash
# Creates on PostgreSQL and what the database's backends wait on meanwhile: the service against another checkout
# (BEFORE_DIR, with BEFORE_ENV), or against the audited baseline when none is given. Each run on a fresh database:
# N creates of warm-up, then N measured (`hey`, CLIENTS at once, on core 1; the server on core 0) while
# pg_stat_activity is sampled every 50 ms. Prints per run creates/s, p99, the server's CPU a create, the CPU of all
# PostgreSQL's processes a create (the machine's two cores are shared with them), and the samples
# of the run's backends by what they were doing: `lock` (waiting on another transaction's row, e.g. a counter row),
# `in transaction` (waiting for the server's next statement), `idle` (in the pool), `running`. Order A B B A, ROUNDS
# times.
# Usage: DATABASE_URL=postgres://… [BEFORE_DIR=<checkout>] bash bench/create-waits.sh [creates=6000] [clients=64] [rounds=2]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-6000}
CLIENTS=${2:-64}
ROUNDS=${3:-2}
PORT=${BENCH_PORT:-3934}
command -v hey >/dev/null || { echo "hey is needed: apt-get install hey" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source bench/lib.sh
is_postgres "${DATABASE_URL:-}" || { echo "DATABASE_URL must name a PostgreSQL server" >&2; exit 1; }
PG_SERVER=$DATABASE_URL
BODY='{"name":"bench","description":"project"}'
OTHER=$([ -n "${BEFORE_DIR:-}" ] && echo before || echo baseline)
export BASELINE_ENV=${BASELINE_ENV:-BASELINE_AUDIT=1}

creates() {
  taskset -c 1 hey -n "$N" -c "$CLIENTS" -m POST -H "Authorization: Bearer $1" -T application/json -d "$BODY" \
    "http://127.0.0.1:$PORT/v1/projects"
}
# database_ticks: CPU ticks of every PostgreSQL process so far.
database_ticks() { for p in $(pgrep -u postgres); do ticks "$p" 2>/dev/null || true; done | awk '{t += $1} END {print t + 0}'; }
# sample <database> <file>: what each client backend of that database is doing, every 50 ms, until killed; one
# psql session (a connection each time would cost PostgreSQL a process start every 50 ms).
sample() {
  while true; do
    echo "SELECT CASE WHEN wait_event_type = 'Lock' THEN 'lock'
        WHEN state LIKE 'idle in transaction%' THEN 'in transaction' WHEN state = 'idle' THEN 'idle' ELSE 'running' END
      FROM pg_stat_activity WHERE datname = '$1' AND backend_type = 'client backend' AND pid <> pg_backend_pid();"
    sleep 0.05
  done | psql -qAt "$PG_SERVER" >"$2" 2>/dev/null
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $N creates × $CLIENTS clients; service against $OTHER"
for _ in $(seq 1 "$ROUNDS"); do
  for who in service "$OTHER" "$OTHER" service; do
    WORK=$(mktemp -d)
    start_on_fresh_database "$who" "$WORK" "$PORT"
    pid=$PID key=$KEY
    database=${FRESH_DATABASES[-1]} # the one the server uses (the baseline has its own)
    creates "$key" >/dev/null
    sample "$database" "$WORK/waits" &
    sampler=$!
    before=$(ticks "$pid") database_before=$(database_ticks)
    creates "$key" >"$WORK/hey"
    after=$(ticks "$pid") database_after=$(database_ticks)
    pkill -P "$sampler" 2>/dev/null || true
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    rate=$(awk '/Requests\/sec/ {printf "%.0f", $2}' "$WORK/hey")
    p99=$(awk '/ 99%/ {printf "%.0f", $3 * 1000}' "$WORK/hey")
    not_all_201 "$WORK/hey" && rate="$rate (answers other than 201)"
    cpu=$(((after - before) * 1000000 / $(getconf CLK_TCK) / N))
    database_cpu=$(((database_after - database_before) * 1000000 / $(getconf CLK_TCK) / N))
    shares=$(sort "$WORK/waits" | uniq -c | awk '{n[$2 ($3 ? " " $3 : "")] = $1; t += $1}
      END {printf "lock %.0f %%, in transaction %.0f %%, idle %.0f %%, running %.0f %%",
        100 * n["lock"] / t, 100 * n["in transaction"] / t, 100 * n["idle"] / t, 100 * n["running"] / t}')
    echo "$who: $rate creates/s, p99 $p99 ms, CPU $cpu µs a create, PostgreSQL's $database_cpu; backends: $shares"
    kill -INT "$pid"
    wait "$pid" 2>/dev/null || true
    drop_fresh_databases
    rm -rf "$WORK"
  done
done
