/**
 * Rows are decoded where they leave the database: `@effect/sql`'s `SqlSchema` constructors against the Domain
 * record (or a Row schema that transforms to it). A row that does not decode, or a request that does not encode,
 * is a bug in this service, never the caller's fault: it becomes a defect here (answered as 500 and logged), so
 * a repository fails only with `SqlError`.
 */

import type { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Cause, Option } from "effect"
import { Effect, Schema } from "effect"
import type { ParseError } from "effect/ParseResult"

interface Query<IA, II, IR, A, AI, AR, R> {
  readonly Request: Schema.Schema<IA, II, IR>
  readonly Result: Schema.Schema<A, AI, AR>
  readonly execute: (request: II) => Effect.Effect<ReadonlyArray<unknown>, SqlError, R>
}

/** Every decoded row. */
export const findAll = <IA, II, IR, A, AI, AR, R>(options: Query<IA, II, IR, A, AI, AR, R>) => {
  const run = SqlSchema.findAll(options)
  return (request: IA): Effect.Effect<ReadonlyArray<A>, SqlError, R | IR | AR> =>
    Effect.catchTag(run(request), "ParseError", Effect.die)
}

/** The first row, decoded, if there is one. */
export const findOne = <IA, II, IR, A, AI, AR, R>(options: Query<IA, II, IR, A, AI, AR, R>) => {
  const run = SqlSchema.findOne(options)
  return (request: IA): Effect.Effect<Option.Option<A>, SqlError, R | IR | AR> =>
    Effect.catchTag(run(request), "ParseError", Effect.die)
}

/** The one row a statement must answer (its absence is a bug too). */
export const single = <IA, II, IR, A, AI, AR, R>(options: Query<IA, II, IR, A, AI, AR, R>) => {
  const run = SqlSchema.single(options)
  return (request: IA): Effect.Effect<A, SqlError, R | IR | AR> =>
    Effect.catchTags(run(request), {
      ParseError: (error: ParseError) => Effect.die(error),
      NoSuchElementException: (error: Cause.NoSuchElementException) => Effect.die(error)
    })
}

/** A statement whose request is encoded by schema and whose result is not read. */
export const write = <IA, II, IR, R>(options: {
  readonly Request: Schema.Schema<IA, II, IR>
  readonly execute: (request: II) => Effect.Effect<unknown, SqlError, R>
}) => {
  const run = SqlSchema.void(options)
  return (request: IA): Effect.Effect<void, SqlError, R | IR> => Effect.catchTag(run(request), "ParseError", Effect.die)
}

/**
 * A JSON column (a TEXT column holding JSON: API-key scopes, webhook events). Every JSON column is TEXT on both
 * engines (see the migrations), so both return text and this one schema decodes, and encodes, it everywhere.
 */
export const JsonText = <A, I, R>(schema: Schema.Schema<A, I, R>) => Schema.parseJson(schema)

/** `CAST(count(*) AS INTEGER)`: a number on both engines; text if a driver ever answers a bigint as a string. */
export const Count = Schema.Union(Schema.Int, Schema.NumberFromString)
