#!/bin/bash
# rss.sh <dir> <port> [env…]: RSS (MiB) of that build's server after each of 4 create runs of 8 s, then after 5 s idle
set -e
dir=$1; port=$2; shift 2; work=$(mktemp -d)
cd "$dir"
export DATABASE_URL=sqlite:$work/db.sqlite
json_field() { bun -e "console.log(JSON.parse(await Bun.stdin.text()).data.$1)"; }
user=$(bun src/cli.ts users create --email "rss-$RANDOM@example.com" --name Rss | json_field id)
key=$(bun src/cli.ts api-keys create --user "$user" --name bench --scopes read,write | json_field key)
env "$@" RATE_LIMIT_PER_MINUTE=1000000000 PORT=$port HOST=127.0.0.1 taskset -c 0 bun src/main.ts >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break; sleep 0.1; done
rss() { ps -o rss= -p "$pid" | awk '{printf "%.0f", $1/1024}'; }
out="start $(rss)"
for i in 1 2 3 4; do
  taskset -c 1 wrk -t1 -c${CONN:-64} -d8s -s /work/main/bench/create.lua -H "Authorization: Bearer $key" "http://127.0.0.1:$port/v1/projects" >/dev/null
  out="$out run$i $(rss)"
done
sleep 5; out="$out idle $(rss)"
echo "$dir $*: $out"
kill -INT $pid; wait $pid 2>/dev/null || true
rm -rf "$work"
