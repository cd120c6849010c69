# Shared by the bench scripts (sourced, not run).

# The servers and CLI runs of a benchmark share one key for the secrets at rest (PostgreSQL requires one): the test
# suite's fixed key (test/support/fixtures.ts), for benchmarks only, unless SECRETS_KEY is set.
export SECRETS_KEY=${SECRETS_KEY:-3KbG4VxO++UTjONN54gymXe0oCOLUT4gd16cS/HyB+I=}

# json_field <field>: that field of the `data` of the JSON envelope on stdin (what the CLI prints).
json_field() { bun -e "console.log(JSON.parse(await Bun.stdin.text()).data.$1)"; }

# not_all_201 [file]: whether hey's output (the file, or stdin) counts an answer other than 201.
not_all_201() { awk '/Status code distribution/ {codes = 1} codes && /^ *\[[0-9]+\]/ && !/\[201\]/ {bad = 1} END {exit !bad}' "$@"; }

# is_postgres <url>: whether <url> names a PostgreSQL server (postgres:// or postgresql://).
is_postgres() { [[ $1 =~ ^postgres(ql)?:// ]]; }

# pg_database <url> <name>: makes a fresh, empty database <name> on the PostgreSQL server of <url> and prints its URL
# (<url> with <name> for its path). Whoever makes it drops it (`pg_drop <url> <name>`).
pg_database() {
  psql -q "$1" -c "CREATE DATABASE $2" >/dev/null
  bun -e 'const u = new URL(process.argv[1]); u.pathname = `/${process.argv[2]}`; console.log(u.toString())' "$1" "$2"
}
pg_drop() { psql -q "$1" -c "DROP DATABASE IF EXISTS $2 WITH (FORCE)" >/dev/null; }

# ticks <pid>: the CPU time (user + system, in clock ticks) the process has used so far.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# rss_mib <pid>: the process's resident memory (VmRSS), in whole MiB.
rss_mib() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }

# abba_order: the order the contenders of start_on_fresh_database run in: service baseline baseline service, or with
# BEFORE_DIR service before baseline baseline before service.
abba_order() {
  if [ -n "${BEFORE_DIR:-}" ]; then echo "service before baseline baseline before service"
  else echo "service baseline baseline service"; fi
}

# wrk_figures <pid> <wrk arguments…>: runs wrk on core 1 (one thread, --latency) against the server of <pid>, and
# prints "req/s p99-in-ms non-2xx-answers server-CPU-µs-per-request" (a figure wrk did not print is "?"). The CPU is
# the server's time over the requests completed: what a request costs it, which the machine's other load moves far
# less than req/s.
wrk_figures() {
  local pid=$1 out before after rps p99 bad cpu
  shift
  before=$(ticks "$pid")
  out=$(taskset -c 1 wrk -t1 --latency "$@")
  after=$(ticks "$pid")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  cpu=$(awk -v t=$((after - before)) -v hz="$(getconf CLK_TCK)" '/requests in/ {printf "%.0f", t / hz * 1e6 / $1}' <<<"$out")
  p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  echo "${rps:-?} ${p99:-?} ${bad:-0} ${cpu:-?}"
}

# start_on_fresh_database <service|before|baseline> <dir> <port>: a user with an API key on a fresh database, then
# that contender on core 0 on <port> (the service at its defaults but the rate limit; `before`, the same from the
# checkout BEFORE_DIR names, with BEFORE_ENV, on a database this checkout's migrations made; the baseline, on a
# database of its own, with BASELINE_ENV), its output in <dir>/out.log, waited for until it answers. Sets KEY and
# PID. The databases are SQLite files in <dir>, or fresh databases on the PostgreSQL server PG_SERVER names when it
# is set (their names kept in FRESH_DATABASES: drop_fresh_databases drops them).
FRESH_DATABASES=()
start_on_fresh_database() {
  local who=$1 dir=$2 port=$3 user service_db baseline_db name
  if [ -n "${PG_SERVER:-}" ]; then
    name=bench_${who}_$$_$RANDOM
    FRESH_DATABASES+=("$name")
    service_db=$(pg_database "$PG_SERVER" "$name")
    if [ "$who" = baseline ]; then
      name=bench_${who}_own_$$_$RANDOM
      FRESH_DATABASES+=("$name")
      baseline_db=$(pg_database "$PG_SERVER" "$name")
    fi
  else
    service_db=sqlite:$dir/service.sqlite baseline_db=$dir/baseline.sqlite
  fi
  export DATABASE_URL=$service_db
  user=$(bun src/cli.ts users create --email "bench-$RANDOM$RANDOM@example.com" --name Bench | json_field id)
  KEY=$(bun src/cli.ts api-keys create --user "$user" --name bench --scopes read,write | json_field key)
  if [ "$who" = service ]; then
    RATE_LIMIT_PER_MINUTE=1000000000 PORT=$port HOST=127.0.0.1 taskset -c 0 bun src/main.ts >"$dir/out.log" 2>&1 &
  elif [ "$who" = before ]; then
    # shellcheck disable=SC2086
    (cd "$BEFORE_DIR" && RATE_LIMIT_PER_MINUTE=1000000000 PORT=$port HOST=127.0.0.1 \
      exec env ${BEFORE_ENV:-} taskset -c 0 bun src/main.ts) >"$dir/out.log" 2>&1 &
  else
    # shellcheck disable=SC2086
    env ${BASELINE_ENV:-} BASELINE_DB="$baseline_db" BASELINE_KEYS="$user:$KEY" PORT=$port \
      taskset -c 0 bun bench/baseline/server.ts >"$dir/out.log" 2>&1 &
  fi
  PID=$!
  # (Up to 30 s: a first start on a fresh PostgreSQL database runs every migration. Each probe gives up after 2 s: the
  # baseline on node:http, still starting, has accepted a probe's connection and never answered it.)
  for _ in $(seq 1 300); do curl -s -m 2 -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
}
drop_fresh_databases() {
  local name
  for name in "${FRESH_DATABASES[@]}"; do pg_drop "$PG_SERVER" "$name"; done
  FRESH_DATABASES=()
}
