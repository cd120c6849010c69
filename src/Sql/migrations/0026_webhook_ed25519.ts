/**
 * Webhooks signed with Ed25519 (`"signature": "ed25519"`): `signature` says how a webhook's deliveries are signed
 * (`hmac`, the shared secret as before, or `ed25519`); for an Ed25519 webhook `secret` / `previous_secret` hold its
 * private keys (PKCS #8, base64, encrypted at rest like every secret) and `public_key` / `previous_public_key` the
 * public ones as shown (`whpk_…`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE webhooks ADD COLUMN signature TEXT NOT NULL DEFAULT 'hmac'`
  yield* sql`ALTER TABLE webhooks ADD COLUMN public_key TEXT`
  yield* sql`ALTER TABLE webhooks ADD COLUMN previous_public_key TEXT`
})
