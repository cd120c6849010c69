/**
 * A database failure is a defect for a service: answered 500, or 503 when the database is out of reach
 * (src/Http/ErrorTranslation.ts), and logged once. Repositories fail with `SqlError` (so a caller can catch a
 * unique-key clash by hand, src/Sql/Errors.ts `isUniqueViolation`); a service turns their failures into defects
 * once, where it takes its repository (`orDie(yield* ProjectsRepo)`), and a transaction's `SqlError` where it
 * opens one (`dieOnSqlError`), not at each call.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Predicate } from "effect"

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
