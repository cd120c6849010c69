/**
 * The PostgreSQL client (src/Sql/Client.ts): the `pg-statements` fast path (src/Sql/Straight.ts, statements run
 * straight: outside a transaction on a connection checked out for it alone, src/Sql/PgPool.ts `queryOnPool`) and its
 * twin, the client as `PgClient.layerFromPool` makes it. Both run the same statements and must answer alike: rows,
 * helpers, a text of several statements, errors (a unique-key clash still found by its SQLSTATE, its connection kept),
 * transactions and their isolation; an interrupted statement runs to its end and cancels nothing; with tracing on each
 * statement has its `sql.execute` span; a statement transformer applies. Every other PostgreSQL test runs on the fast
 * one (the default). Last, `queryOnPool` alone: a statement interrupted while it waits for a connection sends nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Context, Deferred, Duration, Effect, Fiber, Redacted, Schedule } from "effect"
import { isUnavailable, isUniqueViolation } from "../../src/Sql/Errors.ts"
import { makePool, queryOnPool, StatementCountingClient } from "../../src/Sql/PgPool.ts"
import { twinsOf } from "../support/helpers.ts"
import { freshDatabaseUrl, usingPostgres } from "../support/server.ts"
import {
  insertThreeThings,
  statementClassOf,
  type ThingsClient,
  thingsClient,
  tracedStatements,
  transformedRead
} from "../support/statements.ts"

for (const [name, fastPaths] of twinsOf("pg-statements")) {
  describe.skipIf(!usingPostgres())(`PostgreSQL statements: ${name}`, () => {
    let client: ThingsClient
    const run = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) => client.run(f)
    /** Until the condition holds: every 10 ms, 10 s at most. */
    const untilItHolds = Schedule.intersect(Schedule.spaced("10 millis"), Schedule.recurs(1000))
    const names = (sql: SqlClient.SqlClient) =>
      Effect.map(sql<{ name: string }>`SELECT name FROM things ORDER BY id`, (rows) => rows.map((row) => row.name))

    beforeAll(async () => {
      client = await thingsClient(await freshDatabaseUrl(), fastPaths)
    }, 60_000)
    afterAll(() => client.dispose(), 20_000)

    test(`the client is the ${name} one`, async () => {
      expect(await run(statementClassOf)).toBe(name === "fast" ? "DirectStatement" : "StatementPrimitive")
    })

    test("answers rows from templates with fragments and helpers, unsafe text, identifiers, several statements", async () => {
      await run(insertThreeThings)
      const columns = await run((sql) => Effect.succeed(sql`t.id, t.name, t.note`))
      expect(
        await run((sql) => sql`SELECT ${columns} FROM things t WHERE t.id IN ${sql.in([1, 2])} ORDER BY t.id`)
      ).toEqual([
        { id: 1, name: "one", note: null },
        { id: 2, name: "two", note: "even" }
      ])
      expect(await run((sql) => sql.unsafe("SELECT name FROM things WHERE id = $1", [3]))).toEqual([{ name: "three" }])
      expect(await run((sql) => sql`SELECT ${sql("name")} FROM ${sql("things")} WHERE note IS NOT NULL`)).toEqual([
        { name: "two" }
      ])
      expect(await run((sql) => sql`UPDATE things SET note = ${"odd"} WHERE id = ${1} RETURNING id, note`)).toEqual([
        { id: 1, note: "odd" }
      ])
      // A text of several statements, without parameters: one list of rows a statement, as the library answers it.
      expect(await run((sql) => sql.unsafe("SELECT 1 AS a; SELECT 2 AS b"))).toEqual([[{ a: 1 }], [{ b: 2 }]])
    })

    test("a failing statement is a SqlError whose cause says why (a unique-key clash, a syntax error), not a lost database", async () => {
      const clash = await run((sql) => Effect.flip(sql`INSERT INTO things (id, name) VALUES (${10}, ${"one"})`))
      expect(clash).toBeInstanceOf(SqlError)
      expect(isUniqueViolation(clash)).toBe(true)
      expect(isUnavailable(clash)).toBe(false)
      const wrong = await run((sql) => Effect.flip(sql.unsafe("SELEC 1")))
      expect(wrong).toBeInstanceOf(SqlError)
      expect(isUnavailable(wrong)).toBe(false)
      expect(await run((sql) => sql`SELECT count(*)::int AS n FROM things`)).toEqual([{ n: 3 }])
    })

    test("a statement that fails keeps its connection: the next one runs on the same backend", async () => {
      // Sequential statements on an idle pool take the connection given back last (`pg-pool` keeps a stack).
      const backends = await run((sql) =>
        Effect.gen(function* () {
          const [before] = yield* sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`
          const clash = yield* Effect.flip(sql`INSERT INTO things (id, name) VALUES (${11}, ${"one"})`)
          const [after] = yield* sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`
          return { clash: isUniqueViolation(clash), same: before?.pid === after?.pid }
        })
      )
      expect(backends).toEqual({ clash: true, same: true })
    })

    test("a transaction sees its own writes, others see them once committed, and a failure rolls them all back", async () => {
      const seen = await run((sql) =>
        Effect.gen(function* () {
          const written = yield* Deferred.make<void>()
          const release = yield* Deferred.make<void>()
          const transaction = yield* Effect.fork(
            sql.withTransaction(
              Effect.gen(function* () {
                yield* sql`INSERT INTO things (id, name) VALUES (${4}, ${"four"})`
                const own = yield* names(sql)
                yield* Deferred.succeed(written, undefined)
                yield* Deferred.await(release)
                return own
              })
            )
          )
          yield* Deferred.await(written)
          const outsideBefore = yield* names(sql)
          yield* Deferred.succeed(release, undefined)
          const own = yield* Fiber.join(transaction)
          const outsideAfter = yield* names(sql)
          return { own, outsideBefore, outsideAfter }
        })
      )
      expect(seen).toEqual({
        own: ["one", "two", "three", "four"],
        outsideBefore: ["one", "two", "three"],
        outsideAfter: ["one", "two", "three", "four"]
      })
      const failed = await run((sql) =>
        Effect.flip(
          sql.withTransaction(
            Effect.zipRight(
              sql`INSERT INTO things (id, name) VALUES (${5}, ${"five"})`,
              sql`INSERT INTO things (id, name) VALUES (${6}, ${"one"})`
            )
          )
        )
      )
      expect(isUniqueViolation(failed)).toBe(true)
      expect(await run(names)).toEqual(["one", "two", "three", "four"])
    })

    test("a statement interrupted while it runs outside a transaction runs to its end and cancels nothing", async () => {
      const outcome = await run((sql) =>
        Effect.gen(function* () {
          const slow = yield* Effect.fork(sql`INSERT INTO things (id, name) SELECT ${7}, ${"seven"} FROM pg_sleep(0.3)`)
          // Running on the server (its connection checked out), then interrupted.
          yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND state = 'active' AND query LIKE ${"%pg_sleep(0.3)%"}
              AND pid <> pg_backend_pid()`.pipe(
            Effect.filterOrFail(([row]) => (row?.n ?? 0) > 0),
            Effect.retry(untilItHolds),
            Effect.orDie
          )
          yield* Fiber.interrupt(slow)
          // Others run meanwhile, on the pool's other connections, and are not cancelled.
          const meanwhile = yield* Effect.all(
            Array.from({ length: 5 }, (_, i) => sql<{ n: number }>`SELECT ${i}::int AS n FROM pg_sleep(0.05)`),
            { concurrency: "unbounded" }
          )
          // The interrupted insert ran to its end: its row is there once it has.
          const inserted = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM things WHERE id = ${7}`.pipe(
            Effect.filterOrFail(([row]) => row?.n === 1),
            Effect.retry(untilItHolds),
            Effect.orDie
          )
          return { meanwhile: meanwhile.map(([row]) => row?.n), inserted: inserted[0]?.n }
        })
      )
      expect(outcome).toEqual({ meanwhile: [0, 1, 2, 3, 4], inserted: 1 })
    }, 30_000)

    test("with tracing on, each statement has its sql.execute span; with it off, none", async () => {
      expect(await run(tracedStatements)).toEqual({
        texts: ["SELECT $1 AS n", "SELECT $1 AS n"],
        transaction: true
      })
    })

    test("a statement transformer (`Statement.withTransformer`) is applied", async () => {
      expect(await run(transformedRead)).toEqual([{ name: "ONE" }])
    })
  })
}

