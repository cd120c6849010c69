/**
 * For tests that check what triggers keep (list counters, copied columns) against the rows after random writes
 * straight to SQL: a seeded generator, so a failing sequence can be replayed, well-formed ids, and the round's
 * write — one, or two in one transaction; and the check that a migration's backfill fills the copies.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClientLive, SqlLive } from "../../src/Sql/Client.ts"
import { runMigrationsBefore } from "../../src/Sql/Migrations.ts"
import { withDatabaseUrl } from "./fixtures.ts"
import { freshDatabaseUrl } from "./server.ts"

/** A small deterministic generator (mulberry32). */
export const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

export type Pick = <A>(xs: ReadonlyArray<A>) => A

/** Well-formed ids (`<prefix>_` and 26 base32 digits), numbered from 1 for each maker. */
export const idMaker = () => {
  let seq = 0
  return (prefix: string) => `${prefix}_${String(++seq).padStart(26, "0")}`
}

/**
 * One random write (chosen by `choose` against the rows there now), or half the time two in one transaction;
 * answers what it did, for the failure message.
 */
export const randomWriteOf =
  <R>(
    choose: (
      rand: () => number
    ) => Effect.Effect<readonly [label: string, write: () => Effect.Effect<unknown, unknown, R>], unknown, R>
  ) =>
  (rand: () => number) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const one = Effect.flatMap(choose(rand), ([label, write]) => Effect.as(write(), label))
      if (rand() < 0.5) return yield* one
      return yield* sql.withTransaction(Effect.map(Effect.all([one, one]), (labels) => labels.join(" + ")))
    })

/**
 * `rounds` rounds of 10 writes from `write`, `check` after each round; a failing check names that round's writes.
 * Answers every write's label, for asserting that the sequence reached the kinds that matter.
 */
export const writeInRounds = async (
  rounds: number,
  write: () => Promise<string>,
  check: (round: number) => Promise<void>
): Promise<ReadonlyArray<string>> => {
  const done: Array<string> = []
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < 10; i++) done.push(await write())
    try {
      await check(round)
    } catch (error) {
      throw new Error(`after: ${done.slice(-10).join("; ")}\n${String(error)}`)
    }
  }
  return done
}

/**
 * A copy kept by `migration`'s triggers is also filled for rows written before it: `seed` (with a fixed random pick)
 * writes on a database migrated up to just before `migration`; the rest of the migrations then run, and `check`
 * reads the copies with `services` (over the migrated database).
 */
export const checkBackfill = async <S>(options: {
  readonly migration: Parameters<typeof runMigrationsBefore>[0]
  readonly seed: (pick: Pick) => Effect.Effect<unknown, unknown, SqlClient.SqlClient>
  readonly services: Layer.Layer<S, never, SqlClient.SqlClient>
  readonly check: Effect.Effect<unknown, unknown, S | SqlClient.SqlClient>
}): Promise<void> => {
  const databaseUrl = await freshDatabaseUrl()
  const rand = random(5)
  const old = ManagedRuntime.make(SqlClientLive.pipe(Layer.provide(withDatabaseUrl(databaseUrl))))
  await old.runPromise(
    Effect.zipRight(
      runMigrationsBefore(options.migration),
      options.seed((xs) => xs[Math.floor(rand() * xs.length)]!)
    )
  )
  await old.dispose()
  const migrated = ManagedRuntime.make(
    options.services.pipe(Layer.provideMerge(SqlLive), Layer.provide(withDatabaseUrl(databaseUrl)))
  )
  await migrated.runPromise(options.check)
  await migrated.dispose()
}
