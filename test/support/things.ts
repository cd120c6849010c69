/**
 * A table of `things` in a SQLite file, for the tests of the SQLite floor's transactions (test/unit/sqlite-statements,
 * test/unit/group-commit): whether a row is committed as another connection (another process's) sees it, and many
 * transactions at once, some failing, some traced.
 */
import { Database } from "bun:sqlite"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"

/** Whether the row `id` of `things` in `file` is committed, as another connection sees it. */
export const committedIn = (file: string) => (id: number) => {
  const other = new Database(file, { readonly: true })
  try {
    return other.query("SELECT 1 FROM things WHERE id = ?").get(id) !== null
  } finally {
    other.close()
  }
}

/**
 * 150 transactions at once through `transaction` (ids 100–249), each writing its row; those whose id ends in 3 fail
 * after writing, and every seventh runs with tracing on. Answers, for each, whether it succeeded and whether its row
 * was committed (as `committed` sees it) when it answered.
 */
export const manyAtOnce = (
  sql: SqlClient.SqlClient,
  transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>,
  committed: (id: number) => boolean
) =>
  Effect.forEach(
    Array.from({ length: 150 }, (_, i) => 100 + i),
    (id) => {
      const write = sql`INSERT INTO things (id, name) VALUES (${id}, ${`many ${id}`})`
      const change = transaction(id % 10 === 3 ? Effect.zipRight(write, Effect.fail("no")) : write)
      const traced = id % 7 === 0 ? change.pipe(Effect.withTracerEnabled(true)) : change
      return Effect.map(Effect.either(traced), (result) => ({ id, ok: result._tag === "Right", seen: committed(id) }))
    },
    { concurrency: "unbounded" }
  )

/** What `manyAtOnce` must answer: those whose id ends in 3 failed, the others succeeded, each seen as it answered. */
export const expectedOfMany = (outcomes: ReadonlyArray<{ id: number; ok: boolean; seen: boolean }>) => ({
  wrongOutcome: outcomes.filter((outcome) => outcome.ok !== (outcome.id % 10 !== 3)),
  seenOtherwise: outcomes.filter((outcome) => outcome.seen !== outcome.ok)
})
