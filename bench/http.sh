#!/usr/bin/env bash
# HTTP benchmark: wrk against authenticated GET /v1/projects/:id and GET /v1/projects?per_page=20.
# The server runs on core 0 and wrk on core 1 (taskset), on a fresh SQLite database unless DATABASE_URL is set.
# Usage: bash bench/http.sh [duration=10s] [connections=32]
# Extra server settings pass through the environment (e.g. OTEL_EXPORTER_OTLP_ENDPOINT for the tracing cost).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10s}
CONNECTIONS=${2:-32}
PORT=${BENCH_PORT:-3917}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

WORK=$(mktemp -d)
export DATABASE_URL=${DATABASE_URL:-sqlite:$WORK/bench.sqlite}
cleanup() {
  [ -n "${SERVER_PID:-}" ] && kill -INT "$SERVER_PID" 2>/dev/null
  [ -n "${SINK_PID:-}" ] && kill "$SINK_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
[ -n "${BENCH_KEEP_LOG:-}" ] && trap 'cp "$WORK/server.log" "$BENCH_KEEP_LOG"; cleanup' EXIT

source bench/seed.sh

# BENCH_OTEL=1: export traces and metrics (OTLP/HTTP protobuf) to a sink on core 1, to measure tracing's cost.
if [ -n "${BENCH_OTEL:-}" ]; then
  taskset -c 1 bun -e 'Bun.serve({ hostname: "127.0.0.1", port: 4399, async fetch(r) { await r.arrayBuffer(); return new Response("{}") } }); await Bun.sleep(1e9)' &
  SINK_PID=$!
  export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4399
fi

# The rate limit is set out of reach so the bench measures its cost, not its refusals (RATE_LIMIT_ENABLED=false: none).
RATE_LIMIT_PER_MINUTE=${RATE_LIMIT_PER_MINUTE:-1000000000} PORT=$PORT HOST=127.0.0.1 LOG_LEVEL=${LOG_LEVEL:-warn} taskset -c 0 bun ${BENCH_PROFILE:+--cpu-prof-md --cpu-prof-dir=/tmp/prof} src/main.ts >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health/ready" >/dev/null && break; sleep 0.1; done

seed_projects $PORT

run() {
  local label=$1 path=$2
  echo "== $label ($DURATION, $CONNECTIONS connections, wrk on core 1, server on core 0)"
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency -H "Authorization: Bearer $KEY" \
    "http://127.0.0.1:$PORT$path" | grep -E "Requests/sec|Latency|50%|99%|Non-2xx|Socket errors"
}
echo "database: ${DATABASE_URL%%:*}; tracing export: ${OTEL_EXPORTER_OTLP_ENDPOINT:-off}"
run "GET /v1/projects/:id" "/v1/projects/$PROJECT_ID"
run "GET /v1/projects?per_page=20" "/v1/projects?per_page=20"
echo "server RSS after load: $(ps -o rss= -p "$SERVER_PID" | awk '{printf "%.0f MiB", $1/1024}')"
