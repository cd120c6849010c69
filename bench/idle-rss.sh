#!/usr/bin/env bash
# RSS at idle: the service (`bun src/main.ts`, at its defaults as bench/compare.sh runs it) against the idiomatic
# Effect 3 baseline (bench/baseline/server.ts, its own SQLite file), each started RUNS times in turns (A B A B …),
# pinned to core 0 as compare.sh pins them. Each start: wait until it answers (the service's /health/ready, the
# baseline's first response), then a fixed settle time (SETTLE seconds, the same for both), then read VmRSS from
# /proc/<pid>/status, then stop it. Nothing else is done to either process (no requests besides the readiness
# probe, no GC). The database is migrated and holds two users with a key each, as compare.sh's before it seeds.
# BEFORE_DIR=/path/to/an/older/checkout (with node_modules) adds that version of the service as a third contender.
# Prints each start, then the medians and the ratios.
# Usage: flock /work/bench.lock bash bench/idle-rss.sh [runs=5] [settle=3]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-5}
SETTLE=${2:-3}
PORT=${BENCH_PORT:-3931}
WHO="service baseline${BEFORE_DIR:+ before}"

WORK=$(mktemp -d)
export DATABASE_URL=sqlite:$WORK/bench.sqlite
PID=
cleanup() {
  [ -n "$PID" ] && kill -INT "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=bench/lib.sh
source bench/lib.sh
for _ in 1 2; do
  user=$(bun src/cli.ts users create --email "bench-$RANDOM$RANDOM@example.com" --name Bench | json_field id)
  bun src/cli.ts api-keys create --user "$user" --name bench --scopes read,write >/dev/null
done

wait_for() { for _ in $(seq 1 200); do curl -s -o /dev/null -f "http://127.0.0.1:$PORT$1" && return; sleep 0.05; done; echo "no answer on $1" >&2; exit 1; }
start() {
  case $1 in
    service)
      RATE_LIMIT_PER_MINUTE=1000000000 PORT=$PORT HOST=127.0.0.1 taskset -c 0 bun src/main.ts >>"$WORK/service.log" 2>&1 &
      PID=$!
      wait_for /health/ready ;;
    baseline)
      BASELINE_DB=$WORK/baseline.sqlite PORT=$PORT HOST=127.0.0.1 taskset -c 0 bun bench/baseline/server.ts >>"$WORK/baseline.log" 2>&1 &
      PID=$!
      # Its only routes need a key; any answer (401) means it listens.
      for _ in $(seq 1 200); do curl -s -m 2 -o /dev/null "http://127.0.0.1:$PORT/v1/projects" && break; sleep 0.05; done ;;
    before)
      (cd "$BEFORE_DIR" && RATE_LIMIT_PER_MINUTE=1000000000 PORT=$PORT HOST=127.0.0.1 \
        exec taskset -c 0 bun src/main.ts) >>"$WORK/before.log" 2>&1 &
      PID=$!
      wait_for /health/ready ;;
  esac
}
stop() { kill -INT "$PID"; wait "$PID" 2>/dev/null || true; PID=; }
rss() { awk '/^VmRSS:/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $RUNS starts each, ${SETTLE} s settle"
declare -A ALL
for run in $(seq 1 "$RUNS"); do
  for who in $WHO; do
    start "$who"
    sleep "$SETTLE"
    r=$(rss "$PID")
    stop
    echo "  run $run $who: $r MiB"
    ALL[$who]+="$r "
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A MED
for who in $WHO; do
  MED[$who]=$(tr ' ' '\n' <<<"${ALL[$who]}" | grep . | median)
  echo "median $who: ${MED[$who]} MiB"
done
echo "service ÷ baseline: $(awk -v a="${MED[service]}" -v b="${MED[baseline]}" 'BEGIN {printf "%.2f×", a/b}')"
if [ -n "${BEFORE_DIR:-}" ]; then
  echo "service ÷ before: $(awk -v a="${MED[service]}" -v b="${MED[before]}" 'BEGIN {printf "%.2f×", a/b}')"
fi
