#!/usr/bin/env bash
# What a server's RSS is made of after a spell of creates: the service against the idiomatic baseline (with
# BASELINE_ENV; BEFORE_DIR adds another checkout of the service), each on a fresh SQLite file, server on core 0 and
# `hey -c 64` on core 1 for SECONDS of creates; then RSS under that load, a full collection (bench/heap-probe.ts,
# preloaded), and after it RSS, its anonymous part, and the JS heap: what is live (and how many objects) and its
# capacity (what the heap holds from the system, live or not). What is left of the anonymous part is memory outside
# the JS heap: SQLite's page cache, the WAL checkpoint thread, buffers. In the order A B B A; figures in MiB.
# Usage: [BEFORE_DIR=…] bash bench/rss-breakdown.sh [seconds=45]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_OF_CREATES=${1:-45}
PORT=${BENCH_PORT:-3947}
command -v hey >/dev/null || { echo "hey is needed: apt-get install hey" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source bench/lib.sh
BODY='{"name":"bench","description":"project"}'
export HEAP_PROBE_DIR
HEAP_PROBE_DIR=$(mktemp -d)
for who in $(abba_order); do
  WORK=$(mktemp -d)
  BUN_OPTIONS="--preload $PWD/bench/heap-probe.ts" start_on_fresh_database "$who" "$WORK" "$PORT"
  pid=$PID
  rate=$(taskset -c 1 hey -z "${SECONDS_OF_CREATES}s" -c 64 -m POST -H "Authorization: Bearer $KEY" \
    -T application/json -d "$BODY" "http://127.0.0.1:$PORT/v1/projects" | awk '/Requests\/sec/ {printf "%.0f", $2}')
  rss_before=$(rss_mib "$pid")
  kill -USR2 "$pid"
  for _ in $(seq 1 100); do [ -s "$HEAP_PROBE_DIR/heap-$pid.json" ] && break; sleep 0.1; done
  anon=$(awk '/^RssAnon/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status")
  bun -e '
    const [file, who, rate, before, anon] = process.argv.slice(1)
    const j = await Bun.file(file).json(), mib = (n) => (n / 2 ** 20).toFixed(1)
    console.log(
      `${who}: ${rate} creates/s; RSS under load ${before}, after a full collection ${mib(j.rss)}` +
        ` (anonymous ${anon}); JS heap live ${mib(j.heapSize)} (${j.objectCount} objects), capacity ${mib(j.heapCapacity)}`
    )
  ' "$HEAP_PROBE_DIR/heap-$pid.json" "$who" "$rate" "$rss_before" "$anon"
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  rm -rf "$WORK"
done
rm -rf "$HEAP_PROBE_DIR"
