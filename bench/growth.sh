#!/usr/bin/env bash
# Creates as the database grows: the service, then the baseline (bench/baseline/server.ts), each on a fresh SQLite
# file, server on core 0 and wrk on core 1 (-c64, bench/create.lua). Each: 10 s of creates unmeasured, two 5 s runs
# ("early"), GROW of creates unmeasured, two 5 s runs ("late"). Prints creates/s, server CPU per create and p99 of
# each run (and the answers that were not 2xx), and the file's size at the end.
# Usage: bash bench/growth.sh [grow=80s]
set -euo pipefail
cd "$(dirname "$0")/.."
GROW=${1:-80s}
PORT=${BENCH_PORT:-3931}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source bench/lib.sh

for who in service baseline; do
  WORK=$(mktemp -d)
  start_on_fresh_database "$who" "$WORK" "$PORT"
  pid=$PID key=$KEY
  load() { # <duration>: "req/s p99_ms non2xx cpu_us" (bench/lib.sh)
    wrk_figures "$pid" -c64 -d"$1" -s bench/create.lua -H "Authorization: Bearer $key" "http://127.0.0.1:$PORT/v1/projects"
  }
  measure() {
    local rps p99 bad cpu
    read -r rps p99 bad cpu < <(load 5s)
    echo "  $who $1: $rps creates/s, $cpu µs of CPU a create, p99 $p99 ms, $bad answers not 2xx"
  }
  load 10s >/dev/null
  measure early
  measure early
  load "$GROW" >/dev/null
  measure late
  measure late
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  echo "  $who's file: $(du -m "$WORK"/*.sqlite | sort -n | tail -1 | cut -f1) MiB"
  rm -rf "$WORK"
done
