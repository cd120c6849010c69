/**
 * The `sqlite-statements` fast path (docs/fast-paths.md): the SQLite client's statements and transactions, run
 * straight on its connection when nothing else could hold it. Feature code is unchanged: it still writes
 * `sql\`…\``, `sql.unsafe` and `sql.withTransaction`, and gets the same rows, the same `SqlError`s and the same
 * isolation.
 *
 * Through `@effect/sql`, every statement opens a span (a no-op one with tracing off), a `Scope`, and a lease of the
 * connection from the client's one-permit semaphore, which makes a statement outside a transaction wait while
 * another fiber's transaction is open on the (single) connection; a transaction opens a span and a `Scope` too, and
 * holds that lease until its `COMMIT` or `ROLLBACK`. Here:
 *
 * - Every outermost transaction waits for its turn on this client's own one-permit semaphore (`turn`) and holds it
 *   until it has ended, counted (`transactions`) from before it waits until after it has ended. With tracing off
 *   and no statement transformer it runs `BEGIN`, the effect and `COMMIT` or `ROLLBACK` itself, as `@effect/sql`
 *   does, without the span and the `Scope`; otherwise it is `@effect/sql`'s own, inside its turn (whose lease is then
 *   always free). A transaction inside one is `@effect/sql`'s savepoint, on the connection the fiber holds.
 * - A statement skips the span, the `Scope` and the lease when tracing is off for the fiber and no statement
 *   transformer is set (`Statement.withTransformer`, `setTransformer`); otherwise it takes the library's way and gets
 *   its `sql.execute` span. Inside a transaction it runs on the connection the fiber holds. Outside one it runs at
 *   once when no transaction is open or waiting and it skips the library's way: bun:sqlite runs it synchronously,
 *   so nothing can begin a transaction first. Otherwise it holds `turn` while it runs, so a read never sees another
 *   fiber's uncommitted writes (and the library's way, which may yield before it runs, never runs inside one).
 *
 * Every transaction goes through this client's `withTransaction`, and nothing else takes the library's lease
 * (`sql.reserve` is used on PostgreSQL only, src/Sql/Locks.ts), so `turn` alone decides who has the connection.
 *
 * The statement class is `@effect/sql`'s own, extended (its `commit` overridden); if a release changes its shape,
 * the client is used as it is (`directStatements` answers it unchanged), and a test says so.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, Exit, type Fiber, FiberRef, Option } from "effect"

/** What `@effect/sql`'s statement class holds and does, as far as this module uses it. */
interface Primitive extends Statement.Statement<unknown> {
  readonly segments: ReadonlyArray<Statement.Segment>
  readonly acquirer: unknown
  readonly compiler: Statement.Compiler
  readonly spanAttributes: ReadonlyArray<readonly [string, unknown]>
  readonly transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  commit(): Effect.Effect<ReadonlyArray<unknown>, SqlError>
}

type PrimitiveClass = new (
  segments: Primitive["segments"],
  acquirer: Primitive["acquirer"],
  compiler: Primitive["compiler"],
  spanAttributes: Primitive["spanAttributes"],
  transformRows: Primitive["transformRows"]
) => Primitive

/** `@effect/sql`'s statement class, if `sample` is one of its statements as this module knows them. */
const primitiveClass = (sample: unknown): PrimitiveClass | undefined => {
  if (typeof sample !== "object" || sample === null) return undefined
  const fields = ["segments", "acquirer", "compiler", "spanAttributes", "transformRows"]
  if (!fields.every((field) => field in sample)) return undefined
  const prototype: unknown = Object.getPrototypeOf(sample)
  if (typeof prototype !== "object" || prototype === null) return undefined
  if (typeof (prototype as { commit?: unknown }).commit !== "function") return undefined
  const make: unknown = (prototype as { constructor?: unknown }).constructor
  return typeof make === "function" && make.length === fields.length ? (make as PrimitiveClass) : undefined
}

/**
 * `sql` with its statements and transactions run straight on `connection` where that changes nothing (above). `sql`
 * must be a SQLite client whose only connection is `connection`, and `turn` this client's alone; answers `sql` itself
 * if its statements are not as expected.
 */
