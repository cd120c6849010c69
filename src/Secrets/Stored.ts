/**
 * The columns that hold secrets encrypted at rest (src/Secrets/KeyRing.ts), and what is done to all of them at once:
 * encrypting the rows written before encryption (migration 0021), checking at start-up that the key ring can read
 * what is stored, and `bun run cli secrets rotate` (every value re-encrypted under the first key).
 *
 * Rotation runs beside the service: it walks each column in batches by primary key and writes each row with a
 * compare-and-set (`… WHERE <key> AND <column> = <the value read>`), so a value the service changed meanwhile (a
 * webhook's secret rotated, an answer recorded again) is never overwritten with an older one; passes repeat until
 * one finds nothing left under another key.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option } from "effect"
import {
  KeyRing,
  type KeyRingService,
  keyIdOf,
  PREFIX_LENGTH,
  prefixOf,
  rowIdOf,
  type SecretUnreadable
} from "./KeyRing.js"

/** A column of secrets: its table, the primary key's columns (their values make the row's id: `rowIdOf`). */
interface SecretColumn {
  readonly table: string
  readonly keys: ReadonlyArray<string>
  readonly column: string
}

export const SECRET_COLUMNS: ReadonlyArray<SecretColumn> = [
  // A webhook's shared secret, or for an `ed25519` webhook its private key (PKCS #8), and the rotated-out one.
  { table: "webhooks", keys: ["id"], column: "secret" },
  { table: "webhooks", keys: ["id"], column: "previous_secret" },
  { table: "jwt_signing_keys", keys: ["kid"], column: "private_jwk" },
  { table: "idempotency_keys", keys: ["user_id", "idempotency_key"], column: "body" }
]

const nameOf = (column: SecretColumn) => `${column.table}.${column.column}`

type Row = Readonly<Record<string, unknown>>

const text = (value: unknown): string => (typeof value === "string" ? value : String(value))

/** How each value of a pass is changed: answers the value to store, or none to leave it. */
type Change = (value: string, rowId: string) => Effect.Effect<Option.Option<string>, SecretUnreadable>

/**
 * One walk over `column` in batches of `batch` rows by primary key, the rows `pending` selects; each row's `change`
 * written if the value is still the one read. Answers how many were written and how many had changed meanwhile.
 */
const walk = (
  column: SecretColumn,
  batch: number,
  pending: (sql: SqlClient.SqlClient) => Fragment | undefined,
  change: Change
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const keys = column.keys.map((key) => sql`${sql(key)}`)
    const keyList = sql.csv(keys)
    const filter = pending(sql)
    let after: ReadonlyArray<unknown> | undefined
    let written = 0
    let changedMeanwhile = 0
    for (;;) {
      const rows: ReadonlyArray<Row> = yield* sql`
        SELECT ${keyList}, ${sql(column.column)} AS value FROM ${sql(column.table)}
        WHERE ${sql(column.column)} IS NOT NULL
          ${filter === undefined ? sql`` : sql`AND ${filter}`}
          ${after === undefined ? sql`` : sql`AND (${keyList}) > (${sql.csv(after.map((value) => sql`${value}`))})`}
        ORDER BY ${keyList} LIMIT ${batch}`
      for (const row of rows) {
        const ids = column.keys.map((key) => row[key])
        const value = text(row.value)
        const next = yield* change(value, rowIdOf(ids.map(text)))
        if (Option.isNone(next)) continue
        const where = sql.and([
          ...column.keys.map((key, i) => sql`${sql(key)} = ${ids[i]}`),
          sql`${sql(column.column)} = ${value}`
        ])
        const updated: ReadonlyArray<Row> = yield* sql`
          UPDATE ${sql(column.table)} SET ${sql(column.column)} = ${next.value} WHERE ${where}
          RETURNING ${sql(column.keys[0] ?? "")}`
        if (updated.length === 1) written++
        else changedMeanwhile++
      }
      const last = rows.at(-1)
      if (last === undefined || rows.length < batch) break
      after = column.keys.map((key) => last[key])
    }
    return { written, changedMeanwhile }
  })

/**
 * Migration 0021: every secret written before encryption, encrypted under the first key. Runs in the migration's
 * transaction, under the migrations' lock (one process does it, the others find it done).
 */
export const encryptExisting = (ring: KeyRingService) =>
  Effect.forEach(
    SECRET_COLUMNS,
    (column) =>
      walk(
        column,
        500,
        () => undefined,
        (value, rowId) => Effect.map(ring.encrypt(value, rowId), Option.some)
      ),
    { discard: true }
  )

