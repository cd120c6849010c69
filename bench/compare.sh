#!/usr/bin/env bash
# The service against the idiomatic Effect 3 baseline (bench/baseline/server.ts, its own schema and database),
# in one sitting: both servers on core 0 (taskset), wrk on core 1, rounds A B C, C B A per endpoint; medians of req/s
# and p99, the spread of the rounds (noise), the ratios, server CPU per request and RSS after load (the most each held
# right after one of its runs).
# Data, the same on both: a reading user with $PROJECTS projects (default 1000), created over HTTP; a second user
# who creates under load, so the reading user's list does not grow during the run.
#   get:    GET /v1/projects/:id, a random id of the reading user's projects each request (bench/ids.lua)
#   list:   GET /v1/projects?per_page=20&page=N, N random in 1–40 (bench/pages.lua)
#   create: POST /v1/projects by the second user (bench/create.lua)
# BENCH_THREADS=1 prints where each contender's CPU went during the rounds, by thread (the JS thread, the GC's
# helpers, the JIT, a SQLite checkpoint worker…), as shares of its CPU and µs a request.
# BEFORE_DIR=/path/to/an/older/checkout (with node_modules) adds that version of the service as a third contender
# on the service's database (e.g. `git worktree add /tmp/before <commit>`), for before/after in one sitting;
# BEFORE_DB=own gives it a database of its own, made and seeded by that checkout (for a change to the storage: the
# schema, the file's settings);
# BEFORE_ENV="LOG_LEVEL=warn RATE_LIMIT_ENABLED=false" runs that contender with those settings; BASELINE_ENV is the
# same for the baseline (BASELINE_AUDIT=1, BASELINE_CONTRACT=1: bench/baseline/server.ts), whose limit with
# BASELINE_CONTRACT=1 is out of reach too.
# BASELINE_HTTP=node serves the baseline on node:http (@effect/platform-node) rather than Bun.serve: the server the
# service uses, to separate what that choice costs from the rest.
# The service runs at its defaults (rate limiter on, with a limit out of reach; access log at the default level, to
# a file; nothing exported); LOG_LEVEL, RATE_LIMIT_ENABLED etc. pass through the environment.
# Once seeded, every contender is restarted and serves each endpoint unmeasured for WARMUP (default 20s) first.
# BENCH_PROFILE=/some/dir: that restart is under `bun --cpu-prof`, so each profile (in /some/dir/<contender>/) holds
# the warm-up and the measured load, no seeding; `bun bench/profile.ts <file> --requests N` summarises one.
# Profiled figures are slower than unprofiled ones: quote ratios from runs without it.
# DATABASE_URL=postgres://user@host:5432/postgres runs it all on PostgreSQL: each server gets a fresh database of its
# own on that server (the service's, made by its migrations; the baseline's, its own schema, made by it at start;
# `before`'s with BEFORE_DB=own), dropped at the end; the service at its defaults there. Unset (or anything else),
# SQLite files in a temporary directory.
# Usage: bash bench/compare.sh [duration=5s] [rounds=2] [connections=64]
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-5s}
ROUNDS=${2:-2}
CONNECTIONS=${3:-64}
PROJECTS=${PROJECTS:-1000}
ENDPOINTS=${ENDPOINTS:-get list create} # any of them, e.g. ENDPOINTS=list
SVC_PORT=${BENCH_PORT:-3921}
BASE_PORT=$((SVC_PORT + 1))
BEFORE_PORT=$((SVC_PORT + 2))
WHO="service baseline${BEFORE_DIR:+ before}"
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source bench/lib.sh

WORK=$(mktemp -d)
PG_SERVER=$(is_postgres "${DATABASE_URL:-}" && echo "$DATABASE_URL" || true)
OWN_BEFORE=$([ -n "${BEFORE_DIR:-}" ] && [ "${BEFORE_DB:-}" = own ] && echo 1 || true)
# Where each contender keeps its data: SQLite files in $WORK, or fresh PostgreSQL databases (URLs), one each.
PG_DBS=""
if [ -n "$PG_SERVER" ]; then
  for who in service baseline ${OWN_BEFORE:+before}; do PG_DBS+="bench_compare_${who}_$$_$RANDOM "; done
  read -r SVC_NAME BASE_NAME BEFORE_NAME <<<"$PG_DBS"
  SVC_DB=$(pg_database "$PG_SERVER" "$SVC_NAME")
  BASE_DB=$(pg_database "$PG_SERVER" "$BASE_NAME")
  if [ -n "$OWN_BEFORE" ]; then BEFORE_DB_URL=$(pg_database "$PG_SERVER" "$BEFORE_NAME"); fi
  export DATABASE_URL=$SVC_DB
