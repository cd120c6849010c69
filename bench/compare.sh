#!/usr/bin/env bash
# The service against the idiomatic Effect 3 baseline (bench/baseline/server.ts), in one sitting on one database:
# both servers on core 0 (taskset), wrk on core 1, ABAB rounds per endpoint, median req/s and p99, RSS after load.
# Reads: GET /v1/projects/:id and GET /v1/projects?per_page=20 by a user with $PROJECTS projects (default 1000);
# creates: POST /v1/projects by a second user, so the reading user's list does not grow during the run.
# BEFORE_DIR=/path/to/an/older/checkout (with node_modules) adds that version of the service as a third contender
# on the same database (e.g. `git archive <commit> | tar -x -C /tmp/before`), for before/after in one sitting;
# BEFORE_ENV="LOG_LEVEL=warn RATE_LIMIT_ENABLED=false" runs that contender with those settings (BEFORE_DIR=. then
# measures what they cost).
# The service runs at its defaults (rate limiter on, with a limit out of reach; access log at the default level,
# to a file; nothing exported); LOG_LEVEL, RATE_LIMIT_ENABLED etc. pass through the environment.
# BENCH_PROFILE=/some/dir: after seeding, every contender is restarted under `bun --cpu-prof --cpu-prof-md`, so each
# profile (in /some/dir/<contender>/) holds the measured load and not the seeding; `bun bench/profile.ts <file>`
# summarizes one. Profiled figures are slower than unprofiled ones: quote ratios from runs without it.
# Usage: bash bench/compare.sh [duration=5s] [rounds=2] [connections=64]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-5s}
ROUNDS=${2:-2}
CONNECTIONS=${3:-64}
PROJECTS=${PROJECTS:-1000}
ENDPOINTS=${ENDPOINTS:-get list create} # any of them, e.g. ENDPOINTS=get
SVC_PORT=${BENCH_PORT:-3921}
BASE_PORT=$((SVC_PORT + 1))
BEFORE_PORT=$((SVC_PORT + 2))
WHO="service baseline${BEFORE_DIR:+ before}"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }

WORK=$(mktemp -d)
export DATABASE_URL=sqlite:$WORK/bench.sqlite
cleanup() {
  [ -n "${SVC_PID:-}" ] && kill -INT "$SVC_PID" 2>/dev/null
  [ -n "${BASE_PID:-}" ] && kill -INT "$BASE_PID" 2>/dev/null
  [ -n "${BEFORE_PID:-}" ] && kill -INT "$BEFORE_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

json_field() { bun -e "console.log(JSON.parse(await Bun.stdin.text()).data.$1)"; }
new_key() {
  local user
  user=$(bun src/cli.ts users create --email "bench-$RANDOM$RANDOM@example.com" --name Bench | json_field id)
  bun src/cli.ts api-keys create --user "$user" --name bench --scopes read,write | json_field key
}
READ_KEY=$(new_key)
WRITE_KEY=$(new_key)

# profiled <who>: the bun flags that write <who>'s CPU profile, when BENCH_PROFILE is set and seeding is over.
profiled() { [ -n "${BENCH_PROFILE:-}" ] && [ -n "${SEEDED:-}" ] && echo "--cpu-prof --cpu-prof-md --cpu-prof-dir=$BENCH_PROFILE/$1"; }
wait_ready() { for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$1/health/ready" >/dev/null && return; sleep 0.1; done; }
wait_up() { for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$1/" && return; sleep 0.1; done; }
start_service() {
  # shellcheck disable=SC2046
  RATE_LIMIT_PER_MINUTE=1000000000 PORT=$SVC_PORT HOST=127.0.0.1 \
    taskset -c 0 bun $(profiled service) src/main.ts >>"$WORK/service.log" 2>&1 &
  SVC_PID=$!
  wait_ready $SVC_PORT
}
start_baseline() {
  # shellcheck disable=SC2046
  PORT=$BASE_PORT taskset -c 0 bun $(profiled baseline) bench/baseline/server.ts >>"$WORK/baseline.log" 2>&1 &
  BASE_PID=$!
}
start_before() {
  # shellcheck disable=SC2046
  (cd "$BEFORE_DIR" && RATE_LIMIT_PER_MINUTE=1000000000 PORT=$BEFORE_PORT HOST=127.0.0.1 \
    exec env ${BEFORE_ENV:-} taskset -c 0 bun $(profiled before) src/main.ts) >>"$WORK/before.log" 2>&1 &
  BEFORE_PID=$!
  wait_ready $BEFORE_PORT
}
start_service
start_baseline
[ -n "${BEFORE_DIR:-}" ] && start_before
port_of() { case $1 in service) echo $SVC_PORT ;; baseline) echo $BASE_PORT ;; before) echo $BEFORE_PORT ;; esac; }
pid_of() { case $1 in service) echo $SVC_PID ;; baseline) echo $BASE_PID ;; before) echo $BEFORE_PID ;; esac; }

# Seed through the service (8 at a time), then take one project's id.
seq 1 "$PROJECTS" | xargs -P 8 -I{} curl -sf -o /dev/null -X POST "http://127.0.0.1:$SVC_PORT/v1/projects" \
  -H "Authorization: Bearer $READ_KEY" -H 'content-type: application/json' \
  -d '{"name":"bench {}","description":"project number {}"}'
