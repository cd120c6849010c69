/**
 * The `sqlite-statements` fast path (docs/fast-paths.md): the SQLite client, made with `@effect/sql`'s public
 * constructor (`SqlClient.make`) over a `bun:sqlite` connection of its own, whose statements run straight on that
 * connection when tracing is off and no statement transformer is set. Feature code is unchanged: it still writes
 * `sql\`…\``, `sql.unsafe` and `sql.withTransaction`, and gets the same rows, the same `SqlError`s and the same
 * isolation. Its twin is the client as `@effect/sql-sqlite-bun` makes it (`SqliteClient.layer`).
 *
 * Through `@effect/sql`, every statement opens a span (a no-op one with tracing off), a `Scope`, and a lease of the
 * connection. Here:
 *
 * - **One connection, one gate.** The connection is this module's (so it is held, not found), and `gate`, a
 *   one-permit `Semaphore`, lends it: to a transaction from its `BEGIN` to its end (the client's `reserve` and its
 *   transactions, the group-commit writer's batches included, src/Sql/GroupCommit.ts). A statement outside a
 *   transaction runs at once when the gate is free (the check and bun:sqlite's synchronous run are one step, so no
 *   transaction can begin in between), and otherwise waits for the gate and holds it while it runs. So it never reads
 *   another's uncommitted writes. (`@effect/sql-sqlite-bun` lends its connection to such a statement only until the
 *   statement is handed it, not while it runs.)
 * - **Statements straight to the connection** (src/Sql/Straight.ts, which `pg-statements` shares): with tracing off
 *   and no transformer, a statement runs on the transaction's connection (`TransactionConnection`) or, outside one,
 *   as above: no span, no `Scope`. Otherwise it is the library's statement, with its span.
 *
 * Kept by hand rather than taken from `@effect/sql-sqlite-bun`: the connection (its three `bun:sqlite` calls), which
 * that client keeps to itself.
 */
import { Database } from "bun:sqlite"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, Layer, type Stream } from "effect"
import { type Outside, straightClient } from "./Straight.js"

/** `bun:sqlite`'s query for `text`, its integers as `safeIntegers` says (`SqlClient.SafeIntegers`). */
const queryOf = (db: Database, text: string, safeIntegers: boolean) => db.query(text).safeIntegers(safeIntegers)
// bun:sqlite's binding takes its parameters as they come; the cast says what the driver accepts.
type Binding = Parameters<ReturnType<Database["query"]>["all"]>
const failed = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })

/** The connection, as `@effect/sql-sqlite-bun` makes its own: `bun:sqlite`'s cached query for the text, run. */
const connectionOf = (db: Database): Connection => {
  const run = <A>(text: string, read: (query: ReturnType<Database["query"]>) => A) =>
    Effect.withFiberRuntime<A, SqlError>((fiber) => {
      try {
        return Effect.succeed(read(queryOf(db, text, Context.get(fiber.currentContext, SqlClient.SafeIntegers))))
      } catch (cause) {
        return Effect.fail(failed(cause))
      }
    })
  const rows = (text: string, params: ReadonlyArray<unknown>) =>
    run(text, (query): ReadonlyArray<unknown> => query.all(...(params as Binding)))
  const connection: Connection = {
    execute: (text, params, transformRows) =>
      transformRows
        ? Effect.map(rows(text, params), (found) => transformRows(found as Array<object>))
        : rows(text, params),
    executeRaw: rows,
    executeValues: (text, params) =>
      run(text, (query): ReadonlyArray<ReadonlyArray<unknown>> => query.values(...(params as Binding))),
    executeUnprepared: (text, params, transformRows) => connection.execute(text, params, transformRows),
    executeStream: (): Stream.Stream<never, SqlError> => Effect.dieMessage("executeStream not implemented")
  }
  return connection
}

/** The client over the SQLite file `filename` (`:memory:` for none), closed with its scope. */
export const makeSqliteClient = (filename: string) =>
  Effect.gen(function* () {
    const db = yield* Effect.acquireRelease(
      Effect.sync(() => new Database(filename, { readwrite: true, create: true })),
      (db) => Effect.sync(() => db.close())
    )
    const connection = connectionOf(db)
    const gate = yield* Effect.makeSemaphore(1)
    /** Whether the gate is held (by a transaction, or a statement that waited for it). */
    let held = false
    /** The connection, lent until the scope of whoever asked closes. */
    const lease = Effect.as(
      Effect.acquireRelease(
        Effect.zipRight(
          gate.take(1),
          Effect.sync(() => {
            held = true
          })
        ),
        () =>
          Effect.zipRight(
            Effect.sync(() => {
              held = false
            }),
            gate.release(1)
          )
      ),
      connection
    )
    const library = yield* SqlClient.make({
      acquirer: lease,
      transactionAcquirer: lease,
      compiler: Statement.makeCompilerSqlite(),
      spanAttributes: [["db.system.name", "sqlite"]]
    })
    // With the gate free, the statement runs now, in this synchronous step: nothing can begin a transaction first;
    // otherwise it waits for the gate and holds it while it runs.
    const outside: Outside = <A>(text: string, params: ReadonlyArray<unknown>, context: Context.Context<never>) => {
      if (held) {
        return Effect.scoped(
          Effect.flatMap(
            lease,
            (connection): Effect.Effect<ReadonlyArray<A>, SqlError> => connection.execute(text, params, undefined)
          )
        )
      }
      try {
        // The rows as the statement's type says, as the library's connection answers them (`any`).
        const safeIntegers = Context.get(context, SqlClient.SafeIntegers)
        return Effect.succeed(queryOf(db, text, safeIntegers).all(...(params as Binding)) as ReadonlyArray<A>)
      } catch (cause) {
        return Effect.fail(failed(cause))
      }
    }
    return straightClient(library, outside)
  })

/** The client of `makeSqliteClient` as a layer. */
export const layer = (filename: string) =>
  Layer.scoped(SqlClient.SqlClient, makeSqliteClient(filename)).pipe(Layer.provide(Reactivity.layer))
