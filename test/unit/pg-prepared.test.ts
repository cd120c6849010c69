/**
 * The PostgreSQL pools behind `@effect/sql-pg` (src/Sql/Client.ts, src/Sql/PgPool.ts): with the
 * `prepared-statements` fast path's connections (src/Sql/PgPrepared.ts, each parameterised statement prepared once
 * per connection) and with its twin's, which send every statement unnamed. Both run the same statements here and
 * must answer alike, and an interrupted statement must never cancel another's; then what only the fast one does:
 * its statements are prepared once and run many times, at most `capacity` a connection, and one whose result columns
 * changed is prepared again. Every other PostgreSQL test runs on the fast one (the default).
 * One connection per pool, so `pg_prepared_statements` (a session's own) shows that connection's statements.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Cause, ConfigProvider, Duration, Effect, Fiber, Layer, ManagedRuntime, Redacted } from "effect"
import { SqlClientLive } from "../../src/Sql/Client.ts"
import { makePool, StatementCountingClient } from "../../src/Sql/PgPool.ts"
import { preparingClient } from "../../src/Sql/PgPrepared.ts"
import { freshDatabaseUrl, usingPostgres } from "../support/server.ts"

const CAPACITY = 3

const poolOf = (Client: typeof StatementCountingClient) => (url: string, maxConnections: number) =>
  PgClient.layerFromPool({
    acquire: makePool({
      url: Redacted.make(url),
      maxConnections,
      applicationName: "pg-prepared-test",
      connectTimeout: Duration.seconds(2),
      Client
    })
  })

const pools = { fast: poolOf(preparingClient(CAPACITY)), idiomatic: poolOf(StatementCountingClient) } as const

type Runtime = ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>

const withSql = <A, E>(runtime: Runtime, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, f))

/** The SQLSTATE PostgreSQL gave a statement that must fail (the SqlError's cause). */
const codeOf = async <A>(runtime: Runtime, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, SqlError>) => {
  const error = await withSql(runtime, (sql) => Effect.flip(f(sql)))
  const cause: unknown = error.cause
  return cause !== null && typeof cause === "object" && "code" in cause ? cause.code : `no SQLSTATE: ${error.message}`
}