/** What `rotate` did, per column and in all. */
export interface Rotation {
  readonly key: string
  readonly reencrypted: number
  /** Values found in clear (written by a replica of a version before encryption), now encrypted. */
  readonly encrypted_from_clear: number
  readonly passes: number
  readonly columns: Record<string, number>
}

/**
 * `bun run cli secrets rotate`: every stored secret not under the first key is decrypted (by the key it names) and
 * encrypted under the first, in batches of `batch`, while the service runs. A value found in clear is encrypted.
 */
export const rotate = (batch = 200) =>
  Effect.gen(function* () {
    const ring = yield* KeyRing
    const current = prefixOf(ring.currentKeyId)
    const columns: Record<string, number> = {}
    let reencrypted = 0
    let fromClear = 0
    let passes = 0
    for (;;) {
      passes++
      let written = 0
      let changedMeanwhile = 0
      for (const column of SECRET_COLUMNS) {
        const outcome = yield* walk(
          column,
          batch,
          (sql) => sql`substr(${sql(column.column)}, 1, ${PREFIX_LENGTH}) <> ${current}`,
          (value, rowId) => {
            if (Option.isNone(keyIdOf(value))) {
              fromClear++
              return Effect.map(ring.encrypt(value, rowId), Option.some)
            }
            return Effect.flatMap(ring.decrypt(value, rowId), (plain) =>
              Effect.map(ring.encrypt(plain, rowId), Option.some)
            )
          }
        )
        columns[nameOf(column)] = (columns[nameOf(column)] ?? 0) + outcome.written
        written += outcome.written
        changedMeanwhile += outcome.changedMeanwhile
      }
      reencrypted += written
      // A value changed meanwhile may have been copied from one not yet rotated (a webhook's secret becoming its
      // previous one): another pass finds it. New values are always written under the first key.
      if (changedMeanwhile === 0 || passes >= 20) break
    }
    const rotation: Rotation = {
      key: ring.currentKeyId,
      reencrypted: reencrypted - fromClear,
      encrypted_from_clear: fromClear,
      passes,
      columns
    }
    return rotation
  }).pipe(Effect.withSpan("Secrets.rotate"))

/** At start-up: a stored secret the ring cannot read stops it, naming the key it needs. */
export class SecretsKeyMissing extends Error {
  override readonly name = "SecretsKeyMissing"
}

/**
 * At start-up, after the migrations: refuses to serve (a defect naming `SECRETS_KEY`) when a stored secret is
 * encrypted under a key the ring does not hold, rather than failing at each delivery, sign-in and replay. Looks at
 * every webhook and signing key, and at the latest recorded answers (the table of answers may be large); a value in
 * clear (written by an older version) is logged, for `secrets rotate` to encrypt.
 */
export const checkStored: Effect.Effect<void, SqlError, SqlClient.SqlClient | KeyRing> = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const ring = yield* KeyRing
  const known = ring.keyIds.map(prefixOf)
  for (const column of SECRET_COLUMNS) {
    const source =
      column.table === "idempotency_keys"
        ? sql`(SELECT ${sql(column.column)} FROM idempotency_keys ORDER BY expires_at DESC LIMIT 1000) recent`
        : sql`${sql(column.table)}`
    const found = yield* sql<{ readonly value: string }>`
      SELECT ${sql(column.column)} AS value FROM ${source}
      WHERE ${sql(column.column)} IS NOT NULL
        AND substr(${sql(column.column)}, 1, ${PREFIX_LENGTH}) NOT IN ${sql.in(known)}
      LIMIT 1`
    const value = found[0]?.value
    if (value === undefined) continue
    const keyId = keyIdOf(value)
    if (Option.isNone(keyId)) {
      yield* Effect.logWarning(
        `${nameOf(column)} holds secrets in clear (written by an earlier version): run \`bun run cli secrets rotate\` to encrypt them`
      )
      continue
    }
    return yield* Effect.die(
      new SecretsKeyMissing(
        `SECRETS_KEY does not hold the key stored secrets (${nameOf(column)}) are encrypted under: key ${keyId.value} ` +
          `is missing (the ring holds ${ring.keyIds.join(", ")}). Add that key to SECRETS_KEY (after the first, to ` +
          "decrypt only), or restore secrets.key beside a SQLite database"
      )
    )
  }
})
