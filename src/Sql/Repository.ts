/**
 * What a repository answers, and how a service takes it. Rows are decoded where they leave the database:
 * `@effect/sql`'s `SqlSchema` constructors against the Domain record (or a Row schema that transforms to it). A row
 * that does not decode, or a request that does not encode, is a bug in this service, never the caller's fault: it
 * becomes a defect where it is decoded, so a repository fails only with `SqlError` (and a caller can catch a
 * unique-key clash by hand, src/Sql/Errors.ts `isUniqueViolation`). A database failure is a defect for a service:
 * answered 500, or 503 when the database is out of reach (src/Http/ErrorTranslation.ts), and logged once. A service
 * turns its repository's failures into defects once, where it takes the repository (`orDie(yield* ProjectsRepo)`),
 * and a transaction's `SqlError` where it opens one (`dieOnSqlError`), not at each call.
 */
import type { SqlError } from "@effect/sql/SqlError"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Cause, Option } from "effect"
import { Effect, Predicate, Schema } from "effect"
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

/** `effect` with its `SqlError` as a defect; its other failures as they are. */
export const dieOnSqlError = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.catchIf(effect, (error): error is Extract<E, SqlError> => Predicate.isTagged(error, "SqlError"), Effect.die)

/** A repository's member with every failure as a defect: a method's answer, or an effect. */
type Dying<Member> = Member extends (...args: infer Args) => Effect.Effect<infer A, infer _E, infer R>
  ? (...args: Args) => Effect.Effect<A, never, R>
  : Member extends Effect.Effect<infer A, infer _E, infer R>
    ? Effect.Effect<A, never, R>
    : Member

/** A repository whose every method (and effect) has its failures as defects. */
export type OrDie<Repository> = { readonly [K in Exclude<keyof Repository, "_tag">]: Dying<Repository[K]> }

/**
 * `repository` with every method's failure (`SqlError`, or a row that does not decode) as a defect, wrapped once,
 * as `Effect.orDie` at each call would. Its type is `OrDie<Repository>`, which the checker cannot follow through a
 * loop over the members, so the signature says it (as `Effect.fn`'s do).
 */
export function orDie<Repository extends object>(repository: Repository): OrDie<Repository>
export function orDie(repository: object): object {
  const dying: Record<string, unknown> = {}
  for (const [key, member] of Object.entries(repository)) {
    dying[key] = Effect.isEffect(member)
      ? Effect.orDie(member)
      : typeof member === "function"
        ? (...args: ReadonlyArray<unknown>) => {
            const answer: unknown = member(...args)
            return Effect.isEffect(answer) ? Effect.orDie(answer) : answer
          }
        : member
  }
  return dying
}
