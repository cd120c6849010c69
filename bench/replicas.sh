#!/usr/bin/env bash
# Several replicas on one PostgreSQL against one replica, on this machine, in one sitting on one fresh database:
#   1. one replica, wrk straight to it;
#   2. one replica behind nginx (what the proxy alone costs);
#   3. three replicas behind nginx (deploy/nginx/local.conf's set-up, on other ports), round-robin.
# In each: GET /v1/projects/:id and POST /v1/projects (req/s, p50, p99), then the delivery fan-out: POST
# /v1/projects for FAN_SECONDS by a user with HOOKS webhooks to a loopback receiver, and the deliveries/s from the
# first create to the last delivery received (every delivery counted; the replicas share the work through the table).
# wrk runs on core 1 (taskset); the replicas, nginx, PostgreSQL and the receiver share the machine.
# BENCH_REDIS=1: a Redis on loopback counts the rate limits (a limit out of reach), as a replicated deployment does;
# otherwise the limiter is off in every contender. BENCH_WARMUP (5s): unmeasured load on each set-up first.
# Usage: flock /work/bench.lock bash bench/replicas.sh [duration=10s] [connections=64] [fan_seconds=5] [hooks=10]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10s}
CONNECTIONS=${2:-64}
FAN_SECONDS=${3:-5}
HOOKS=${4:-10}
WARMUP=${BENCH_WARMUP:-5s}
PG_BASE=${PG_URL:-postgres://postgres@127.0.0.1:5432/postgres}
BASE_PORT=${BENCH_PORT:-3940}
LB_PORT=$BASE_PORT
RECEIVER_PORT=$((BASE_PORT + 9))
REDIS_PORT=$((BASE_PORT + 8))
for tool in wrk nginx psql; do command -v $tool >/dev/null || { echo "$tool is needed" >&2; exit 1; }; done

WORK=$(mktemp -d)
DB=pcs_bench_replicas_$$
psql -q "$PG_BASE" -c "CREATE DATABASE $DB"
export DATABASE_URL=${PG_BASE%/*}/$DB
PIDS=()
stop_replicas() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
cleanup() {
  stop_replicas
  [ -f "$WORK/nginx/nginx.pid" ] && nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -s quit 2>/dev/null
  [ -n "${RECEIVER_PID:-}" ] && kill "$RECEIVER_PID" 2>/dev/null
  [ -n "${REDIS_PID:-}" ] && kill "$REDIS_PID" 2>/dev/null
  wait 2>/dev/null || true
  sleep 1
  psql -q "$PG_BASE" -c "DROP DATABASE IF EXISTS $DB" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

LIMITS=(RATE_LIMIT_ENABLED=false)
if [ -n "${BENCH_REDIS:-}" ]; then
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no >/dev/null &
  REDIS_PID=$!
  LIMITS=(REDIS_URL=redis://127.0.0.1:$REDIS_PORT RATE_LIMIT_PER_MINUTE=1000000000)
fi

# The receiver: counts deliveries, and answers GET /stats with the count and the first and last receipt times.
bun -e "
let count = 0, first = 0, last = 0
Bun.serve({ hostname: '127.0.0.1', port: $RECEIVER_PORT, async fetch(r) {
  if (r.method === 'GET') return Response.json({ count, first, last })
  await r.arrayBuffer(); const now = Date.now(); if (count === 0) first = now; count++; last = now
  return new Response(null, { status: 204 })
} })
await Bun.sleep(1e9)" &
RECEIVER_PID=$!

# shellcheck source=bench/lib.sh
source bench/lib.sh
bun src/cli.ts migrate >/dev/null
new_key() {
  local user
  user=$(bun src/cli.ts users create --email "bench-$1-$RANDOM$RANDOM@example.com" --name "Bench $1" | json_field id)
  echo "$user $(bun src/cli.ts api-keys create --user "$user" --name bench --scopes read,write | json_field key)"
}
read -r _ KEY <<<"$(new_key reads)"
read -r FAN_USER FAN_KEY <<<"$(new_key fanout)"

# start_replicas N: N replicas on BASE_PORT+1…+N, each until it answers.
start_replicas() {
  for i in $(seq 1 "$1"); do
    env "${LIMITS[@]}" PORT=$((BASE_PORT + i)) HOST=127.0.0.1 LOG_LEVEL=warn BASE_URL=http://127.0.0.1:$LB_PORT \
      TRUSTED_PROXIES=127.0.0.1 WEBHOOK_ALLOW_PRIVATE_TARGETS=true bun src/main.ts >>"$WORK/replica-$i.log" 2>&1 &
    PIDS+=($!)
  done
  for i in $(seq 1 "$1"); do
    for _ in $(seq 1 200); do curl -sf "http://127.0.0.1:$((BASE_PORT + i))/health/ready" >/dev/null && break; sleep 0.1; done
  done
}

# nginx N: deploy/nginx/local.conf with the bench's ports and N upstreams (reloaded when it runs already).
nginx_for() {
  mkdir -p "$WORK/nginx/logs"
  local servers=""
  for i in $(seq 1 "$1"); do servers+="        server 127.0.0.1:$((BASE_PORT + i));\n"; done
  sed -e "s/listen 127.0.0.1:3000;/listen 127.0.0.1:$LB_PORT;/" -e '/server 127.0.0.1:300[123];/d' \
    -e "s/^\(\s*upstream service {\)$/\1\n$servers/" deploy/nginx/local.conf >"$WORK/nginx/nginx.conf"
  if [ -f "$WORK/nginx/nginx.pid" ]; then
    nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -s reload
    sleep 1
  else
    nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf"
  fi
}

PROJECT_ID=""
measure() {
  local label=$1 entry=$2
  if [ -z "$PROJECT_ID" ]; then
    PROJECT_ID=$(curl -sf -X POST "$entry/v1/projects" -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
      -d '{"name":"bench"}' | json_field id)
  fi
  # Warm-up, unmeasured: each replica's JIT gets its share of the same requests first.
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" -H "Authorization: Bearer $KEY" "$entry/v1/projects/$PROJECT_ID" >/dev/null
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$WARMUP" -s bench/create.lua -H "Authorization: Bearer $KEY" "$entry/v1/projects" >/dev/null
  echo "== $label ($DURATION, $CONNECTIONS connections, wrk on core 1, after $WARMUP of warm-up)"
  echo -n "GET  /v1/projects/:id   "
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency -H "Authorization: Bearer $KEY" \
    "$entry/v1/projects/$PROJECT_ID" | awk '/Requests\/sec/ {r=$2} / 50%/ {p50=$2} / 99%/ {p99=$2} /Non-2xx/ {e=$NF}
      END {printf "%8.0f req/s  p50 %s  p99 %s%s\n", r, p50, p99, (e ? "  non-2xx " e : "")}'
  echo -n "POST /v1/projects       "
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency -s bench/create.lua -H "Authorization: Bearer $KEY" \
    "$entry/v1/projects" | awk '/Requests\/sec/ {r=$2} / 50%/ {p50=$2} / 99%/ {p99=$2} /Non-2xx/ {e=$NF}
      END {printf "%8.0f req/s  p50 %s  p99 %s%s\n", r, p50, p99, (e ? "  non-2xx " e : "")}'
  # The fan-out: creates by the user with HOOKS webhooks, then every delivery waited for.
  local before_count before_projects after_projects expected stats
  before_count=$(curl -sf "http://127.0.0.1:$RECEIVER_PORT/" | bun -e "console.log(JSON.parse(await Bun.stdin.text()).count)")
  before_projects=$(psql -Atq "$DATABASE_URL" -c "SELECT count(*) FROM projects WHERE owner_id = '$FAN_USER'")
  local started
  started=$(date +%s%3N)
  taskset -c 1 wrk -t1 -c16 -d"${FAN_SECONDS}s" -s bench/create.lua -H "Authorization: Bearer $FAN_KEY" "$entry/v1/projects" >/dev/null
  after_projects=$(psql -Atq "$DATABASE_URL" -c "SELECT count(*) FROM projects WHERE owner_id = '$FAN_USER'")
  expected=$((before_count + (after_projects - before_projects) * HOOKS))
  for _ in $(seq 1 600); do
    stats=$(curl -sf "http://127.0.0.1:$RECEIVER_PORT/")
    [ "$(echo "$stats" | bun -e "console.log(JSON.parse(await Bun.stdin.text()).count)")" -ge "$expected" ] && break
    sleep 0.2
  done
  echo "$stats" | bun -e "
    const s = JSON.parse(await Bun.stdin.text()); const n = s.count - $before_count; const secs = (s.last - $started) / 1000
    console.log('fan-out                 ' + String(Math.round(n / secs)).padStart(8) + ' deliveries/s  (' + ($after_projects - $before_projects) + ' events x $HOOKS webhooks = ' + n + ' deliveries in ' + secs.toFixed(1) + ' s; ${FAN_SECONDS} s of creates)')"
}

start_replicas 1
for i in $(seq 1 "$HOOKS"); do
  curl -sf -X POST "http://127.0.0.1:$((BASE_PORT + 1))/v1/webhooks" -H "Authorization: Bearer $FAN_KEY" \
    -H 'content-type: application/json' -d "{\"url\":\"http://127.0.0.1:$RECEIVER_PORT/hook/$i\",\"events\":[\"project.created\"]}" >/dev/null
done
echo "database: PostgreSQL ($DB); rate limits: $([ -n "${BENCH_REDIS:-}" ] && echo Redis || echo off); $(nproc) cores"
measure "1 replica, direct" "http://127.0.0.1:$((BASE_PORT + 1))"
nginx_for 1
measure "1 replica behind nginx" "http://127.0.0.1:$LB_PORT"
stop_replicas
start_replicas 3
nginx_for 3
measure "3 replicas behind nginx" "http://127.0.0.1:$LB_PORT"
