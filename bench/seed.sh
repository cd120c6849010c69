# Sourced by the HTTP benchmarks: a user with a read,write API key in $KEY (through the CLI, on $DATABASE_URL),
# and `seed_projects PORT` to create 100 projects over HTTP (so a list has full pages), the first one's id in $PROJECT_ID.
# shellcheck source=bench/lib.sh
source bench/lib.sh

USER_ID=$(bun src/cli.ts users create --email "bench-$RANDOM$RANDOM@example.com" --name Bench | json_field id)
KEY=$(bun src/cli.ts api-keys create --user "$USER_ID" --name bench --scopes read,write | json_field key)

seed_projects() {
  local port=$1 id
  PROJECT_ID=""
  for i in $(seq 1 100); do
    id=$(curl -sf -X POST "http://127.0.0.1:$port/v1/projects" -H "Authorization: Bearer $KEY" \
      -H 'content-type: application/json' -d "{\"name\":\"bench $i\",\"description\":\"project number $i\"}" | json_field id)
    PROJECT_ID=${PROJECT_ID:-$id}
  done
}
