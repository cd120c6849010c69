#!/usr/bin/env bash
# GET /v1/projects/:id with a session JWT (and, for scale, with an API key): what checking the session's row on every
# request costs (decisions.md "Sessions that end": the check must cost no more round trips than an API key's).
# Run it on the checkout before the sessions change and on this one, on each engine, and compare:
#   git worktree add /tmp/before <commit before "Sessions that end">
#   SERVICE_DIR=/tmp/before bash bench/session.sh; bash bench/session.sh
#   DATABASE_URL=postgres://… bash bench/session.sh   (each run makes a database of its own: pass a fresh one)
# The server runs on core 0 and wrk on core 1 (taskset), on a fresh SQLite database unless DATABASE_URL is set.
# Prints, per credential: req/s, p99 (ms), answers not 2xx, server CPU µs a request (bench/lib.sh wrk_figures).
# Usage: bash bench/session.sh [duration=10s] [connections=32]
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH_DIR=$(pwd)
DURATION=${1:-10s}
CONNECTIONS=${2:-32}
PORT=${BENCH_PORT:-3918}
SERVICE_DIR=${SERVICE_DIR:-$BENCH_DIR}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source bench/lib.sh

WORK=$(mktemp -d)
export DATABASE_URL=${DATABASE_URL:-sqlite:$WORK/bench.sqlite}
cleanup() {
  [ -n "${SERVER_PID:-}" ] && kill -INT "$SERVER_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

cd "$SERVICE_DIR"
PASSWORD="bench password $RANDOM"
EMAIL="bench-session-$RANDOM$RANDOM@example.com"
USER_ID=$(printf '%s\n' "$PASSWORD" | bun src/cli.ts users create --email "$EMAIL" --name Bench --password-stdin | json_field id)
KEY=$(bun src/cli.ts api-keys create --user "$USER_ID" --name bench --scopes read,write | json_field key)

RATE_LIMIT_PER_MINUTE=1000000000 AUTH_IP_LIMIT_PER_MINUTE=1000000 PORT=$PORT HOST=127.0.0.1 LOG_LEVEL=warn \
  taskset -c 0 bun src/main.ts >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health/ready" >/dev/null && break; sleep 0.1; done

PROJECT_ID=$(curl -sf -X POST "http://127.0.0.1:$PORT/v1/projects" -H "Authorization: Bearer $KEY" \
  -H 'content-type: application/json' -d '{"name":"bench"}' | json_field id)
JWT=$(curl -sf "http://127.0.0.1:$PORT/oauth/login" -H 'content-type: application/json' \
  -d "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}" | bun -e 'console.log(JSON.parse(await Bun.stdin.text()).access_token)')

echo "service: $SERVICE_DIR ($(git -C "$SERVICE_DIR" rev-parse --short HEAD 2>/dev/null || echo '?')); database: ${DATABASE_URL%%:*}"
echo "GET /v1/projects/:id ($DURATION, $CONNECTIONS connections): req/s p99-ms non-2xx cpu-us/request"
for credential in jwt key; do
  token=$([ "$credential" = jwt ] && echo "$JWT" || echo "$KEY")
  # A warm-up, then the measured run.
  wrk_figures "$SERVER_PID" -c"$CONNECTIONS" -d2s -H "Authorization: Bearer $token" \
    "http://127.0.0.1:$PORT/v1/projects/$PROJECT_ID" >/dev/null
  echo "$credential: $(wrk_figures "$SERVER_PID" -c"$CONNECTIONS" -d"$DURATION" -H "Authorization: Bearer $token" \
    "http://127.0.0.1:$PORT/v1/projects/$PROJECT_ID")"
done