for (const [name, pool] of Object.entries(pools)) {
  describe.skipIf(!usingPostgres())(`PostgreSQL pool: ${name}`, () => {
    let runtime: Runtime
    let url: string
    const sqlRun = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) => withSql(runtime, f)
    /** Resolves once a statement containing `text` runs on the server for this file's database (5 s at most). */
    const runningOnServer = async (text: string) => {
      for (let tries = 0; tries < 500; tries++) {
        const [row] = await sqlRun(
          (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND state = 'active' AND query LIKE ${`%${text}%`}`
        )
        if ((row?.n ?? 0) > 0) return
        await Bun.sleep(10)
      }
      throw new Error(`no statement with ${text} ran`)
    }
    /** `f` with a runtime on a pool of `connections` of its own, disposed after. */
    const onOwnPool = async <T>(connections: number, f: (own: Runtime) => Promise<T>): Promise<T> => {
      const own = ManagedRuntime.make(Layer.orDie(pool(url, connections)))
      try {
        return await f(own)
      } finally {
        await own.dispose()
      }
    }

    beforeAll(async () => {
      url = await freshDatabaseUrl()
      runtime = ManagedRuntime.make(Layer.orDie(pool(url, 1)))
      await sqlRun((sql) =>
        sql`CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, note TEXT, data JSONB)`.pipe(
          Effect.zipRight(sql`CREATE TABLE wide (id INTEGER PRIMARY KEY)`),
          Effect.zipRight(sql`INSERT INTO wide (id) VALUES (1)`)
        )
      )
    }, 60_000)
    afterAll(() => runtime.dispose(), 20_000)

    test("answers every statement's rows, run over and over past the connection's capacity, as written", async () => {
      await sqlRun(
        (sql) =>
          sql`INSERT INTO things ${sql.insert(
            Array.from({ length: 10 }, (_, i) => ({
              id: i + 1,
              name: `thing ${i + 1}`,
              note: i % 2 === 0 ? null : `odd ${i}`,
              data: JSON.stringify({ n: i })
            }))
          )}`
      )
      // Five distinct statements (more than CAPACITY), interleaved, each run with different parameters.
      const shapes = [
        (sql: SqlClient.SqlClient, i: number) => sql`SELECT id, name FROM things WHERE id = ${i}`,
        (sql: SqlClient.SqlClient, i: number) => sql`SELECT count(*)::int AS n FROM things WHERE id <= ${i}`,
        (sql: SqlClient.SqlClient, i: number) => sql`SELECT note FROM things WHERE id = ${i}`,
        (sql: SqlClient.SqlClient, i: number) => sql`SELECT data->>'n' AS n FROM things WHERE name = ${`thing ${i}`}`,
        (sql: SqlClient.SqlClient, i: number) =>
          sql`SELECT id FROM things WHERE id IN ${sql.in([i, i + 1])} ORDER BY id`
      ]
      const answers: Array<unknown> = []
      for (let round = 0; round < 4; round++) {
        for (let i = 1; i <= 8; i++) {
          for (const shape of shapes) answers.push(await sqlRun((sql) => shape(sql, i)))
        }
      }
      const expected: Array<unknown> = []
      for (let round = 0; round < 4; round++) {
        for (let i = 1; i <= 8; i++) {
          expected.push(
            [{ id: i, name: `thing ${i}` }],
            [{ n: i }],
            [{ note: (i - 1) % 2 === 0 ? null : `odd ${i - 1}` }],
            [{ n: String(i - 1) }],
            [{ id: i }, { id: i + 1 }]
          )
        }
      }
      expect(answers).toEqual(expected)
    })

    test("a failure keeps its SQLSTATE, and the connection goes on", async () => {
      expect(await codeOf(runtime, (sql) => sql`INSERT INTO things (id, name) VALUES (${100}, ${"thing 1"})`)).toBe(
        "23505"
      )
      expect(await codeOf(runtime, (sql) => sql`INSERT INTO things (id, name) VALUES (${100}, ${"thing 1"})`)).toBe(
        "23505"
      )
      expect(await sqlRun((sql) => sql`SELECT name FROM things WHERE id = ${1}`)).toEqual([{ name: "thing 1" }])
    })

    test("a transaction that fails writes nothing; a savepoint that fails only undoes its own part", async () => {
      const insert = (sql: SqlClient.SqlClient, id: number) =>
        sql`INSERT INTO things (id, name) VALUES (${id}, ${`tx ${id}`})`
      const failed = await sqlRun((sql) =>
        Effect.flip(
          sql.withTransaction(
            Effect.zipRight(insert(sql, 200), insert(sql, 201).pipe(Effect.zipRight(insert(sql, 200))))
          )
        )
      )
      expect(failed._tag).toBe("SqlError")
      await sqlRun((sql) =>
        sql.withTransaction(
          Effect.zipRight(
            insert(sql, 300),
            Effect.ignore(sql.withTransaction(Effect.zipRight(insert(sql, 301), insert(sql, 300))))
          )
        )
      )
      expect(await sqlRun((sql) => sql`SELECT id FROM things WHERE id >= ${200} ORDER BY id`)).toEqual([{ id: 300 }])
    })

    test("an interrupted statement runs to its end before its fiber does, and its connection goes on", async () => {
      // Interrupted once PostgreSQL runs it (a 300 ms sleep), on a pool with a connection to spare for a cancel: a
      // cancel would have stopped it before it wrote. `Fiber.interrupt` returns once the interrupted fiber has ended, and the row is
      // then there for another connection (this file's other pool) to read.
      await onOwnPool(2, async (two) => {
        const seen = await withSql(two, (sql) =>
          Effect.gen(function* () {
            const slow = yield* Effect.fork(
              sql`INSERT INTO things (id, name) SELECT ${900}, ${"slow"} FROM pg_sleep(0.3)`
            )
            yield* Effect.promise(() => runningOnServer("pg_sleep(0.3)"))
            yield* Fiber.interrupt(slow)
            return yield* Effect.promise(() => sqlRun((sql) => sql`SELECT name FROM things WHERE id = ${900}`))
          })
        )
        expect(seen).toEqual([{ name: "slow" }])
        expect(await withSql(two, (sql) => sql`SELECT count(*)::int AS n FROM things WHERE id = ${900}`)).toEqual([
          { n: 1 }
        ])
      })
    }, 60_000)

    test("a transaction interrupted as its statement runs is rolled back, and no connection is left in it", async () => {
      await onOwnPool(2, async (two) => {
        await withSql(two, (sql) =>
          Effect.gen(function* () {
            const slow = yield* Effect.fork(
              sql.withTransaction(
                Effect.zipRight(
                  sql`INSERT INTO things (id, name) VALUES (${910}, ${"first"})`,
                  sql`INSERT INTO things (id, name) SELECT ${911}, ${"slow"} FROM pg_sleep(0.3)`
                )
              )
            )
            yield* Effect.sleep("100 millis")
            yield* Fiber.interrupt(slow)
          })
        )
        const left = (sql: SqlClient.SqlClient) =>
          sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND state LIKE ${"idle in transaction%"}`
        expect(await withSql(two, left)).toEqual([{ n: 0 }])
        expect(await sqlRun((sql) => sql`SELECT id FROM things WHERE id IN ${sql.in([910, 911])}`)).toEqual([])
        expect(await withSql(two, (sql) => sql`SELECT count(*)::int AS n FROM things WHERE id = ${1}`)).toEqual([
          { n: 1 }
        ])
      })
    }, 60_000)

    test("an interrupted statement never cancels another's, whenever the interruption comes", async () => {
      // Eight fibers on four connections: half of the statements are interrupted at once or 1–2 ms in, as they run
      // or as they end, while the others run theirs on the connections they free. A cancel that landed after its
      // statement had ended would fail one of the others with 57014.
      const failures = await onOwnPool(4, (shared) =>
        shared.runPromise(
          Effect.gen(function* () {
            const sql = yield* SqlClient.SqlClient
            const failures: Array<string> = []
            let interrupted = 0
            const worker = (w: number) =>
              Effect.forEach(
                Array.from({ length: 150 }, (_, i) => i),
                (i) =>
                  (i + w) % 2 === 0
                    ? Effect.fork(sql`SELECT count(*) AS n FROM generate_series(1, ${1000 + (i % 50) * 300})`).pipe(
                        Effect.tap(() => Effect.sleep(Duration.millis(i % 3))),
                        Effect.flatMap(Fiber.interrupt),
                        Effect.andThen(() => {
                          interrupted++
                        })
                      )
                    : sql`SELECT count(*) AS n FROM generate_series(1, ${5000 + i})`.pipe(
                        Effect.asVoid,
                        Effect.catchAll((error) =>
                          Effect.sync(() => {
                            failures.push(String(error.cause))
                          })
                        )
                      ),
                { discard: true }
              )
            yield* Effect.forEach(
              Array.from({ length: 8 }, (_, w) => w),
              worker,
              { concurrency: "unbounded", discard: true }
            )
            expect(interrupted).toBe(600)
            return failures
          })
        )
      )
      expect(failures).toEqual([])
    }, 60_000)

    const preparedOnConnection = () =>
      sqlRun(
        (sql) =>
          sql<{ statement: string; generic_plans: number; custom_plans: number }>`
          SELECT statement, generic_plans::int AS generic_plans, custom_plans::int AS custom_plans
          FROM pg_prepared_statements WHERE statement LIKE ${"%things%"}`.unprepared
      )

    if (name === "fast") {
      test("prepares each parameterised statement once and keeps at most its capacity", async () => {
        for (let i = 0; i < 12; i++)
          await sqlRun((sql) => sql`SELECT name AS counted FROM things WHERE id = ${1 + (i % 5)}`)
        const one = (await preparedOnConnection()).find((row) => row.statement.includes("counted"))
        expect(one).toBeDefined()
        // Prepared once, run twelve times: PostgreSQL counts each run's plan, custom or generic.
        expect((one?.custom_plans ?? 0) + (one?.generic_plans ?? 0)).toBe(12)
        // Six more statements, each its own text: the connection keeps the last CAPACITY of them.
        for (let i = 0; i < 6; i++)
          await sqlRun((sql) => sql`SELECT id AS ${sql(`column_${i}`)} FROM things WHERE id = ${1}`)
        const kept = (await preparedOnConnection()).map((row) => row.statement)
        expect(kept.filter((statement) => statement.includes("column_")).length).toBeGreaterThanOrEqual(CAPACITY - 1)
        expect(
          (await sqlRun((sql) => sql`SELECT count(*)::int AS n FROM pg_prepared_statements`.unprepared))[0]
        ).toEqual({
          n: CAPACITY
        })
      })

      test("a statement closed inside a failed transaction is closed once the transaction is over", async () => {
        // Without parameters, so this read is not itself prepared (and does not take a place).
        const onServer = async (column: string) =>
          (
            await sqlRun((sql) =>
              sql.unsafe<{ n: number }>(
                `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%${column}%'`
              )
            )
          )[0]
        const insert = (sql: SqlClient.SqlClient, id: number) =>
          sql`INSERT INTO things (id, name) VALUES (${id}, ${`refusal ${id}`})`
        // The connection's places: two selects, then the insert that will fail.
        for (let i = 0; i < CAPACITY - 1; i++) {
          await sqlRun((sql) => sql`SELECT id AS ${sql(`full_${i}`)} FROM things WHERE id = ${1}`)
        }
        await sqlRun((sql) => insert(sql, 500))
        expect(await onServer("full_0")).toEqual({ n: 1 })
        // The insert fails (a taken id), then a new text needs a place: the DEALLOCATE of the least recently run,
        // `full_0`, runs in the failed transaction, which refuses it.
        const refused = await sqlRun((sql) =>
          Effect.flip(
            sql.withTransaction(
              Effect.zipRight(Effect.ignore(insert(sql, 500)), sql`SELECT id AS refused FROM things WHERE id = ${1}`)
            )
          )
        )
        expect(refused._tag).toBe("SqlError")
        expect(await onServer("full_0")).toEqual({ n: 1 })
        // A statement the connection still has, outside a transaction: the refused DEALLOCATE goes ahead of it.
        await sqlRun((sql) => sql`SELECT id AS ${sql("full_1")} FROM things WHERE id = ${1}`)
        expect(await onServer("full_0")).toEqual({ n: 0 })
      })

      test("a statement whose result columns changed fails once, then is prepared afresh", async () => {
        const select = (sql: SqlClient.SqlClient) => sql`SELECT * FROM wide WHERE id = ${1}`
        const read = () => sqlRun(select)
        expect(await read()).toEqual([{ id: 1 }])
        await sqlRun((sql) => sql`ALTER TABLE wide ADD COLUMN extra TEXT`)
        expect(await codeOf(runtime, select)).toBe("0A000")
        expect(await read()).toEqual([{ id: 1, extra: null }])
      })
    } else {
      test("sends every statement unnamed: nothing is prepared on the connection", async () => {
        for (let i = 0; i < 3; i++) await sqlRun((sql) => sql`SELECT name FROM things WHERE id = ${1}`)
        expect(await preparedOnConnection()).toEqual([])
      })

      test("reads a table's new columns at once", async () => {
        const read = () => sqlRun((sql) => sql`SELECT * FROM wide WHERE id = ${1}`)
        expect(await read()).toEqual([{ id: 1 }])
        await sqlRun((sql) => sql`ALTER TABLE wide ADD COLUMN extra TEXT`)
        expect(await read()).toEqual([{ id: 1, extra: null }])
      })
    }
  })
}

