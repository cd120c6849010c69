/**
 * Indexes so that page 1 of every list, with and without its status filter, walks an index in sort order and
 * stops after the page (test/lists/query-plans.test.ts explains each list shape on both engines).
 *
 * Projects: the indexes of 0006 lead with `status` after the owner (or team), which serves a status filter as an
 * index prefix but leaves an unfiltered list one branch per status to merge. These lead with the owner (or team)
 * and the sort column, so an unfiltered list is one ordered walk per owner or team (src/Projects/Repo.ts); they
 * carry `status` (and, for teams, `owner_id`) so the filters a branch applies read no table row.
 *
 * API keys: a key's status is derived (revoked, else expired by the clock, else active). `revoked` and `expired`
 * are usually few among many keys, so each has a partial index in sort order, over the rows that can have it;
 * `active` walks the ordinary index and skips the others.
 *
 * Deliveries: pending deliveries of one webhook (a backlog when its endpoint is down) in creation order, over the
 * pending rows only, so the index is as small as the backlog.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const column of ["created_at", "updated_at", "name"]) {
    const short = column.replace("_at", "")
    yield* sql.unsafe(`CREATE INDEX projects_owner_all_${short} ON projects (owner_id, ${column}, id, status)`)
    yield* sql.unsafe(
      `CREATE INDEX projects_team_all_${short} ON projects (team_id, ${column}, id, owner_id, status) WHERE visibility = 'team'`
    )
  }
  for (const column of ["created_at", "name"]) {
    const short = column.replace("_at", "")
    yield* sql.unsafe(
      `CREATE INDEX api_keys_user_revoked_${short} ON api_keys (user_id, ${column}, id) WHERE revoked_at IS NOT NULL`
    )
    yield* sql.unsafe(
      `CREATE INDEX api_keys_user_expiring_${short} ON api_keys (user_id, ${column}, id, expires_at)
       WHERE revoked_at IS NULL AND expires_at IS NOT NULL`
    )
  }
  yield* sql`CREATE INDEX deliveries_webhook_pending ON deliveries (webhook_id, created_at, id) WHERE status = 'pending'`
})
