/**
 * Webhook health (the webhook list's `health`): per webhook, its deliveries by when they were last attempted, so its
 * latest attempt is one step back along the index and its last 24 hours' attempts are one range of it, however long
 * its delivery log is. Deliveries never attempted are left out (they have no `last_attempt_at`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX deliveries_webhook_attempted ON deliveries (webhook_id, last_attempt_at, id)
    WHERE last_attempt_at IS NOT NULL`
})