export const directStatements = (
  sql: SqlClient.SqlClient,
  connection: Connection,
  /** One permit: held by an outermost transaction until it has ended, and by a statement that cannot run at once. */
  turn: Effect.Semaphore
): SqlClient.SqlClient => {
  const Base = primitiveClass(sql`SELECT 1`)
  if (Base === undefined) return sql
  /** Outermost transactions asked for and not yet ended (committed or rolled back) through this client. */
  let transactions = 0

  /** Whether `fiber`'s statements may skip `@effect/sql`'s way: tracing off, no statement transformer. */
  const untraced = (fiber: Fiber.RuntimeFiber<unknown, unknown>) =>
    !fiber.getFiberRef(FiberRef.currentTracerEnabled) && Option.isNone(fiber.getFiberRef(Statement.currentTransformer))

  class DirectStatement extends Base {
    override commit(): Effect.Effect<ReadonlyArray<unknown>, SqlError> {
      return Effect.withFiberRuntime((fiber) => {
        const held = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
        if (Option.isSome(held)) return this.run(fiber, held.value[0])
        // Run synchronously here, where nothing can begin a transaction first; otherwise (another fiber's transaction
        // open or waiting, or the library's way, which may yield before it runs) it takes the turn.
        if (transactions === 0 && untraced(fiber)) return this.run(fiber, connection)
        return turn.withPermits(1)(Effect.withFiberRuntime((fiber) => this.run(fiber, connection)))
      })
    }

    /** Runs on `on` straight away; with tracing on or a transformer set, the library's way (which finds `on` too). */
    private run(fiber: Fiber.RuntimeFiber<unknown, unknown>, on: Connection) {
      if (!untraced(fiber)) return super.commit()
      const [text, params] = this.compile()
      return on.execute(text, params, this.transformRows)
    }
  }
  const direct = <A>(statement: A): A =>
    statement instanceof Base
      ? (new DirectStatement(
          statement.segments,
          statement.acquirer,
          statement.compiler,
          statement.spanAttributes,
          statement.transformRows
        ) as A)
      : statement

  /** `effect` in a transaction on `connection`, as `@effect/sql`'s `withTransaction` runs it, without its span. */
  const untracedTransaction = <R, E, A>(effect: Effect.Effect<A, E, R>) =>
    Effect.uninterruptibleMask((restore) =>
      connection.executeUnprepared("BEGIN", [], undefined).pipe(
        Effect.zipRight(
          Effect.exit(Effect.provideService(restore(effect), SqlClient.TransactionConnection, [connection, 0]))
        ),
        Effect.flatMap((exit) =>
          Effect.zipRight(
            Effect.orDie(connection.executeUnprepared(Exit.isSuccess(exit) ? "COMMIT" : "ROLLBACK", [], undefined)),
            exit
          )
        )
      )
    )

  const client: SqlClient.SqlClient = Object.assign(
    // A template gives a statement, a string an identifier (left as it is).
    ((strings: TemplateStringsArray & string, ...args: Array<unknown>) => direct(sql(strings, ...args))) as typeof sql,
    sql,
    {
      unsafe: ((text: string, params?: ReadonlyArray<unknown>) =>
        direct(sql.unsafe(text, params))) as typeof sql.unsafe,
      withTransaction: <R, E, A>(effect: Effect.Effect<A, E, R>) =>
        Effect.withFiberRuntime<A, E | SqlError, R>((fiber) => {
          // A savepoint in the transaction this fiber is in.
          if (Option.isSome(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))) {
            return sql.withTransaction(effect)
          }
          const transaction = untraced(fiber) ? untracedTransaction(effect) : sql.withTransaction(effect)
          return Effect.acquireUseRelease(
            Effect.sync(() => {
              transactions++
            }),
            () => turn.withPermits(1)(transaction),
            () =>
              Effect.sync(() => {
                transactions--
              })
          )
        })
    }
  )
  ;(client as { safe: unknown }).safe = client
  return client
}

/** The client `SqlClient` gives, with `directStatements` (scoped: the connection is found once, then lent back). */
export const makeDirectStatements = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const connection = yield* Effect.orDie(Effect.scoped(sql.reserve))
  return directStatements(sql, connection, yield* Effect.makeSemaphore(1))
})