/**
 * `queryOnPool` itself (the fast path's way outside a transaction), on a pool of one connection that the test holds,
 * so that a statement waits for it: a fiber interrupted while it waits sends nothing, and the connection, once given
 * back, goes to the waiter and straight back to the pool. (The twin is the library's check-out, `@effect/sql-pg`'s.)
 */
describe.skipIf(!usingPostgres())("PostgreSQL statements: queryOnPool", () => {
  let url: string
  let client: ThingsClient
  beforeAll(async () => {
    url = await freshDatabaseUrl()
    client = await thingsClient(url, "none")
  }, 60_000)
  afterAll(() => client.dispose(), 20_000)

  test("a statement interrupted while it waits for a connection runs nothing, and the connection goes back", async () => {
    const outcome = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const pool = yield* makePool({
            url: Redacted.make(url),
            maxConnections: 1,
            applicationName: "pg-statements-test",
            connectTimeout: Duration.seconds(5),
            Client: StatementCountingClient
          })
          const query = queryOnPool(pool)
          const held = yield* Effect.promise(() => pool.connect())
          const waiting = yield* Effect.fork(
            query("INSERT INTO things (id, name) VALUES ($1, $2)", [20, "twenty"], Context.empty())
          )
          // Waiting for the one connection, which the test holds.
          yield* Effect.sync(() => pool.waitingCount).pipe(
            Effect.repeat({ until: (n) => n === 1, schedule: Schedule.spaced("5 millis") })
          )
          yield* Fiber.interrupt(waiting)
          held.release()
          // The connection went to the interrupted waiter, which gave it straight back.
          yield* Effect.sync(() => [pool.waitingCount, pool.idleCount, pool.totalCount] as const).pipe(
            Effect.repeat({
              until: ([waitingCount, idle, total]) => waitingCount === 0 && idle === 1 && total === 1,
              schedule: Schedule.spaced("5 millis")
            })
          )
          const rows = yield* query<{ n: number }>(
            "SELECT count(*)::int AS n FROM things WHERE id = $1",
            [20],
            Context.empty()
          )
          return { inserted: rows[0]?.n, total: pool.totalCount, idle: pool.idleCount }
        })
      )
    )
    expect(outcome).toEqual({ inserted: 0, total: 1, idle: 1 })
  }, 30_000)
})