else
  BASE_DB=$WORK/baseline.sqlite
  BEFORE_DB_URL=sqlite:$WORK/before.sqlite
  export DATABASE_URL=sqlite:$WORK/bench.sqlite
fi
cleanup() {
  for pid in ${SVC_PID:-} ${BASE_PID:-} ${BEFORE_PID:-}; do kill -INT "$pid" 2>/dev/null || true; done
  wait 2>/dev/null
  for db in $PG_DBS; do pg_drop "$PG_SERVER" "$db" || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

new_user() { bun src/cli.ts users create --email "bench-$RANDOM$RANDOM@example.com" --name Bench | json_field id; }
new_key() { bun src/cli.ts api-keys create --user "$1" --name bench --scopes read,write | json_field key; }
READ_USER=$(new_user)
WRITE_USER=$(new_user)
READ_KEY=$(new_key "$READ_USER")
WRITE_KEY=$(new_key "$WRITE_USER")
if [ -n "$OWN_BEFORE" ]; then
  before_cli() { (cd "$BEFORE_DIR" && DATABASE_URL=$BEFORE_DB_URL bun src/cli.ts "$@"); }
  BEFORE_READ_USER=$(before_cli users create --email "bench-$RANDOM$RANDOM@example.com" --name Bench | json_field id)
  BEFORE_WRITE_USER=$(before_cli users create --email "bench-$RANDOM$RANDOM@example.com" --name Bench | json_field id)
  BEFORE_READ_KEY=$(before_cli api-keys create --user "$BEFORE_READ_USER" --name bench --scopes read,write | json_field key)
  BEFORE_WRITE_KEY=$(before_cli api-keys create --user "$BEFORE_WRITE_USER" --name bench --scopes read,write | json_field key)
fi
# The keys a contender is sent (`before` on a database of its own has keys of its own).
read_key() { if [ "$1" = before ] && [ -n "$OWN_BEFORE" ]; then echo "$BEFORE_READ_KEY"; else echo "$READ_KEY"; fi; }
write_key() { if [ "$1" = before ] && [ -n "$OWN_BEFORE" ]; then echo "$BEFORE_WRITE_KEY"; else echo "$WRITE_KEY"; fi; }

# profiled <who>: the bun flags that write <who>'s CPU profile, when BENCH_PROFILE is set and seeding is over.
profiled() { [ -n "${BENCH_PROFILE:-}" ] && [ -n "${SEEDED:-}" ] && echo "--cpu-prof --cpu-prof-dir=$BENCH_PROFILE/$1"; }
# (Up to a minute: a server's first start on a fresh PostgreSQL database runs every migration.)
wait_ready() { for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$1/health/ready" >/dev/null && return; sleep 0.1; done; }
wait_up() { for _ in $(seq 1 600); do curl -s -m 2 -o /dev/null "http://127.0.0.1:$1/" && return; sleep 0.1; done; }
start_service() {
  # shellcheck disable=SC2046
  RATE_LIMIT_PER_MINUTE=1000000000 PORT=$SVC_PORT HOST=127.0.0.1 \
    taskset -c 0 bun $(profiled service) src/main.ts >>"$WORK/service.log" 2>&1 &
  SVC_PID=$!
  wait_ready $SVC_PORT
}
start_baseline() {
  # shellcheck disable=SC2046
  RATE_LIMIT_PER_MINUTE=1000000000 BASELINE_DB=$BASE_DB BASELINE_KEYS="$READ_USER:$READ_KEY,$WRITE_USER:$WRITE_KEY" PORT=$BASE_PORT \
    env ${BASELINE_ENV:-} taskset -c 0 bun $(profiled baseline) bench/baseline/server.ts >>"$WORK/baseline.log" 2>&1 &
  BASE_PID=$!
  wait_up $BASE_PORT
}
start_before() {
  # shellcheck disable=SC2046
  (cd "$BEFORE_DIR" && RATE_LIMIT_PER_MINUTE=1000000000 PORT=$BEFORE_PORT HOST=127.0.0.1 \
    exec env ${OWN_BEFORE:+DATABASE_URL=$BEFORE_DB_URL} ${BEFORE_ENV:-} \
    taskset -c 0 bun $(profiled before) src/main.ts) >>"$WORK/before.log" 2>&1 &
  BEFORE_PID=$!
  wait_ready $BEFORE_PORT
}
start_service
start_baseline
[ -n "${BEFORE_DIR:-}" ] && start_before
port_of() { case $1 in service) echo $SVC_PORT ;; baseline) echo $BASE_PORT ;; before) echo $BEFORE_PORT ;; esac; }
pid_of() { case $1 in service) echo $SVC_PID ;; baseline) echo $BASE_PID ;; before) echo $BEFORE_PID ;; esac; }
# The database a contender serves from (`before` shares the service's unless BEFORE_DB=own).
db_of() {
  case $1 in
    baseline) echo baseline ;;
    before) if [ -n "$OWN_BEFORE" ]; then echo before; else echo service; fi ;;
    *) echo service ;;
  esac
}

