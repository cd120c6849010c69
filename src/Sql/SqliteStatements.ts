/**
 * The `sqlite-statements` fast path (docs/fast-paths.md): the SQLite client's statements, run straight on its
 * connection when nothing else could hold it. Feature code is unchanged: it still writes `sql\`…\`` and
 * `sql.unsafe`, and gets the same rows and the same `SqlError`s.
 *
 * Through `@effect/sql`, every statement opens a span (a no-op one with tracing off), a `Scope`, and a lease of the
 * connection from the client's one-permit semaphore, which makes a statement outside a transaction wait while
 * another fiber's transaction is open on the (single) connection. Here a statement skips all three when, and only
 * when, they change nothing:
 *
 * - tracing is off for the fiber (with it on, the statement takes the ordinary way and gets its `sql.execute` span);
 * - no statement transformer is set (`Statement.withTransformer`, `setTransformer`);
 * - and either the fiber is inside a transaction (it holds the connection already), or
 *   no transaction is open or waiting on the connection: every transaction goes through this client's
 *   `withTransaction`, which counts them from before it asks for the connection until after its `COMMIT` or
 *   `ROLLBACK`. bun:sqlite runs a statement synchronously, so nothing can begin a transaction while one runs.
 *
 * Otherwise (a transaction open on another fiber, say) the statement takes the ordinary way and waits its turn, as
 * with the twin: a read never sees another fiber's uncommitted writes.
 *
 * The statement class is `@effect/sql`'s own, extended (its `commit` overridden); if a release changes its shape,
 * the client is used as it is (`directStatements` answers it unchanged), and a test says so.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, FiberRef, Option } from "effect"

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
 * `sql` with its statements run straight on `connection` where that changes nothing (above). `sql` must be a SQLite
 * client whose only connection is `connection`; answers `sql` itself if its statements are not as expected.
 */
export const directStatements = (sql: SqlClient.SqlClient, connection: Connection): SqlClient.SqlClient => {
  const Base = primitiveClass(sql`SELECT 1`)
  if (Base === undefined) return sql
  /** Transactions asked for and not yet ended (committed or rolled back) through this client. */
  let transactions = 0

  class DirectStatement extends Base {
    override commit(): Effect.Effect<ReadonlyArray<unknown>, SqlError> {
      return Effect.withFiberRuntime((fiber) => {
        if (fiber.getFiberRef(FiberRef.currentTracerEnabled)) return super.commit()
        if (Option.isSome(fiber.getFiberRef(Statement.currentTransformer))) return super.commit()
        const held = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
        if (Option.isNone(held) && transactions > 0) return super.commit()
        const [text, params] = this.compile()
        return (Option.isSome(held) ? held.value[0] : connection).execute(text, params, this.transformRows)
      })
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

  const client: SqlClient.SqlClient = Object.assign(
    // A template gives a statement, a string an identifier (left as it is).
    ((strings: TemplateStringsArray & string, ...args: Array<unknown>) => direct(sql(strings, ...args))) as typeof sql,
    sql,
    {
      unsafe: ((text: string, params?: ReadonlyArray<unknown>) =>
        direct(sql.unsafe(text, params))) as typeof sql.unsafe,
      withTransaction: <R, E, A>(effect: Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(
          Effect.sync(() => {
            transactions++
          }),
          () => sql.withTransaction(effect),
          () =>
            Effect.sync(() => {
              transactions--
            })
        )
    }
  )
  ;(client as { safe: unknown }).safe = client
  return client
}

/** The client `SqlClient` gives, with `directStatements` (scoped: the connection is found once, then lent back). */
export const makeDirectStatements = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const connection = yield* Effect.orDie(Effect.scoped(sql.reserve))
  return directStatements(sql, connection)
})
