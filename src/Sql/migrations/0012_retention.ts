/**
 * Indexes the retention sweep (src/Retention/) reads by, so each of its batches reads the rows it deletes and no
 * others, at any table size:
 *
 * - ended deliveries by the time they ended (their last attempt), oldest first;
 * - deliveries by event: whether an old event still has a pending delivery, its deliveries when it goes, and the
 *   foreign-key check of every event deleted (without it, PostgreSQL scans the deliveries once per event);
 * - events by creation time;
 * - OAuth authorization requests, codes and tokens by expiry.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX deliveries_ended ON deliveries (last_attempt_at) WHERE status IN ('delivered', 'failed')`
  yield* sql`CREATE INDEX deliveries_event ON deliveries (event_id, status)`
  yield* sql`CREATE INDEX events_created ON events (created_at)`
  yield* sql`CREATE INDEX oauth_authorizations_expires ON oauth_authorizations (expires_at)`
  yield* sql`CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at)`
  yield* sql`CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at)`
})