# Seed each database through its own server (8 at a time), then write the reading user's ids to a file for ids.lua.
for who in service baseline ${OWN_BEFORE:+before}; do
  port=$(port_of $who)
  key=$(read_key $who)
  seq 1 "$PROJECTS" | xargs -P 8 -I{} curl -sf -o /dev/null -X POST "http://127.0.0.1:$port/v1/projects" \
    -H "Authorization: Bearer $key" -H 'content-type: application/json' \
    -d '{"name":"bench {}","description":"project number {}"}'
  for page in $(seq 1 $(((PROJECTS + 99) / 100))); do
    curl -sf "http://127.0.0.1:$port/v1/projects?per_page=100&page=$page" -H "Authorization: Bearer $key" |
      bun -e 'for (const p of JSON.parse(await Bun.stdin.text()).data) console.log(p.id)'
  done >"$WORK/ids.$who"
  [ "$(wc -l <"$WORK/ids.$who")" -eq "$PROJECTS" ] || { echo "$who: expected $PROJECTS ids" >&2; exit 1; }
done
# Every contender starts again once seeding is done, so all of them come to the first round alike: the seeding's
# requests (served by the service and the baseline, and by `before` only on a database of its own) would otherwise
# have shaped their JIT and heap.
SEEDED=1
for pid in $SVC_PID $BASE_PID ${BEFORE_PID:-}; do kill -INT "$pid"; wait "$pid" 2>/dev/null || true; done
[ -n "${BENCH_PROFILE:-}" ] && mkdir -p "$BENCH_PROFILE"
start_service
start_baseline
[ -n "${BEFORE_DIR:-}" ] && start_before
for who in $WHO; do
  port=$(port_of $who)
  for path in "/v1/projects/$(head -1 "$WORK/ids.$(db_of $who)")" "/v1/projects?per_page=20&page=40"; do
    curl -sf -o /dev/null "http://127.0.0.1:$port$path" -H "Authorization: Bearer $(read_key "$who")" || { echo "$who $path fails" >&2; exit 1; }
  done
done

# wrk once against <who>, for <what>: "req/s p99_ms non2xx cpu_us_per_request" (bench/lib.sh `wrk_figures`).
load() {
  local who=$1 what=$2 port
  port=$(port_of "$who")
  case $what in
    get) wrk_figures "$(pid_of "$who")" -c"$CONNECTIONS" -d"$DURATION" -s bench/ids.lua -H "Authorization: Bearer $(read_key "$who")" "http://127.0.0.1:$port" -- "$WORK/ids.$(db_of "$who")" ;;
    list) wrk_figures "$(pid_of "$who")" -c"$CONNECTIONS" -d"$DURATION" -s bench/pages.lua -H "Authorization: Bearer $(read_key "$who")" "http://127.0.0.1:$port" ;;
    create) wrk_figures "$(pid_of "$who")" -c"$CONNECTIONS" -d"$DURATION" -s bench/create.lua -H "Authorization: Bearer $(write_key "$who")" "http://127.0.0.1:$port/v1/projects" ;;
  esac
}
# Resident memory (MiB) now; each contender's figure is the most it held right after one of its own runs, so the
# order of the contenders (the last one's run just ended, the others have had time to collect) does not count.
rss() { ps -o rss= -p "$1" | awk '{printf "%.0f", $1/1024}'; }
declare -A RSS
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# The rounds' spread as ± half the range, in % of the median: the noise of one figure in this sitting.
spread() { sort -g | awk '{a[NR]=$1} END {m=(NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2); printf "±%.0f%%", (a[NR]-a[1])/2/m*100}'; }
values() { tr ' ' '\n' <<<"$1" | grep .; }

