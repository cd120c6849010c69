import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { KeyRing } from "../Secrets/KeyRing.js"
import { exclusively } from "./Locks.js"
import m0001 from "./migrations/0001_foundation.js"
import m0002 from "./migrations/0002_webhooks.js"
import m0003 from "./migrations/0003_oauth.js"
import m0004 from "./migrations/0004_teams_deployments.js"
import m0005 from "./migrations/0005_list_indexes.js"
import m0006 from "./migrations/0006_list_counts.js"
import m0007 from "./migrations/0007_member_team_columns.js"
import m0008 from "./migrations/0008_delivery_count_shards.js"
import m0009 from "./migrations/0009_event_audience.js"
import m0010 from "./migrations/0010_idempotency_keys.js"
import m0011 from "./migrations/0011_webhook_signing.js"
import m0012 from "./migrations/0012_retention.js"
import m0013 from "./migrations/0013_oauth_apps.js"
import m0014 from "./migrations/0014_list_order.js"
import m0015 from "./migrations/0015_list_plans.js"
import m0016 from "./migrations/0016_invitation_expiries.js"
import m0017 from "./migrations/0017_credential_generation.js"
import m0018 from "./migrations/0018_feed_sequence.js"
import m0020 from "./migrations/0020_manual_attempts.js"
import m0021 from "./migrations/0021_secrets_at_rest.js"
import m0022 from "./migrations/0022_sessions.js"
import m0023 from "./migrations/0023_audit_log.js"
import m0024 from "./migrations/0024_webhook_disabled.js"
import m0026 from "./migrations/0026_webhook_ed25519.js"
import m0027 from "./migrations/0027_webhook_health.js"
import m0028 from "./migrations/0028_webhook_rate_limit.js"
import m0029 from "./migrations/0029_webhooks_disabled.js"

/** Every migration, bundled (no directory scan), applied in order on both engines. */
const migrations = {
  "0001_foundation": m0001,
  "0002_webhooks": m0002,
  "0003_oauth": m0003,
  "0004_teams_deployments": m0004,
  "0005_list_indexes": m0005,
  "0006_list_counts": m0006,
  "0007_member_team_columns": m0007,
  "0008_delivery_count_shards": m0008,
  "0009_event_audience": m0009,
  "0010_idempotency_keys": m0010,
  "0011_webhook_signing": m0011,
  "0012_retention": m0012,
  "0013_oauth_apps": m0013,
  "0014_list_order": m0014,
  "0015_list_plans": m0015,
  "0016_invitation_expiries": m0016,
  "0017_credential_generation": m0017,
  "0018_feed_sequence": m0018,
  "0020_manual_attempts": m0020,
  "0021_secrets_at_rest": m0021,
  "0022_sessions": m0022,
  "0023_audit_log": m0023,
  "0024_webhook_disabled": m0024,
  "0026_webhook_ed25519": m0026,
  "0027_webhook_health": m0027,
  "0028_webhook_rate_limit": m0028,
  "0029_webhooks_disabled": m0029
}

const migrate = Migrator.make({})

/**
 * The migrator's table, made here on PostgreSQL (as the migrator makes it) under the lock: the migrator probes for it
 * with a statement that fails when it is missing, which would abort the transaction the lock is held in.
 */
const migrationsTable = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.onDialectOrElse({
    pg: () =>
      sql`CREATE TABLE IF NOT EXISTS effect_sql_migrations (
        migration_id integer primary key,
        created_at timestamp with time zone not null default now(),
        name text not null
      )`.pipe(Effect.asVoid),
    orElse: () => Effect.void
  })
)

/**
 * Applies what is missing; answers the `[id, name]` pairs it applied. One process at a time (replicas started
 * together): on PostgreSQL the others wait for the lock, then find nothing left to apply. The migrator's own table
 * lock comes too late for that: two sessions on an empty database both found no table and both made it (one failed).
 */
export const runMigrations = exclusively(
  "migrations",
  Effect.zipRight(migrationsTable, migrate({ loader: Migrator.fromRecord(migrations) }))
).pipe(
  // Migration 0021 encrypts the secrets stored before it with the key ring (src/Secrets/KeyRing.ts).
  Effect.zipLeft(KeyRing),
  Effect.withSpan("Sql.migrate")
)

/**
 * Applies the migrations before `name` only: a database as it was before that migration, for testing what the
 * migration does to rows already there (a backfill); `runMigrations` then applies the rest.
 */
export const runMigrationsBefore = (name: keyof typeof migrations) =>
  migrate({
    loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([key]) => key < name)))
  })