PROJECT_ID=$(curl -sf "http://127.0.0.1:$SVC_PORT/v1/projects?per_page=1" -H "Authorization: Bearer $READ_KEY" | bun -e "console.log(JSON.parse(await Bun.stdin.text()).data[0].id)")
if [ -n "${BENCH_PROFILE:-}" ]; then
  SEEDED=1
  for pid in $SVC_PID $BASE_PID ${BEFORE_PID:-}; do kill -INT "$pid"; wait "$pid" 2>/dev/null || true; done
  mkdir -p "$BENCH_PROFILE"
  start_service
  start_baseline
  wait_up $BASE_PORT
  [ -n "${BEFORE_DIR:-}" ] && start_before
fi
for who in $WHO; do
  port=$(port_of $who)
  for path in "/v1/projects/$PROJECT_ID" "/v1/projects?per_page=20"; do
    curl -sf -o /dev/null "http://127.0.0.1:$port$path" -H "Authorization: Bearer $READ_KEY" || { echo "port $port $path fails" >&2; exit 1; }
  done
done

# CPU time (user + system, clock ticks) the process has used so far.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# wrk once: "req/s p99_ms non2xx cpu_us_per_request" (the server's CPU time over the requests wrk completed: what a
# request costs the server, which the other agents' load on the machine moves far less than req/s).
load() {
  local port=$1 what=$2 pid=$3 out before after
  before=$(ticks "$pid")
  case $what in
    get) out=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency -H "Authorization: Bearer $READ_KEY" "http://127.0.0.1:$port/v1/projects/$PROJECT_ID") ;;
    list) out=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency -H "Authorization: Bearer $READ_KEY" "http://127.0.0.1:$port/v1/projects?per_page=20") ;;
    create) out=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency -s bench/create.lua -H "Authorization: Bearer $WRITE_KEY" "http://127.0.0.1:$port/v1/projects") ;;
  esac
  after=$(ticks "$pid")
  local rps p99 bad cpu
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  cpu=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" '/requests in/ {printf "%.0f", t / hz * 1e6 / $1}' <<<"$out")
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  echo "$rps ${p99:-?} ${bad:-0} ${cpu:-?}"
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $PROJECTS projects; $CONNECTIONS connections; $DURATION × $ROUNDS rounds (ABAB)"
declare -A RPS P99 CPU
for what in $ENDPOINTS; do
  for round in $(seq 1 "$ROUNDS"); do
    for who in $WHO; do
      port=$(port_of $who)
      read -r rps p99 bad cpu < <(load "$port" "$what" "$(pid_of $who)")
      echo "  $what round $round $who: $rps req/s, p99 $p99 ms, CPU $cpu µs/request${bad:+, non-2xx $bad}"
      RPS[$who.$what]+="$rps "
      P99[$who.$what]+="$p99 "
      CPU[$who.$what]+="$cpu "
    done
  done
done
rss() { ps -o rss= -p "$1" | awk '{printf "%.0f", $1/1024}'; }
declare -A RSS
for who in $WHO; do RSS[$who]=$(rss "$(pid_of $who)"); done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A TITLE=([get]="GET /v1/projects/:id (p99)" [list]="list per_page 20 (p99)" [create]="create (p99)")
head="|"; rule="|---"; for what in $ENDPOINTS; do head+=" | ${TITLE[$what]}"; rule+="|---"; done
printf '\n%s | RSS |\n%s|---|\n' "$head" "$rule"
declare -A MR MP
for who in $WHO; do
  row="| $who"
  for what in $ENDPOINTS; do
    MR[$who.$what]=$(tr ' ' '\n' <<<"${RPS[$who.$what]}" | grep . | median)
    MP[$who.$what]=$(tr ' ' '\n' <<<"${P99[$who.$what]}" | grep . | median)
    row+=" | ${MR[$who.$what]} (${MP[$who.$what]} ms)"
  done
  echo "$row | ${RSS[$who]} MiB |"
done
row="| service ÷ baseline"
for what in $ENDPOINTS; do
  row+=" | $(awk -v a="${MR[service.$what]}" -v b="${MR[baseline.$what]}" -v c="${MP[service.$what]}" -v d="${MP[baseline.$what]}" 'BEGIN {printf "%.2f× (p99 %.2f×)", a/b, c/d}')"
done
echo "$row | $(awk -v a="${RSS[service]}" -v b="${RSS[baseline]}" 'BEGIN {printf "%.2f×", a/b}') |"
if [ -n "${BEFORE_DIR:-}" ]; then
  row="| service ÷ before"
  for what in $ENDPOINTS; do
    row+=" | $(awk -v a="${MR[service.$what]}" -v b="${MR[before.$what]}" -v c="${MP[service.$what]}" -v d="${MP[before.$what]}" 'BEGIN {printf "%.2f× (p99 %.2f×)", a/b, c/d}')"
  done
  echo "$row | $(awk -v a="${RSS[service]}" -v b="${RSS[before]}" 'BEGIN {printf "%.2f×", a/b}') |"
fi
printf '\nServer CPU per request (µs, median of the rounds):\n'
for who in $WHO; do
  row="  $who:"
  for what in $ENDPOINTS; do row+=" $what $(tr ' ' '\n' <<<"${CPU[$who.$what]}" | grep . | median)"; done
  echo "$row"
done
