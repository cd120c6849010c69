/**
 * A webhook's `rate_limit` (attempts a second, null for none) and its pace, shared by every replica: `rate_next_ms`
 * is the earliest time (milliseconds since the epoch) at which the next attempt to it may start. Each start moves
 * it on by one second over the limit (src/Webhooks/Delivery/Repo.ts). The index finds the limited webhooks for the
 * claim, which takes their deliveries apart from the others.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhooks ADD COLUMN rate_limit INTEGER`
  yield* sql`ALTER TABLE webhooks ADD COLUMN rate_next_ms DOUBLE PRECISION`
  yield* sql`CREATE INDEX webhooks_rate_limited ON webhooks (id) WHERE rate_limit IS NOT NULL`
})
