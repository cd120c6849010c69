/**
 * The webhooks an operator disabled, found by an index of their own: the worker's claim leaves their deliveries (and
 * the rate-limited webhooks', `webhooks_rate_limited`) out at every claim, which then reads those two short indexes
 * rather than every webhook (src/Webhooks/Repo.ts `claim`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX webhooks_disabled ON webhooks (id) WHERE disabled_at IS NOT NULL`
})
