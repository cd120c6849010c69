#!/usr/bin/env bash
# The cost of Idempotency-Key on a create: POST /v1/projects without the header (bench/create.lua) and with a new key
# on every request (bench/create-idempotent.lua), on one server and one database (SQLite unless DATABASE_URL says
# otherwise), ABAB rounds: the server on core 0 (taskset), wrk on core 1; req/s, p99 and the server's CPU time per
# request (which the machine's other load moves far less than req/s).
# Usage: bash bench/idempotency.sh [duration=5s] [rounds=3] [connections=64]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-5s}
ROUNDS=${2:-3}
CONNECTIONS=${3:-64}
# A free port unless one is given (another server on the machine must not answer for this one).
PORT=${BENCH_PORT:-$(bun -e 'const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }); console.log(s.port); s.stop(true)')}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
WORK=$(mktemp -d)
export DATABASE_URL=${DATABASE_URL:-sqlite:$WORK/bench.sqlite}
# On PostgreSQL a fresh database of that server, never the one named (it may hold another schema or data).
if [[ $DATABASE_URL == postgres* ]]; then
  DATABASE_URL=$(bun -e 'import { freshDatabaseUrl } from "./test/support/server.ts"; console.log(await freshDatabaseUrl())')
fi
cleanup() {
  [ -n "${SVC_PID:-}" ] && kill -INT "$SVC_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=bench/lib.sh
source bench/lib.sh
bun src/cli.ts migrate >/dev/null
USER_ID=$(bun src/cli.ts users create --email "bench-$RANDOM$RANDOM@example.com" --name Bench | json_field id)
KEY=$(bun src/cli.ts api-keys create --user "$USER_ID" --name bench --scopes read,write | json_field key)
RATE_LIMIT_PER_MINUTE=1000000000 PORT=$PORT HOST=127.0.0.1 taskset -c 0 bun src/main.ts >>"$WORK/service.log" 2>&1 &
SVC_PID=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health/ready" >/dev/null && break; sleep 0.1; done
kill -0 "$SVC_PID" 2>/dev/null || { cat "$WORK/service.log" >&2; exit 1; }

# wrk once with <script>: "req/s p99_ms non2xx cpu_us_per_request" (bench/lib.sh `wrk_figures`).
load() {
  wrk_figures "$SVC_PID" -c"$CONNECTIONS" -d"$DURATION" -s "$1" -H "Authorization: Bearer $KEY" "http://127.0.0.1:$PORT/v1/projects"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $CONNECTIONS connections; $DURATION × $ROUNDS rounds (ABAB); $(sed 's/:.*//' <<<"$DATABASE_URL")"
declare -A RPS P99 CPU
for round in $(seq 1 "$ROUNDS"); do
  for who in plain keyed; do
    script=bench/create.lua
    [ "$who" = keyed ] && script=bench/create-idempotent.lua
    read -r rps p99 bad cpu < <(load "$script")
    echo "  round $round $who: $rps req/s, p99 $p99 ms, CPU $cpu µs/request${bad:+, non-2xx $bad}"
    RPS[$who]+="$rps "
    P99[$who]+="$p99 "
    CPU[$who]+="$cpu "
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '\n| create | req/s | p99 ms | CPU µs/request |\n|---|---|---|---|\n'
for who in plain keyed; do
  echo "| $who | $(tr ' ' '\n' <<<"${RPS[$who]}" | grep . | median) | $(tr ' ' '\n' <<<"${P99[$who]}" | grep . | median) | $(tr ' ' '\n' <<<"${CPU[$who]}" | grep . | median) |"
done
