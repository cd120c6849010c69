/**
 * A pending invitation past its expiry reads as `expired` (src/Teams/Repo.ts) but is stored as `pending` until
 * something marks it. Two indexes over the stored-pending rows by expiry:
 *
 * - by team: a team's `pending` and `expired` totals are its counters (migration 0006) corrected by the count of
 *   its pending invitations already past their expiry, read from this index (a short range: see below);
 * - by expiry alone: the retention sweep (src/Retention/) marks the lapsed ones `expired`, a batch at a time, so
 *   the range above holds only those that lapsed since the last sweep.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX invitations_team_pending_expiry ON invitations (team_id, expires_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX invitations_pending_expiry ON invitations (expires_at) WHERE status = 'pending'`
})
