/**
 * A webhook an operator disabled (`bun run cli webhooks disable`): while `disabled_at` is set it is sent nothing,
 * no new deliveries are made for it and those already pending wait, unclaimed, until it is enabled again.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhooks ADD COLUMN disabled_at TEXT`
})
