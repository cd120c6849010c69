/**
 * `If-Match` on a write (RFC 9110 §13.1.1), compared where the write happens: inside the write's own transaction,
 * against the record as it is there, so of several writes carrying the same tag exactly one succeeds, on both
 * engines and across replicas. On PostgreSQL the record's row is locked first (`FOR NO KEY UPDATE`, which leaves
 * the rows referring to it free to be written), so a concurrent write of it waits for this transaction to end and
 * then compares against what it committed; on SQLite the transactions of the one process run one after another
 * already (one connection, lent to one transaction at a time; a batch of the group-commit writer,
 * src/Sql/GroupCommit.ts, runs its changes one after the other). Without `If-Match` nothing of this runs: the last write wins.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, type Schema } from "effect"
import { PreconditionFailed } from "../Domain/Errors.js"
import { currentIfMatch, etagOfRecord, ifMatchHolds } from "../Domain/ETag.js"

/** The tables whose rows a conditional write locks (a fixed set: the name goes into the statement). */
export type ConditionalTable = "projects" | "webhooks" | "users" | "teams" | "deployments" | "oauth_clients"

/**
 * `read` (the record a write is about to change, as its GET shows it) for a write that honours `If-Match`: with the
 * header, the row `id` of `table` is locked before it is read, and the write fails with `PreconditionFailed` unless
 * the record's tag (as `schema` encodes it) is among those listed (or the header is `*`). Must run inside the write's
 * transaction.
 */
export const readForWrite = <A, I, E, R>(
  schema: Schema.Schema<A, I>,
  table: ConditionalTable,
  id: string,
  read: Effect.Effect<A, E, R>
): Effect.Effect<A, E | PreconditionFailed, R | SqlClient.SqlClient> =>
  Effect.flatMap(currentIfMatch, (ifMatch) => {
    if (ifMatch === undefined) return read
    const locked = Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.onDialectOrElse({
        pg: () => Effect.orDie(sql`SELECT 1 FROM ${sql(table)} WHERE id = ${id} FOR NO KEY UPDATE`),
        orElse: () => Effect.void
      })
    )
    return Effect.zipRight(
      locked,
      Effect.tap(read, (current) =>
        Effect.flatMap(etagOfRecord(schema, current), (tag) =>
          ifMatchHolds(ifMatch, tag)
            ? Effect.void
            : Effect.fail(new PreconditionFailed({ message: PreconditionFailed.default }))
        )
      )
    )
  })

/**
 * `readForWrite` for a write that does not otherwise read the record first: without `If-Match`, nothing at all (no
 * read); with it, the lock, the read and the comparison. Inside the write's transaction (`whenConditional`).
 */
export const checkIfMatch = <A, I, E, R>(
  schema: Schema.Schema<A, I>,
  table: ConditionalTable,
  id: string,
  read: Effect.Effect<A, E, R>
): Effect.Effect<void, E | PreconditionFailed, R | SqlClient.SqlClient> =>
  Effect.flatMap(currentIfMatch, (ifMatch) =>
    ifMatch === undefined ? Effect.void : Effect.asVoid(readForWrite(schema, table, id, read))
  )

/**
 * `write` in a transaction of its own when the request carries `If-Match` (so its comparison and its change are
 * one), as it is otherwise: for a write that runs no transaction of its own.
 */
export const whenConditional = <A, E, R>(write: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | SqlClient.SqlClient> =>
  Effect.flatMap(currentIfMatch, (ifMatch) =>
    ifMatch === undefined
      ? write
      : Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.catchTag(sql.withTransaction(write), "SqlError", Effect.die)
        )
  )

/**
 * `If-Match` on a write of a resource that has no `ETag` (no `GET` of its own: a membership, an invitation, an API
 * key, a grant, a session): a list of tags never matches, so the write fails with `PreconditionFailed`; `*` matches
 * the resource, which exists. Called where the write has found the resource and checked the caller's right to it,
 * so that whatever it answers without the header (401, 403, 404, 409) comes first (RFC 9110 §13.2.1); inside the
 * write's transaction where the write itself is what finds the resource (a failure rolls it back).
 */
export const untaggedIfMatch: Effect.Effect<void, PreconditionFailed> = Effect.flatMap(currentIfMatch, (ifMatch) =>
  ifMatch === undefined || ifMatch === "*"
    ? Effect.void
    : Effect.fail(new PreconditionFailed({ message: PreconditionFailed.default }))
)
