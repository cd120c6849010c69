/**
 * Work that runs in one process at a time, however many replicas share the database. On PostgreSQL an advisory
 * lock (a number per kind of work, below); the database releases it when the transaction or the session ends, so a
 * replica killed while holding one never keeps the others out. On SQLite one process owns the file (a second
 * server on the same file is not a supported set-up), so nothing more is needed there.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"

/** The advisory lock numbers of this service: fixed, so every replica (and the CLI) asks for the same lock. */
const LOCKS = {
  /** Applying migrations. */
  migrations: 4_242_001,
  /** Making the first JWT signing key. */
  signingKeys: 4_242_002,
  /** A retention sweep. */
  retention: 4_242_003
} as const

export type LockName = keyof typeof LOCKS

/**
 * `effect` in one transaction that first takes the lock `name` (PostgreSQL: waits for whoever holds it). Another
 * process asking meanwhile waits until this transaction ends, then sees what it committed.
 */
export const exclusively = <A, E, R>(
  name: LockName,
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError, R | SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      pg: () =>
        sql.withTransaction(Effect.zipRight(sql.unsafe(`SELECT pg_advisory_xact_lock(${LOCKS[name]})`), effect)),
      orElse: () => effect
    })
  )

/**
 * `effect` while holding the lock `name` in a session of its own (PostgreSQL), so `effect` may commit many short
 * transactions of its own meanwhile. `wait: false`: `None` at once when another process holds it; `wait: true`:
 * waits for it.
 */
export const holding = <A, E, R>(
  name: LockName,
  options: { readonly wait: boolean },
  effect: Effect.Effect<A, E, R>
): Effect.Effect<Option.Option<A>, E | SqlError, R | SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      pg: () =>
        Effect.scoped(
          Effect.gen(function* () {
            const holder = yield* sql.reserve
            const [row] = yield* holder.executeValues(
              options.wait
                ? `SELECT TRUE FROM pg_advisory_lock(${LOCKS[name]})`
                : `SELECT pg_try_advisory_lock(${LOCKS[name]})`,
              []
            )
            if (row?.[0] !== true) return Option.none()
            return yield* Effect.map(effect, Option.some).pipe(
              Effect.ensuring(Effect.ignore(holder.executeValues(`SELECT pg_advisory_unlock(${LOCKS[name]})`, [])))
            )
          })
        ),
      orElse: () => Effect.map(effect, Option.some)
    })
  )
