/**
 * Secrets at rest (src/Secrets/KeyRing.ts): the webhook secrets (current and previous), the JWT private keys and the
 * recorded idempotent answers written before this version were in clear; each is encrypted here under the first key
 * of the ring, in the migration's transaction. The columns keep their type (text).
 *
 * The key ring comes from the context `runMigrations` runs in (src/Sql/Migrations.ts). Without one (a test's
 * `runMigrationsBefore`) a database with nothing to encrypt is migrated all the same; one with secrets stops here.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { KeyRing } from "../../Secrets/KeyRing.js"
import { encryptExisting, SECRET_COLUMNS } from "../../Secrets/Stored.js"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const ring = yield* Effect.serviceOption(KeyRing)
  if (Option.isSome(ring)) return yield* encryptExisting(ring.value)
  for (const { column, table } of SECRET_COLUMNS) {
    const rows = yield* sql`SELECT 1 AS found FROM ${sql(table)} WHERE ${sql(column)} IS NOT NULL LIMIT 1`
    if (rows.length > 0)
      return yield* Effect.dieMessage("migration 0021 encrypts stored secrets: it needs the key ring")
  }
})
