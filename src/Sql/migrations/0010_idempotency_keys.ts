/**
 * `Idempotency-Key`s and the answers recorded with them (src/Idempotency/Http.ts). A row is written in the same
 * transaction as the change its request made, so a key is either free (nothing committed) or holds the answer to
 * the change that did commit. One row per user and key; `request_hash` is the method, path and canonical body the
 * key was first used with. `body` is the answer's bytes as UTF-8 text (every `/v1` answer is JSON, or empty).
 * Rows past `expires_at` are treated as absent and deleted in batches by `IdempotencyRepo.pruneExpired`, which
 * walks the `expires_at` index.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE idempotency_keys (
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      idempotency_key TEXT NOT NULL,
      request_hash TEXT NOT NULL,
      status INTEGER NOT NULL,
      content_type TEXT,
      body TEXT NOT NULL,
      created_at TEXT NOT NULL,
      expires_at TEXT NOT NULL,
      PRIMARY KEY (user_id, idempotency_key)
    )`
  yield* sql`CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at)`
})
