/**
 * Indexes that let every list walk its rows in sort order and stop after one page: one
 * `(owner, sort column, id)` index per sort key of each list with an ownership condition, and for team projects
 * `(team_id, sort column, id)` over `visibility = 'team'` rows only (the branch src/Projects/Repo.ts reads per team).
 * The project indexes carry `status` and `owner_id` too, so the status filter, the team branch's "not mine" and
 * the per-branch counts read the index alone, never the table.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX projects_owner_created`
  for (const column of ["created_at", "updated_at", "name"]) {
    const short = column.replace("_at", "")
    yield* sql.unsafe(`CREATE INDEX projects_owner_${short} ON projects (owner_id, ${column}, id, status)`)
    yield* sql.unsafe(
      `CREATE INDEX projects_team_${short} ON projects (team_id, ${column}, id, owner_id, status) WHERE visibility = 'team'`
    )
  }
  yield* sql`CREATE INDEX api_keys_user_name ON api_keys (user_id, name, id)`
  yield* sql`CREATE INDEX webhooks_user_updated ON webhooks (user_id, updated_at, id)`
})
