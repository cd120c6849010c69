/**
 * Webhooks, the event outbox, deliveries and their attempts. An event and its deliveries are written in the
 * transaction of the change that caused them; the delivery worker only reads what was committed.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE webhooks (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      url TEXT NOT NULL,
      events TEXT NOT NULL,
      secret TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('active', 'failed')),
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      failed_at TEXT
    )`
  yield* sql`CREATE INDEX webhooks_user_created ON webhooks (user_id, created_at, id)`
  yield* sql`CREATE UNIQUE INDEX webhooks_user_url ON webhooks (user_id, url)`
  yield* sql`
    CREATE TABLE events (
      id TEXT PRIMARY KEY,
      type TEXT NOT NULL,
      payload TEXT NOT NULL,
      trace_context TEXT,
      created_at TEXT NOT NULL
    )`
  yield* sql`
    CREATE TABLE deliveries (
      id TEXT PRIMARY KEY,
      webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
      event_id TEXT NOT NULL REFERENCES events (id),
      event_type TEXT NOT NULL,
      status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
      attempt_count INTEGER NOT NULL DEFAULT 0,
      manual INTEGER NOT NULL DEFAULT 0,
      next_attempt_at TEXT,
      last_attempt_at TEXT,
      claimed_until TEXT,
      claim_token TEXT,
      created_at TEXT NOT NULL
    )`
  yield* sql`CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending'`
  yield* sql`CREATE INDEX deliveries_webhook_created ON deliveries (webhook_id, created_at, id)`
  yield* sql`
    CREATE TABLE delivery_attempts (
      delivery_id TEXT NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
      number INTEGER NOT NULL,
      attempted_at TEXT NOT NULL,
      duration_ms INTEGER NOT NULL,
      status_code INTEGER,
      error TEXT,
      response_body TEXT,
      outcome TEXT NOT NULL CHECK (outcome IN ('succeeded', 'failed')),
      PRIMARY KEY (delivery_id, number)
    )`
})
