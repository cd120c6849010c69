/**
 * Manual retries stand outside the schedule (docs/webhooks.md): `deliveries.manual` now means "a manual attempt is
 * asked for" beside whatever the schedule says (status and `next_attempt_at` are left alone), and each attempt says
 * what made it, `schedule` or `manual` (the attempts made before were all counted as scheduled ones).
 *
 * A manual retry asked for under the old rules made the delivery `pending` again with one attempt due: it becomes a
 * failed delivery with a manual attempt asked for, which is what it stood for.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE delivery_attempts ADD COLUMN "trigger" TEXT NOT NULL DEFAULT 'schedule'
    CHECK ("trigger" IN ('schedule', 'manual'))`
  yield* sql`UPDATE deliveries SET status = 'failed', next_attempt_at = NULL WHERE manual = 1 AND status = 'pending'`
  // The claimer's second look: the deliveries with a manual attempt asked for (few, and only until it is made).
  yield* sql`CREATE INDEX deliveries_manual ON deliveries (id) WHERE manual = 1`
})
