/**
 * The SQLite client (src/Sql/Client.ts): the `sqlite-statements` fast path (src/Sql/SqliteClient.ts, statements run
 * straight on the connection where nothing else could hold it) and its twin, the client as `@effect/sql-sqlite-bun`
 * makes it. Both run the same statements and must answer alike: rows, helpers, errors, transactions; a statement
 * outside a transaction waits while another fiber's transaction is open, and so never sees its uncommitted writes; a
 * transaction answers only once its writes are committed; with tracing on, each statement has its `sql.execute` span;
 * a statement transformer applies. Every other SQLite test runs on the fast one (the default). Group commit, which
 * only `Events.transaction` uses, is test/unit/group-commit.test.ts's.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Deferred, Effect, Fiber, Option } from "effect"
import { makeTracer } from "../../src/Observability/Tracer.ts"
import { twinsOf } from "../support/helpers.ts"
import {
  insertThreeThings,
  statementClassOf,
  type ThingsClient,
  thingsClient,
  tracedStatements,
  transformedRead
} from "../support/statements.ts"
import { tempDir } from "../support/temp.ts"
import { committedIn, expectedOfMany, manyAtOnce } from "../support/things.ts"

const dir = tempDir("pcs-sqlite-statements-")

for (const [name, fastPaths] of twinsOf("sqlite-statements")) {
  describe(`SQLite statements: ${name}`, () => {
    let client: ThingsClient
    const file = join(dir, `${name}.sqlite`)
    const run = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) => client.run(f)

    beforeAll(async () => {
      client = await thingsClient(`sqlite:${file}`, fastPaths)
    }, 60_000)
    afterAll(() => client.dispose(), 20_000)

    test(`the client is the ${name} one`, async () => {
      expect(await run(statementClassOf)).toBe(name === "fast" ? "DirectStatement" : "StatementPrimitive")
    })

    test("answers rows from templates with fragments and helpers, unsafe text, identifiers, values", async () => {
      await run(insertThreeThings)
      const columns = await run((sql) => Effect.succeed(sql`t.id, t.name, t.note`))
      const rows = await run(
        (sql) =>
          sql`SELECT ${columns} FROM ${sql("things")} t WHERE ${sql.and([sql`t.id IN ${sql.in([1, 2, 9])}`, sql`t.id > ${0}`])} ORDER BY t.id`
      )
      expect(rows).toEqual([
        { id: 1, name: "one", note: null },
        { id: 2, name: "two", note: "even" }
      ])
      expect(await run((sql) => sql.unsafe("SELECT name FROM things WHERE id = ?", [3]))).toEqual([{ name: "three" }])
      expect(await run((sql) => sql`SELECT id, name FROM things WHERE id = ${2}`.values)).toEqual([[2, "two"]])
      expect(await run((sql) => sql`UPDATE things SET note = ${"odd"} WHERE id = ${3} RETURNING id, note`)).toEqual([
        { id: 3, note: "odd" }
      ])
    })

    test("a failing statement is a SqlError, and the client goes on", async () => {
      const error = await run((sql) => Effect.flip(sql`INSERT INTO things (id, name) VALUES (${10}, ${"one"})`))
      expect(error).toBeInstanceOf(SqlError)
      expect(String((error.cause as Error).message)).toContain("UNIQUE")
      expect(await run((sql) => sql`SELECT count(*) AS n FROM things`)).toEqual([{ n: 3 }])
    })

    test("a transaction sees its own writes, and a failure rolls them all back", async () => {
      const inside = await run((sql) =>
        sql.withTransaction(
          Effect.zipRight(
            sql`INSERT INTO things (id, name) VALUES (${20}, ${"twenty"})`,
            sql`SELECT name FROM things WHERE id = ${20}`
          )
        )
      )
      expect(inside).toEqual([{ name: "twenty" }])
      const failed = await run((sql) =>
        Effect.flip(
          sql.withTransaction(
            Effect.zipRight(
              sql`INSERT INTO things (id, name) VALUES (${21}, ${"twenty-one"})`,
              sql`INSERT INTO things (id, name) VALUES (${22}, ${"twenty"})`
            )
          )
        )
      )
      expect(failed).toBeInstanceOf(SqlError)
      expect(await run((sql) => sql`SELECT id FROM things WHERE id IN (20, 21, 22) ORDER BY id`)).toEqual([{ id: 20 }])
    })

    /** A transaction on another fiber that writes `id` and stays open until `go`; `written` once it has written. */
    const holdOpen = (sql: SqlClient.SqlClient, id: number, outcome: "commits" | "rolls back" = "commits") =>
      Effect.gen(function* () {
        const written = yield* Deferred.make<void>()
        const go = yield* Deferred.make<void>()
        const writer = yield* sql
          .withTransaction(
            Effect.gen(function* () {
              yield* sql`INSERT INTO things (id, name) VALUES (${id}, ${`held ${id}`})`
              yield* Deferred.succeed(written, undefined)
              yield* Deferred.await(go)
              if (outcome === "rolls back") return yield* Effect.fail("rolled back")
            })
          )
          .pipe(Effect.either, Effect.fork)
        yield* Deferred.await(written)
        return { go, writer }
      })

    /**
     * `waiter`, started while another fiber's transaction holds `id` written and open: whether it had ended before that
     * transaction did (it must not have: run on the connection at once, it would read the uncommitted row), and its
     * rows once it has.
     */
    const whileHeldOpen = (
      sql: SqlClient.SqlClient,
      id: number,
      outcome: "commits" | "rolls back",
      waiter: Effect.Effect<ReadonlyArray<unknown>, unknown>
    ) =>
      Effect.gen(function* () {
        const { go, writer } = yield* holdOpen(sql, id, outcome)
        const waiting = yield* Effect.fork(waiter)
        yield* Effect.sleep("30 millis")
        const early = yield* Fiber.poll(waiting)
        yield* Deferred.succeed(go, undefined)
        yield* Fiber.join(writer)
        return { early: Option.isSome(early), rows: yield* Fiber.join(waiting) }
      })

    for (const outcome of ["commits", "rolls back"] as const) {
      test(`a read outside a transaction waits for another fiber's open transaction, which ${outcome}`, async () => {
        const id = outcome === "commits" ? 30 : 31
        const result = await run((sql) =>
          whileHeldOpen(sql, id, outcome, sql`SELECT name FROM things WHERE id = ${id}`)
        )
        expect(result.early).toBe(false)
        expect(result.rows).toEqual(outcome === "commits" ? [{ name: "held 30" }] : [])
      })
    }

    test("a transaction waits for another fiber's open one, then sees what it committed", async () => {
      const result = await run((sql) =>
        whileHeldOpen(sql, 40, "commits", sql.withTransaction(sql`SELECT name FROM things WHERE id = ${40}`))
      )
      expect(result.early).toBe(false)
      expect(result.rows).toEqual([{ name: "held 40" }])
    })

    test("with tracing on, a read outside a transaction waits for another fiber's open one too", async () => {
      const result = await run((sql) =>
        whileHeldOpen(
          sql,
          41,
          "commits",
          sql`SELECT name FROM things WHERE id = ${41}`.pipe(
            Effect.withTracerEnabled(true),
            Effect.withTracer(makeTracer(() => {}))
          )
        )
      )
      expect(result.early).toBe(false)
      expect(result.rows).toEqual([{ name: "held 41" }])
    })

    test("a savepoint that fails rolls back its own writes only", async () => {
      await run((sql) =>
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO things (id, name) VALUES (${42}, ${"outer"})`
            yield* Effect.either(
              sql.withTransaction(
                Effect.zipRight(sql`INSERT INTO things (id, name) VALUES (${43}, ${"inner"})`, Effect.fail("no"))
              )
            )
          })
        )
      )
      expect(await run((sql) => sql`SELECT id FROM things WHERE id IN (42, 43) ORDER BY id`)).toEqual([{ id: 42 }])
    })

    test("a transaction interrupted while open, or while it waits, is rolled back and holds nothing", async () => {
      const rows = await run((sql) =>
        Effect.gen(function* () {
          const open = yield* holdOpen(sql, 44)
          const waiting = yield* Effect.fork(sql.withTransaction(sql`INSERT INTO things (id, name) VALUES (45, 'w')`))
          yield* Effect.sleep("10 millis")
          // The library's transaction takes its connection uninterruptibly: its interruption ends once it has one.
          const stopping = yield* Effect.fork(Fiber.interrupt(waiting))
          yield* Fiber.interrupt(open.writer)
          yield* Fiber.join(stopping)
          // Both gone: a transaction and a read run at once, and neither row was written.
          yield* sql.withTransaction(sql`INSERT INTO things (id, name) VALUES (${46}, ${"after"})`)
          return yield* sql`SELECT id FROM things WHERE id IN (44, 45, 46) ORDER BY id`
        }).pipe(Effect.timeout("2 seconds"))
      )
      expect(rows).toEqual([{ id: 46 }])
    })

    /** Whether a connection of its own (as another process's would be) sees the row `id` committed. */
    const committed = committedIn(file)

    test("transactions run at once each answer once their writes are committed, and a failed one's are not", async () => {
      const outcomes = await run((sql) => manyAtOnce(sql, sql.withTransaction, committed))
      // Each one that answered had its row committed by then; a failed one's was never written.
      expect(expectedOfMany(outcomes)).toEqual({ wrongOutcome: [], seenOtherwise: [] })
      const rows = await run((sql) => sql`SELECT count(*) AS n FROM things WHERE id BETWEEN 100 AND 249`)
      expect(rows).toEqual([{ n: 135 }])
    })

    test("transactions that run after one that failed, as it began, still commit", async () => {
      const [failed, after] = await run((sql) =>
        Effect.all(
          [
            sql.withTransaction(
              Effect.zipRight(sql`INSERT INTO things (id, name) VALUES (90, 'fails first')`, Effect.fail("no"))
            ),
            sql.withTransaction(sql`INSERT INTO things (id, name) VALUES (91, 'after the failed one')`)
          ].map((transaction) => Effect.exit(transaction)),
          { concurrency: "unbounded" }
        )
      )
      expect([failed?._tag, after?._tag]).toEqual(["Failure", "Success"])
      expect([committed(90), committed(91)]).toEqual([false, true])
    })

    test("a read that sees what another fiber's transaction wrote sees it committed", async () => {
      const result = await run((sql) =>
        Effect.gen(function* () {
          const written = yield* Deferred.make<void>()
          const writer = yield* Effect.fork(
            sql.withTransaction(
              Effect.zipRight(
                sql`INSERT INTO things (id, name) VALUES (${60}, ${"sixty"})`,
                Deferred.succeed(written, undefined)
              )
            )
          )
          yield* Deferred.await(written)
          const rows = yield* sql`SELECT name FROM things WHERE id = ${60}`
          const seen = committed(60)
          yield* Fiber.join(writer)
          return { rows, seen }
        })
      )
      expect(result).toEqual({ rows: [{ name: "sixty" }], seen: true })
    })

    test("a transaction interrupted while it runs after another's is rolled back alone", async () => {
      const rows = await run((sql) =>
        Effect.gen(function* () {
          const first = yield* Effect.fork(sql.withTransaction(sql`INSERT INTO things (id, name) VALUES (70, 'first')`))
          yield* Effect.yieldNow()
          const open = yield* holdOpen(sql, 71)
          yield* Fiber.interrupt(open.writer)
          yield* Fiber.join(first)
          return yield* sql`SELECT id FROM things WHERE id IN (70, 71) ORDER BY id`
        }).pipe(Effect.timeout("2 seconds"))
      )
      expect(rows).toEqual([{ id: 70 }])
    })

    test("with tracing on, each statement has its sql.execute span; with it off, none", async () => {
      expect(await run(tracedStatements)).toEqual({
        texts: ["SELECT ? AS n", "SELECT ? AS n"],
        transaction: true
      })
    })

    test("a statement transformer (`Statement.withTransformer`) is applied", async () => {
      expect(await run(transformedRead)).toEqual([{ name: "ONE" }])
    })
  })
}
