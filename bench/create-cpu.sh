#!/usr/bin/env bash
# Where a create's CPU goes, the service against the idiomatic baseline: each contender's threads (the JS thread,
# the JIT's, the rest) over N creates, in µs a create, then the same creates again under `strace -c` for the
# system calls a create makes (socket writes and reads, madvise as the heap grows and shrinks, futex). The service
# at its defaults but the rate limit; the baseline (bench/baseline/server.ts) with its audit record (BASELINE_ENV,
# BASELINE_AUDIT=1 unless given). On PostgreSQL when DATABASE_URL names a server (each contender a fresh database of
# its own), else each on a fresh SQLite file (bench/lib.sh, start_on_fresh_database). Server on core 0, `hey` on
# core 1 (CLIENTS at once, 16 unless given), N creates of warm-up first, in the order A B B A.
# Usage: [DATABASE_URL=postgres://…] bash bench/create-cpu.sh [creates=6000] [clients=16]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-6000}
CLIENTS=${2:-16}
PORT=${BENCH_PORT:-3933}
command -v hey >/dev/null || { echo "hey is needed: apt-get install hey" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source bench/lib.sh
PG_SERVER=$(is_postgres "${DATABASE_URL:-}" && echo "$DATABASE_URL" || true)
BODY='{"name":"bench","description":"project"}'

# threads <pid>: "<name>-<tid> <ticks>" for each thread of the process.
threads() { for t in /proc/"$1"/task/*; do echo "$(tr ' ' _ <"$t/comm")-${t##*/} $(awk '{print $14 + $15}' "$t/stat")"; done | sort; }
creates() {
  local out
  out=$(taskset -c 1 hey -n "$1" -c "$CLIENTS" -m POST -H "Authorization: Bearer $2" -T application/json -d "$BODY" \
    "http://127.0.0.1:$PORT/v1/projects")
  awk '/Requests\/sec/ {printf "%.0f", $2}' <<<"$out"
  if not_all_201 <<<"$out"; then printf " (answers other than 201)"; fi
}

export BASELINE_ENV=${BASELINE_ENV:-BASELINE_AUDIT=1}
for who in service baseline baseline service; do
  WORK=$(mktemp -d)
  start_on_fresh_database "$who" "$WORK" "$PORT"
  pid=$PID key=$KEY
  creates "$N" "$key" >/dev/null
  threads "$pid" >"$WORK/before"
  rate=$(creates "$N" "$key")
  threads "$pid" >"$WORK/after"
  echo "$who: $rate creates/s; CPU a create (µs) by thread:"
  join "$WORK/before" "$WORK/after" | awk -v n="$N" -v hz="$(getconf CLK_TCK)" '
    { d = ($3 - $2) / hz * 1e6 / n; total += d; name = $1; sub(/-[0-9]+$/, "", name)
      if (name == "bun" && d > js) { other += js; js = d } else if (name == "JITWorker") jit += d; else other += d }
    END { printf "  JS thread %.0f, JIT %.0f, others %.0f, total %.0f\n", js, jit, other, total }'
  if command -v strace >/dev/null; then
    strace -qq -c -f -p "$pid" -o "$WORK/strace" &
    tracer=$!
    sleep 1
    creates "$N" "$key" >/dev/null
    kill -INT "$tracer"
    wait "$tracer" 2>/dev/null || true
    awk -v n="$N" '$NF ~ /^(sendto|recvfrom|write|madvise|futex)$/ {printf "  %s %.1f", $NF, $4 / n} END {print " (system calls a create)"}' "$WORK/strace"
  fi
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  drop_fresh_databases
  rm -rf "$WORK"
done