// No PostgreSQL needed: a server that takes the connection and never answers. The service's own client
// (src/Sql/Client.ts), with the fast path and without. Run once, in the SQLite run.
test.skipIf(usingPostgres())(
  "start-up against a server that never answers fails after the connect timeout, with either pool",
  async () => {
    const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: () => {} } })
    try {
      const settings = (fastPaths: string) =>
        Layer.setConfigProvider(
          ConfigProvider.fromMap(
            new Map([
              ["DATABASE_URL", `postgres://nobody@127.0.0.1:${silent.port}/none`],
              ["FAST_PATHS", fastPaths]
            ])
          )
        )
      const outcomes = await Promise.all(
        ["all", "none"].map((fastPaths) =>
          Effect.runPromise(
            Effect.scoped(Layer.build(SqlClientLive.pipe(Layer.provide(settings(fastPaths))))).pipe(
              Effect.sandbox,
              Effect.flip,
              Effect.map((cause) => Cause.pretty(cause))
            )
          )
        )
      )
      // It ends (the test's own timeout is the bound) with the client's failure to connect, not a hang.
      for (const outcome of outcomes) expect(outcome).toMatch(/PgClient: (Failed to connect|Connection timed out)/)
    } finally {
      silent.stop(true)
    }
  },
  20_000
)
