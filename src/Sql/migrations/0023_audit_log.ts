/**
 * The audit log (docs/audit.md): one row per change and per security-relevant act, written by the outbox
 * (`Events.record`) in the change's own transaction. Append-only: nothing but the retention sweep deletes a row, and
 * no foreign key ties a row to what it names, so a record outlives its actor, its target and its team.
 *
 * `user_id` is the user whose security log the record belongs to besides its actor's (the owner of the key, webhook,
 * OAuth app, grant or private project it is about; the account a failed sign-in names). A team's log walks
 * `(team_id, created_at, id)`, a user's log `(actor_id, …)` and `(user_id, …)` merged; the sweep `(created_at)`.
 *
 * The logs' cursor (`after`) walks the feed sequence (src/Sql/Sequence.ts): on SQLite `seq` is the rowid, so `id` is
 * `UNIQUE` rather than the key; the walks are `(team_id, <sequence>)`, `(actor_id, <sequence>)` and
 * `(user_id, <sequence>)`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import * as Sequence from "../Sequence.js"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE audit_log (
      ${Sequence.columns(sql)},
      id ${sql.onDialectOrElse({ pg: () => sql.literal("TEXT PRIMARY KEY"), orElse: () => sql.literal("TEXT NOT NULL UNIQUE") })},
      action TEXT NOT NULL,
      actor_type TEXT NOT NULL,
      actor_id TEXT,
      actor_name TEXT,
      credential_type TEXT,
      credential_id TEXT,
      target_type TEXT NOT NULL,
      target_id TEXT NOT NULL,
      target_name TEXT,
      team_id TEXT,
      user_id TEXT,
      ip TEXT,
      user_agent TEXT,
      request_id TEXT,
      changes TEXT,
      created_at TEXT NOT NULL
    )`
  yield* sql`CREATE INDEX audit_log_team_created ON audit_log (team_id, created_at, id)`
  yield* sql`CREATE INDEX audit_log_actor_created ON audit_log (actor_id, created_at, id)`
  yield* sql`CREATE INDEX audit_log_user_created ON audit_log (user_id, created_at, id)`
  yield* sql`CREATE INDEX audit_log_created ON audit_log (created_at)`
  yield* sql`CREATE INDEX audit_log_team_seq ON audit_log (team_id, ${Sequence.indexColumns(sql)})`
  yield* sql`CREATE INDEX audit_log_actor_seq ON audit_log (actor_id, ${Sequence.indexColumns(sql)})`
  yield* sql`CREATE INDEX audit_log_user_seq ON audit_log (user_id, ${Sequence.indexColumns(sql)})`
})
