/**
 * A pending invitation past its expiry reads as `expired` (src/Teams/Repo.ts) but is stored as `pending` until
 * something marks it. One index over the stored-pending rows by expiry: the retention sweep (src/Retention/) marks
 * the lapsed ones `expired` by it, a batch at a time; and a team's `pending` and `expired` totals are its counters
 * (migration 0006) corrected by the count of its pending invitations past their expiry, read from the same range,
 * which holds only those that lapsed (in any team) since the last sweep.
 *
 * Not keyed by team: an index of a team's pending invitations is one a team's `pending` page can be read from too,
 * and SQLite then read all of them and sorted them by creation rather than walk the (team, status, created_at)
 * index of migration 0015 and stop after the page.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX invitations_pending_expiry ON invitations (expires_at) WHERE status = 'pending'`
})