# The contenders' order is reversed every other round (A B C, C B A, …): a contender's place in a round moves its
# figures (of three, the third paid more for its creates in the first rounds, whichever contender it was), so with
# an even number of rounds each contender takes each place equally often.
REVERSED=$(tr ' ' '\n' <<<"$WHO" | tac | tr '\n' ' ')
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $PROJECTS projects; $CONNECTIONS connections; $DURATION × $ROUNDS rounds (A B C, C B A)"
# With an odd number of rounds the first contender is first in a round once more than it is last, and a place moves
# figures (bench/README.md: the same build in both slots, 2026-11-30).
if [ $((ROUNDS % 2)) -eq 1 ]; then
  echo "  (an odd number of rounds: the places in a round are unbalanced, so the slots are too; use an even number)"
fi
declare -A RPS P99 CPU
# Each contender, just restarted, first serves every endpoint unmeasured for $WARMUP (default 20s), so the rounds
# measure it in its steady state, not while its JIT is still compiling (the service, the larger program, takes
# longer to get there; bench/README.md has the curves).
for who in $WHO; do
  for what in $ENDPOINTS; do
    read -r rps p99 _ cpu < <(DURATION=${WARMUP:-20s} load "$who" "$what")
    echo "  $what warm-up $who: $rps req/s, p99 $p99 ms, CPU $cpu µs/request (not counted)"
  done
