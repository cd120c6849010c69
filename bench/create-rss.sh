#!/usr/bin/env bash
# RSS after minutes of creates (issue 45, goal 6: "RSS after five minutes of creates ≤ 1.25× the baseline's"): the
# service (`bun src/main.ts`, its defaults but the rate limit) against the idiomatic baseline (bench/baseline/server.ts,
# BASELINE_ENV passed to it, e.g. BASELINE_ENV="BASELINE_AUDIT=1"), each on a fresh SQLite file of its own (a fresh
# PostgreSQL database of its own when DATABASE_URL names a server: bench/lib.sh), server on core 0 and wrk on core 1
# (-c64, bench/create.lua), in the order A B B A. Each: DURATION of creates (5m unless
# given) in 30 s pieces, VmRSS read from /proc after each piece; prints each piece's creates/s and RSS, then per run
# the RSS at the end, its highest and the median creates/s of its pieces, and for each contender the median of every
# RSS sample (SAMPLES: RSS moves by tens of MiB between two pieces, with the garbage not yet collected), of the RSS at
# the ends, of the highest, and of the creates/s, with the ratio. BEFORE_DIR=/path/to/another/checkout (with
# node_modules; BEFORE_ENV its settings) adds that version of the service as a third contender (in the order
# A B C C B A, on a database this checkout's migrations made).
# Usage: [BEFORE_DIR=…] bash bench/create-rss.sh [minutes=5]
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-5}
PORT=${BENCH_PORT:-3931}
command -v wrk >/dev/null || { echo "wrk is needed: apt-get install wrk" >&2; exit 1; }
# shellcheck source=bench/lib.sh
source bench/lib.sh
PG_SERVER=$(is_postgres "${DATABASE_URL:-}" && echo "$DATABASE_URL" || true)

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
declare -A END PEAK RATE SAMPLES
for who in $(abba_order); do
  WORK=$(mktemp -d)
  start_on_fresh_database "$who" "$WORK" "$PORT"
  pid=$PID key=$KEY
  peak=0 rates=()
  for _ in $(seq 1 $((MINUTES * 2))); do
    read -r rps _ _ _ < <(wrk_figures "$pid" -c64 -d30s -s bench/create.lua -H "Authorization: Bearer $key" \
      "http://127.0.0.1:$PORT/v1/projects")
    rss=$(rss_mib "$pid")
    ((rss > peak)) && peak=$rss
    rates+=("$rps")
    SAMPLES[$who]="${SAMPLES[$who]:-} $rss"
    printf '  %s: %s creates/s, RSS %s MiB\n' "$who" "$rps" "$rss"
  done
  rate=$(median <<<"${rates[*]}")
  END[$who]="${END[$who]:-} $rss" PEAK[$who]="${PEAK[$who]:-} $peak" RATE[$who]="${RATE[$who]:-} $rate"
  echo "$who: RSS at the end $rss MiB, highest $peak MiB, creates/s $rate (median of the pieces)"
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  drop_fresh_databases
  rm -rf "$WORK"
done

echo
for figure in SAMPLES END PEAK RATE; do
  declare -n table=$figure
  b=$(median <<<"${table[baseline]}")
  for who in service ${BEFORE_DIR:+before}; do
    s=$(median <<<"${table[$who]}")
    printf '%-4s %s %s (%s), baseline %s (%s), %s ÷ baseline %.2f×\n' "$figure" "$who" "$s" "${table[$who]# }" \
      "$b" "${table[baseline]# }" "$who" "$(awk -v s="$s" -v b="$b" 'BEGIN {print s / b}')"
  done
done
