/** The statements an effect, or a request, sends, as they go to the database (for tests that count or explain them). */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"
import { Effect, FiberRefs, Layer, ManagedRuntime } from "effect"
import { CurrentRequestIdentity } from "../../src/Domain/RequestId.ts"
import type { EndedSpan } from "../../src/Observability/OtlpSpan.ts"
import { makeTracer } from "../../src/Observability/Tracer.ts"
import { SqlClientLive } from "../../src/Sql/Client.ts"
import { withSettings } from "./fixtures.ts"

/** Runs `effect` and answers each statement it sent, compiled: its text and its parameters. */
export const captured = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const statements: Array<readonly [string, ReadonlyArray<unknown>]> = []
    yield* Statement.withTransformer(effect, (statement) =>
      Effect.sync(() => {
        statements.push(statement.compile())
        return statement
      })
    )
    return statements
  })

/**
 * A `Statement` transformer for an in-process server (`startInProcess({ around })`) that notes the text of each
 * statement sent while serving a request, by the request's id (`req_…`): `sent.get(id)`.
 */
export const countedByRequest = () => {
  const sent = new Map<string, Array<string>>()
  const around = Statement.setTransformer((statement, _sql, fiberRefs) =>
    Effect.sync(() => {
      const request = FiberRefs.getOrDefault(fiberRefs, CurrentRequestIdentity)
      if (request !== undefined) sent.set(request.id, [...(sent.get(request.id) ?? []), statement.compile()[0]])
      return statement
    })
  )
  return { sent, around }
}

/**
 * For the clients' twin tests (test/unit/sqlite-statements, pg-statements): a statement outside a transaction and
 * one inside, with tracing on, then the same with it off; answers the query text of each `sql.execute` span made, and
 * whether the transaction's span was.
 */
export const tracedStatements = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const spans: Array<EndedSpan> = []
    const traced = (on: boolean) =>
      Effect.zipRight(sql`SELECT ${on ? 1 : 2} AS n`, sql.withTransaction(sql`SELECT ${on ? 3 : 4} AS n`)).pipe(
        Effect.withTracerEnabled(on),
        Effect.withTracer(makeTracer((span) => spans.push(span)))
      )
    yield* traced(true)
    yield* traced(false)
    return {
      texts: spans
        .filter((span) => span.name === "sql.execute")
        .map((span) => String(span.attributes.get("db.query.text"))),
      transaction: spans.some((span) => span.name === "sql.transaction")
    }
  })

/** For the same tests: `things`' row 1 read through a statement transformer that reads its name in capitals. */
export const transformedRead = (sql: SqlClient.SqlClient) =>
  sql`SELECT name FROM things WHERE id = ${1}`.pipe(
    Statement.withTransformer((statement, sql) =>
      Effect.succeed(sql`SELECT upper(name) AS name FROM things WHERE id = ${statement.compile()[1][0] ?? 0}`)
    )
  )

/** For the same tests: their table of `things`. */
export const createThings = (sql: SqlClient.SqlClient) =>
  sql`CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, note TEXT)`

/** For the same tests: the service's client on `url` with `fastPaths`, its `things` table made. */
export const thingsClient = async (url: string, fastPaths: string) => {
  const runtime = ManagedRuntime.make(
    SqlClientLive.pipe(Layer.provide(withSettings({ DATABASE_URL: url, FAST_PATHS: fastPaths })))
  )
  /** Runs `f` with the client, tracing off. */
  const run = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
    runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, f).pipe(Effect.withTracerEnabled(false)))
  await run(createThings)
  return { run, dispose: () => runtime.dispose() }
}
export type ThingsClient = Awaited<ReturnType<typeof thingsClient>>

/** For the same tests: `things`' first three rows. */
export const insertThreeThings = (sql: SqlClient.SqlClient) =>
  sql`INSERT INTO things ${sql.insert([
    { id: 1, name: "one", note: null },
    { id: 2, name: "two", note: "even" },
    { id: 3, name: "three", note: null }
  ])}`

/** The class of the client's statements: `DirectStatement` for a fast path's client, `StatementPrimitive` else. */
export const statementClassOf = (sql: SqlClient.SqlClient) =>
  Effect.sync((): unknown => Object.getPrototypeOf(sql`SELECT 1`).constructor.name)
