/**
 * Webhooks a receiver can trust and an owner can debug:
 * - `webhooks.previous_secret` / `previous_secret_expires_at`: the secret rotated out by `rotate-secret`, which
 *   still signs every attempt (as the second `webhook-signature` entry) until it expires. Never more than one: a
 *   second rotation within the overlap replaces it with the secret that rotation takes out.
 * - `delivery_attempts.request_headers` / `response_headers`: JSON objects of the headers sent (signatures
 *   included) and received (null without a response). The payload is not copied: it is the event's, stored once in
 *   `events.payload`, and every attempt sends exactly those bytes. Attempts made before this migration have no
 *   headers recorded (null).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhooks ADD COLUMN previous_secret TEXT`
  yield* sql`ALTER TABLE webhooks ADD COLUMN previous_secret_expires_at TEXT`
  yield* sql`ALTER TABLE delivery_attempts ADD COLUMN request_headers TEXT`
  yield* sql`ALTER TABLE delivery_attempts ADD COLUMN response_headers TEXT`
})
