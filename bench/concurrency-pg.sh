#!/usr/bin/env bash
# The service on PostgreSQL with admission (HTTP_CONCURRENCY=32) and without (0), side by side: two servers on core 0,
# each on a fresh database of its own (made on the server of DATABASE_URL, dropped at the end), wrk on core 1 (-c64).
# 10 s of creates and 5 s of list pages each, unmeasured; then creates in rounds A B, B A (twice), list pages A B
# (twice). Prints req/s, server CPU per request and p99 of each run, and the answers that were not 2xx.
# Usage: DATABASE_URL=postgres://user@host:5432/postgres bash bench/concurrency-pg.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${DATABASE_URL:?set DATABASE_URL to a PostgreSQL server}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source bench/lib.sh
declare -A PID KEY PORT DB
cleanup() {
  for c in "${!PID[@]}"; do kill -INT "${PID[$c]}" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for c in "${!DB[@]}"; do pg_drop "$BASE" "${DB[$c]}" || true; done
}
trap cleanup EXIT
port=${BENCH_PORT:-3960}
for c in 32 0; do
  DB[$c]="bench_concurrency_${c}_$RANDOM"
  url=$(pg_database "$BASE" "${DB[$c]}")
  DATABASE_URL=$url bun src/cli.ts migrate >/dev/null
  user=$(DATABASE_URL=$url bun src/cli.ts users create --email "bench-$RANDOM@example.com" --name Bench | json_field id)
  KEY[$c]=$(DATABASE_URL=$url bun src/cli.ts api-keys create --user "$user" --name bench --scopes read,write |
    json_field key)
  PORT[$c]=$((port++))
  DATABASE_URL=$url HTTP_CONCURRENCY=$c RATE_LIMIT_PER_MINUTE=1000000000 PORT=${PORT[$c]} HOST=127.0.0.1 \
    taskset -c 0 bun src/main.ts >/dev/null 2>&1 &
  PID[$c]=$!
done
for c in 32 0; do
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:${PORT[$c]}/health/ready" >/dev/null && break; sleep 0.1; done
done
run() { # <concurrency> <create|list> <duration>
  local url=http://127.0.0.1:${PORT[$1]} rps p99 bad cpu
  if [ "$2" = create ]; then
    read -r rps p99 bad cpu < <(wrk_figures "${PID[$1]}" -c64 -d"$3" -s bench/create.lua \
      -H "Authorization: Bearer ${KEY[$1]}" "$url/v1/projects")
  else
    read -r rps p99 bad cpu < <(wrk_figures "${PID[$1]}" -c64 -d"$3" -H "Authorization: Bearer ${KEY[$1]}" \
      "$url/v1/projects?per_page=20")
  fi
  echo "  HTTP_CONCURRENCY=$1 $2: $rps/s, $cpu µs of CPU a request, p99 $p99 ms, $bad answers not 2xx"
}
for c in 32 0; do run "$c" create 10s >/dev/null; run "$c" list 5s >/dev/null; done
for _ in 1 2; do for c in 32 0 0 32; do run "$c" create 5s; done; done
for _ in 1 2; do for c in 32 0; do run "$c" list 5s; done; done
