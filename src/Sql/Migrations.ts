import * as Migrator from "@effect/sql/Migrator"
import { Effect } from "effect"
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
import m0013 from "./migrations/0013_oauth_apps.js"
import m0014 from "./migrations/0014_list_order.js"

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
  "0013_oauth_apps": m0013,
  "0014_list_order": m0014
}

const migrate = Migrator.make({})

/** Applies what is missing; answers the `[id, name]` pairs it applied. */
export const runMigrations = migrate({ loader: Migrator.fromRecord(migrations) }).pipe(Effect.withSpan("Sql.migrate"))

/**
 * Applies the migrations before `name` only: a database as it was before that migration, for testing what the
 * migration does to rows already there (a backfill); `runMigrations` then applies the rest.
 */
export const runMigrationsBefore = (name: keyof typeof migrations) =>
  migrate({
    loader: Migrator.fromRecord(Object.fromEntries(Object.entries(migrations).filter(([key]) => key < name)))
  })
