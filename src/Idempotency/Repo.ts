/**
 * The `idempotency_keys` table (migration 0010): a user's keys and the answers recorded with them. Every statement
 * but `pruneExpired` runs inside the transaction of the keyed request (src/Idempotency/Http.ts), so the key row
 * commits, or not, with the change it describes.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option, Schema } from "effect"
import { KeyRing, rowIdOf } from "../Secrets/KeyRing.js"
import * as Rows from "../Sql/Repository.js"

/** A recorded answer, as stored. */
export const RecordedAnswer = Schema.Struct({
  request_hash: Schema.String,
  status: Schema.Int,
  content_type: Schema.NullOr(Schema.String),
  body: Schema.String
})
export type RecordedAnswer = typeof RecordedAnswer.Type

/** A key with its first request and answer, to be recorded. */
export const KeyRecord = Schema.Struct({
  user_id: Schema.String,
  idempotency_key: Schema.String,
  ...RecordedAnswer.fields,
  created_at: Schema.String,
  expires_at: Schema.String
})
export type KeyRecord = typeof KeyRecord.Type

export class IdempotencyRepo extends Effect.Service<IdempotencyRepo>()("IdempotencyRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // A recorded answer may show a secret once (a new API key, a client secret): stored encrypted, the user and
    // the key its associated data (src/Secrets/KeyRing.ts).
    const keyRing = yield* KeyRing
    const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })

    /**
     * Takes the user's key for the rest of the transaction, or answers `false` at once when another transaction
     * holds it. PostgreSQL: a transaction-scoped advisory lock on a 64-bit hash of user and key (released by the
     * commit or rollback, after which the committed row is visible to the next holder's statements). SQLite has
     * one writer: transactions run one at a time, so there is nothing to take.
     */
    const lock = (userId: string, key: string): Effect.Effect<boolean, SqlError> => {
      if (!pg) return Effect.succeed(true)
      return sql<{ readonly locked: boolean }>`
        SELECT pg_try_advisory_xact_lock(hashtextextended(${`${userId} ${key}`}, 0)) AS locked`.pipe(
        Effect.map((rows) => rows[0]?.locked === true)
      )
    }

    /** The answer recorded with a live (unexpired at `now`) key. */
    const findRow = Rows.findOne({
      Request: Schema.Struct({ user_id: Schema.String, idempotency_key: Schema.String, now: Schema.String }),
      Result: RecordedAnswer,
      execute: ({ idempotency_key, now, user_id }) =>
        sql`SELECT request_hash, status, content_type, body FROM idempotency_keys
            WHERE user_id = ${user_id} AND idempotency_key = ${idempotency_key} AND expires_at > ${now}`
    })

    /**
     * Records a key's first answer. An expired row of the same key (not yet pruned) is replaced; a live one is
     * never overwritten: the statement then writes nothing and this dies, rolling the change back (the lock makes
     * that impossible, so it would be a bug).
     */
    /** The answer recorded with a live key, decrypted; one that cannot be decrypted is a defect (never replayed). */
    const find = (request: { readonly user_id: string; readonly idempotency_key: string; readonly now: string }) =>
      Effect.flatMap(
        findRow(request),
        Option.match({
          onNone: () => Effect.succeed(Option.none<RecordedAnswer>()),
          onSome: (row) =>
            Effect.map(
              Effect.orDie(keyRing.decrypt(row.body, rowIdOf([request.user_id, request.idempotency_key]))),
              (body) => Option.some({ ...row, body })
            )
        })
      )

    const insert = Rows.findAll({
      Request: KeyRecord,
      Result: Schema.Struct({ user_id: Schema.String }),
      execute: (row) =>
        sql`INSERT INTO idempotency_keys ${sql.insert(row)}
            ON CONFLICT (user_id, idempotency_key) DO UPDATE SET
              request_hash = excluded.request_hash, status = excluded.status, content_type = excluded.content_type,
              body = excluded.body, created_at = excluded.created_at, expires_at = excluded.expires_at
            WHERE idempotency_keys.expires_at <= excluded.created_at
            RETURNING user_id`
    })
    const record = (row: KeyRecord) =>
      keyRing.encrypt(row.body, rowIdOf([row.user_id, row.idempotency_key])).pipe(
        Effect.flatMap((body) => insert({ ...row, body })),
        Effect.flatMap((written) =>
          written.length === 1 ? Effect.void : Effect.die(new Error("an Idempotency-Key already held an answer"))
        )
      )

    /**
     * Deletes at most `limit` keys expired at `now` (the oldest first, by the `expires_at` index); answers how
     * many. Call it until it answers less than `limit` to delete them all, each batch its own short statement.
     */
    const pruneExpired = (limit: number, now: string = new Date().toISOString()) => {
      const batch = Math.max(0, Math.floor(limit))
      // PostgreSQL by row address: matched by key, the rows were found by a hash join over the whole table.
      return sql
        .onDialectOrElse({
          pg: () => sql<{ readonly user_id: string }>`
          DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
            SELECT ctid FROM idempotency_keys WHERE expires_at <= ${now} ORDER BY expires_at LIMIT ${batch}))
          RETURNING user_id`,
          orElse: () => sql<{ readonly user_id: string }>`
          DELETE FROM idempotency_keys WHERE (user_id, idempotency_key) IN (
            SELECT user_id, idempotency_key FROM idempotency_keys WHERE expires_at <= ${now}
            ORDER BY expires_at LIMIT ${batch})
          RETURNING user_id`
        })
        .pipe(Effect.map((rows) => rows.length))
    }

    return { lock, find, record, pruneExpired } as const
  })
}) {}
