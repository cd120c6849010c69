/**
 * How a change gets a transaction of its own: what `Events.transaction` (the outbox, src/Events/Events.ts) runs every
 * change through. Two implementations behind one interface, chosen by `FAST_PATHS` (`group-commit`,
 * docs/fast-paths.md):
 *
 * - `group-commit`, on SQLite: the writer of src/Sql/GroupCommit.ts, which commits the changes that arrive together
 *   in one SQLite transaction, each in a savepoint of its own, and answers each once that has committed.
 * - `plain`, its twin, and what PostgreSQL always uses: `sql.withTransaction`, one transaction per change, as the
 *   library makes it.
 *
 * Either way, inside a transaction already, a change is a savepoint of it.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect } from "effect"
import { FastPathsConfig } from "../Config.js"
import { makeGroupCommit } from "./GroupCommit.js"

export interface TransactionRunner {
  /** Which implementation runs: the writer or the library's transaction. */
  readonly kind: "group-commit" | "plain"
  /** `effect` in a transaction of its own (a savepoint, inside one): committed when it answers, rolled back if it fails. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
}

export class Transactions extends Effect.Service<Transactions>()("Sql/Transactions", {
  scoped: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const fast = (yield* Effect.orDie(FastPathsConfig)).has("group-commit")
    const sqlite = sql.onDialectOrElse({ sqlite: () => true, orElse: () => false })
    const runner: TransactionRunner =
      fast && sqlite
        ? { kind: "group-commit", transaction: yield* makeGroupCommit(sql) }
        : { kind: "plain", transaction: sql.withTransaction }
    return runner
  })
}) {}
