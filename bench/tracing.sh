#!/usr/bin/env bash
# What tracing costs: two servers on the same database and the same core (0), one exporting traces and metrics
# (OTLP/HTTP protobuf, to a sink on core 1) and one exporting nothing. wrk (core 1) loads them in turns, ABBA
# order in each round so drift on the machine falls on both alike. The cost is given three ways: from the mean
# req/s, from the servers' CPU time per request (/proc), and as the median of the rounds' own costs.
# Usage: bash bench/tracing.sh [rounds=4] [seconds-per-run=5] [connections=32]
# OTEL_EXPORTER_OTLP_PROTOCOL=http/json, OTEL_TRACES_SAMPLER(_ARG) and DATABASE_URL pass through to the traced server.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-4}
SECONDS_PER_RUN=${2:-5}
CONNECTIONS=${3:-32}
PLAIN_PORT=3921
TRACED_PORT=3922
SINK_PORT=4399
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

WORK=$(mktemp -d)
export DATABASE_URL=${DATABASE_URL:-sqlite:$WORK/bench.sqlite}
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

source bench/seed.sh

taskset -c 1 bun -e "Bun.serve({ hostname: '127.0.0.1', port: $SINK_PORT, async fetch(r) { await r.arrayBuffer(); return new Response('{}') } }); await Bun.sleep(1e9)" &
PIDS+=($!)

start() { # port, extra env...
  local port=$1; shift
  env "$@" RATE_LIMIT_PER_MINUTE=1000000000 PORT="$port" HOST=127.0.0.1 LOG_LEVEL=warn \
    taskset -c 0 bun src/main.ts >"$WORK/server-$port.log" 2>&1 &
  PIDS+=($!)
  LAST_PID=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && return; sleep 0.1; done
  echo "server on $port did not start" >&2; cat "$WORK/server-$port.log" >&2; exit 1
}
start $PLAIN_PORT -u OTEL_EXPORTER_OTLP_ENDPOINT
PLAIN_PID=$LAST_PID
start $TRACED_PORT OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$SINK_PORT
TRACED_PID=$LAST_PID

seed_projects $PLAIN_PORT

# CPU seconds (user + system) the process has used so far, from /proc.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }

# One wrk run; prints "<req/s> <server CPU µs per request>".
run() { # port, pid, path, seconds
  local before after
  before=$(cpu "$2")
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$4s" -H "Authorization: Bearer $KEY" "http://127.0.0.1:$1$3" >"$WORK/wrk.out"
  after=$(cpu "$2")
  awk -v b="$before" -v a="$after" '
    / requests in / { n = $1 }
    /Requests\/sec/ { r = $2 }
    END { printf "%.0f %.0f", r, (a - b) * 1e6 / n }' "$WORK/wrk.out"
}

measure() { # label, path
  local label=$1 path=$2 lines=() costs=()
  run $PLAIN_PORT "$PLAIN_PID" "$path" 5 >/dev/null; run $TRACED_PORT "$TRACED_PID" "$path" 5 >/dev/null # warm both (JIT)
  echo "== $label: export off | on, req/s (server CPU µs per request); $ROUNDS rounds, ${SECONDS_PER_RUN}s runs, $CONNECTIONS connections"
  for round in $(seq 1 "$ROUNDS"); do
    local a b c d
    a=$(run $PLAIN_PORT "$PLAIN_PID" "$path" "$SECONDS_PER_RUN"); b=$(run $TRACED_PORT "$TRACED_PID" "$path" "$SECONDS_PER_RUN")
    c=$(run $TRACED_PORT "$TRACED_PID" "$path" "$SECONDS_PER_RUN"); d=$(run $PLAIN_PORT "$PLAIN_PID" "$path" "$SECONDS_PER_RUN")
    echo "round $round: off ${a% *} (${a#* }), ${d% *} (${d#* }) | on ${b% *} (${b#* }), ${c% *} (${c#* })"
    lines+=("off $a" "off $d" "on $b" "on $c")
    costs+=("$(awk -v a="${a% *}" -v b="${b% *}" -v c="${c% *}" -v d="${d% *}" 'BEGIN { printf "%.1f", (1 - (b + c) / (a + d)) * 100 }')")
  done
  printf '%s\n' "${lines[@]}" | awk '
    { rps[$1] += $2; us[$1] += $3; n[$1]++ }
    END {
      printf "mean: off %.0f req/s (%.0f µs), on %.0f req/s (%.0f µs)\n", rps["off"] / n["off"], us["off"] / n["off"], rps["on"] / n["on"], us["on"] / n["on"]
      printf "tracing costs %.1f%% of throughput; by CPU per request, %.1f%%\n", (1 - rps["on"] / rps["off"]) * 100, (1 - us["off"] / us["on"]) * 100
    }'
  # A disturbed round moves the mean; the median of the rounds' own costs is steadier.
  printf '%s\n' "${costs[@]}" | sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "per-round costs, sorted: %s%%; median %.1f%%\n", list, m } { list = list (NR > 1 ? ", " : "") $1 }'
}

echo "database: ${DATABASE_URL%%:*}; traced server exports to http://127.0.0.1:$SINK_PORT (${OTEL_EXPORTER_OTLP_PROTOCOL:-http/protobuf})"
measure "GET /v1/projects/:id" "/v1/projects/$PROJECT_ID"
measure "GET /v1/projects?per_page=20" "/v1/projects?per_page=20"