done
# thread_ticks <pid>: "<thread name> <CPU ticks>" for each of its threads (names without their numbers).
thread_ticks() {
  local task
  for task in /proc/"$1"/task/*; do
    printf '%s %s\n' "$(tr -d '0-9 ' <"$task/comm")" "$(awk '{print $14 + $15}' "$task/stat" 2>/dev/null || echo 0)"
  done | awk '{t[$1] += $2} END {for (n in t) print n, t[n]}'
}
declare -A THREADS_BEFORE
if [ -n "${BENCH_THREADS:-}" ]; then for who in $WHO; do THREADS_BEFORE[$who]=$(thread_ticks "$(pid_of "$who")"); done; fi
for what in $ENDPOINTS; do
  for round in $(seq 1 "$ROUNDS"); do
    order=$WHO
    if [ $((round % 2)) = 0 ]; then order=$REVERSED; fi
    for who in $order; do
      read -r rps p99 bad cpu < <(load "$who" "$what")
      echo "  $what round $round $who: $rps req/s, p99 $p99 ms, CPU $cpu µs/request"
      [ "$bad" = 0 ] || echo "  ^ $bad answers were not 2xx: this figure does not count" >&2
      RPS[$who.$what]+="$rps "
      P99[$who.$what]+="$p99 "
      CPU[$who.$what]+="$cpu "
      held=$(rss "$(pid_of "$who")")
      if [ "$held" -gt "${RSS[$who]:-0}" ]; then RSS[$who]=$held; fi
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A TITLE=([get]="GET by id" [list]="list, pages 1–40" [create]="create")
head="| req/s (noise), p99 ms"; rule="|---"; for what in $ENDPOINTS; do head+=" | ${TITLE[$what]}"; rule+="|---"; done
printf '\n%s | RSS |\n%s|---|\n' "$head" "$rule"
declare -A MR MP MC
for who in $WHO; do
  row="| $who"
  for what in $ENDPOINTS; do
    MR[$who.$what]=$(values "${RPS[$who.$what]}" | median)
    MP[$who.$what]=$(values "${P99[$who.$what]}" | median)
    MC[$who.$what]=$(values "${CPU[$who.$what]}" | median)
    row+=" | ${MR[$who.$what]} ($(values "${RPS[$who.$what]}" | spread)), p99 ${MP[$who.$what]}"
  done
  echo "$row | ${RSS[$who]} MiB |"
done
ratio_row() {
  local a=$1 b=$2 row="| $1 ÷ $2"
  for what in $ENDPOINTS; do
    row+=" | $(awk -v a="${MR[$a.$what]}" -v b="${MR[$b.$what]}" -v c="${MP[$a.$what]}" -v d="${MP[$b.$what]}" 'BEGIN {printf "**%.2f×**, p99 %.2f×", a/b, c/d}')"
  done
  echo "$row | $(awk -v a="${RSS[$a]}" -v b="${RSS[$b]}" 'BEGIN {printf "%.2f×", a/b}') |"
}
ratio_row service baseline
# paired_row <a> <b>: each round's a ÷ b (the two ran within seconds of each other, so the machine's drift over
# minutes, which moves every contender's figures by up to a third, falls on both), as the median and quartiles of
# the rounds' ratios: req/s, and the CPU a request as b ÷ a (above 1: a spends less). A round a figure is missing
# from (wrk printed none) is left out.
paired_row() {
  local a=$1 b=$2 row="| $1 ÷ $2, paired by round"
  for what in $ENDPOINTS; do
    row+=" | $(paste -d' ' <(values "${RPS[$a.$what]}") <(values "${RPS[$b.$what]}") \
      <(values "${CPU[$a.$what]}") <(values "${CPU[$b.$what]}") |
      awk '($2 + 0) > 0 && ($3 + 0) > 0 {print $1 / $2, $4 / $3}' | quartiles)"
  done
  echo "$row | |"
}
# quartiles: "**median×** (q1–q3), CPU median×" of lines "<rate ratio> <CPU ratio>" (quartiles interpolated).
quartiles() {
  local lines rates cpus
  lines=$(cat)
  rates=$(cut -d' ' -f1 <<<"$lines" | sort -g | tr '\n' ' ')
  cpus=$(cut -d' ' -f2 <<<"$lines" | sort -g | tr '\n' ' ')
  awk -v r="$rates" -v c="$cpus" 'function at(s, f,   v, n, i, lo) {
      n = split(s, v, " "); i = 1 + (n - 1) * f; lo = int(i)
      return lo >= n ? v[n] : v[lo] + (i - lo) * (v[lo + 1] - v[lo])
    }
    BEGIN { printf "**%.2f×** (%.2f–%.2f), CPU %.2f×", at(r, 0.5), at(r, 0.25), at(r, 0.75), at(c, 0.5) }'
}
paired_row service baseline
if [ -n "${BENCH_THREADS:-}" ]; then
  # µs a request only with one endpoint: the threads' ticks cover every endpoint's rounds.
  echo "CPU by thread during the rounds (share of the contender's CPU; with one endpoint, µs a request by its median):"
  for who in $WHO; do
    cpu_each=0
    if [ "$(wc -w <<<"$ENDPOINTS")" = 1 ]; then cpu_each=$(values "${CPU[$who.${ENDPOINTS// /}]}" | median); fi
    join -a 2 -e 0 -o 0,1.2,2.2 <(sort <<<"${THREADS_BEFORE[$who]}") <(thread_ticks "$(pid_of "$who")" | sort) |
      awk -v who="$who" -v each="$cpu_each" '{d[$1] = $3 - $2; total += $3 - $2}
        END {for (n in d) if (d[n] > 0) {
          printf "  %s %-22s %5.1f %%", who, n, 100 * d[n] / total
          if (each > 0) printf "  %6.0f µs", each * d[n] / total
          printf "\n"
        }}' |
      sort -k3 -rn
  done
fi
[ -n "${BEFORE_DIR:-}" ] && ratio_row service before && paired_row service before
printf '\nServer CPU per request (µs, median of the rounds):\n'
for who in $WHO; do
  row="  $who:"
  for what in $ENDPOINTS; do row+=" $what ${MC[$who.$what]}"; done
  echo "$row"
done
