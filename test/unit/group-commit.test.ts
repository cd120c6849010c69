/**
 * The transactions `Events.transaction` runs every change in (src/Sql/Transactions.ts), on SQLite: the `group-commit`
 * writer (src/Sql/GroupCommit.ts: a queue of changes, one fiber, one connection, one `COMMIT` a batch) and its twin,
 * the library's `sql.withTransaction`, under the same tests: a change's writes are committed when it answers; one that
 * fails, dies or is interrupted leaves nothing and does not touch the others (those of its batch); a read never sees a
 * change's uncommitted writes; a change runs with its caller's services, fiber refs and span, and its nested
 * transactions are savepoints. The writer's own: the changes that wait while a batch runs are one transaction, a
 * failed `COMMIT` fails every change of its batch, and SQLite failing under a batch (through a connection that fails
 * as it can) leaves no one waiting and nothing half-written. Every other SQLite test runs on the writer (the default).
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Context, Deferred, Effect, Exit, Fiber, FiberRef, Layer, ManagedRuntime, Option } from "effect"
import { Events } from "../../src/Events/Events.ts"
import type { EndedSpan } from "../../src/Observability/OtlpSpan.ts"
import { makeTracer } from "../../src/Observability/Tracer.ts"
import { SqlClientLive, SqlLive } from "../../src/Sql/Client.ts"
import { makeGroupCommit } from "../../src/Sql/GroupCommit.ts"
import { Transactions } from "../../src/Sql/Transactions.ts"
import { withDatabaseUrl, withSettings } from "../support/fixtures.ts"
import { twinsOf } from "../support/helpers.ts"
import { tempDir } from "../support/temp.ts"
import { committedIn, expectedOfMany, manyAtOnce } from "../support/things.ts"

const dir = tempDir("pcs-group-commit-")

/** A change's transaction, as `Transactions` gives it. */
type Transact = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>

const insert = (sql: SqlClient.SqlClient, id: number, name = `thing ${id}`) =>
  sql`INSERT INTO things (id, name) VALUES (${id}, ${name})`

/**
 * `effects` started on fibers of their own, each once the one before has called (so they queue in this order behind
 * whatever holds the connection); answers their fibers once the last one has called.
 */
const startInOrder = <A, E>(effects: ReadonlyArray<Effect.Effect<A, E>>) =>
  Effect.forEach(effects, (effect) =>
    Effect.gen(function* () {
      const calling = yield* Deferred.make<void>()
      // Nothing yields between the signal and the call: once it is seen, the change is queued (or waits its turn).
      const fiber = yield* Effect.fork(Effect.zipRight(Deferred.succeed(calling, undefined), effect))
      yield* Deferred.await(calling)
      yield* Effect.yieldNow()
      return fiber
    })
  )

/** A change on another fiber that writes `id` and stays open until `go`; `written` once it has written. */
const holdOpen = (
  sql: SqlClient.SqlClient,
  transaction: Transact,
  id: number,
  outcome: "commits" | "rolls back" = "commits"
) =>
  Effect.gen(function* () {
    const written = yield* Deferred.make<void>()
    const go = yield* Deferred.make<void>()
    const fiber = yield* Effect.fork(
      transaction(
        Effect.gen(function* () {
          yield* insert(sql, id, `held ${id}`)
          yield* Deferred.succeed(written, undefined)
          yield* Deferred.await(go)
          if (outcome === "rolls back") return yield* Effect.fail("rolled back")
        })
      ).pipe(Effect.exit)
    )
    yield* Deferred.await(written)
    return { go, fiber, open: Deferred.succeed(go, undefined) }
  })

class Caller extends Context.Tag("test/Caller")<Caller, string>() {}
const callerRef = FiberRef.unsafeMake("none")

for (const [name, fastPaths] of twinsOf("group-commit")) {
  describe(`transactions: ${name === "fast" ? "the group-commit writer" : "its twin, sql.withTransaction"}`, () => {
    let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient | Transactions, unknown>
    const file = join(dir, `${name}.sqlite`)
    const committed = committedIn(file)
    const run = <A, E>(f: (sql: SqlClient.SqlClient, transaction: Transact) => Effect.Effect<A, E>) =>
      runtime.runPromise(
        Effect.flatMap(Effect.all([SqlClient.SqlClient, Transactions]), ([sql, transactions]) =>
          f(sql, transactions.transaction)
        ).pipe(Effect.withTracerEnabled(false))
      )

    beforeAll(async () => {
      runtime = ManagedRuntime.make(
        Transactions.Default.pipe(
          Layer.provideMerge(SqlClientLive),
          Layer.provide(withSettings({ DATABASE_URL: `sqlite:${file}`, FAST_PATHS: fastPaths }))
        )
      )
      await run((sql) => sql`CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)`)
    }, 60_000)
    afterAll(() => runtime.dispose(), 20_000)

    test(`the transactions are the ${name === "fast" ? "group-commit" : "plain"} ones`, async () => {
      const kind = await runtime.runPromise(Effect.map(Transactions, (transactions) => transactions.kind))
      expect(kind).toBe(name === "fast" ? "group-commit" : "plain")
    })

    test("a change sees its own writes, answers them committed, and a failure rolls them all back", async () => {
      const inside = await run((sql, transaction) =>
        transaction(Effect.zipRight(insert(sql, 1, "one"), sql`SELECT name FROM things WHERE id = ${1}`))
      )
      expect(inside).toEqual([{ name: "one" }])
      expect(committed(1)).toBe(true)
      const failed = await run((sql, transaction) =>
        Effect.flip(transaction(Effect.zipRight(insert(sql, 2, "two"), insert(sql, 3, "one"))))
      )
      expect(failed).toBeInstanceOf(SqlError)
      expect([committed(2), committed(3)]).toEqual([false, false])
    })

    test("150 changes at once each answer once committed; a failed one's writes never are", async () => {
      const outcomes = await run((sql, transaction) => manyAtOnce(sql, transaction, committed))
      // Each one that answered had its row committed by then; a failed one's was never written.
      expect(expectedOfMany(outcomes)).toEqual({ wrongOutcome: [], seenOtherwise: [] })
      expect(await run((sql) => sql`SELECT count(*) AS n FROM things WHERE id BETWEEN 100 AND 249`)).toEqual([
        { n: 135 }
      ])
    })

    test("changes that wait while another runs: each commits or fails alone, and a failure touches no other", async () => {
      const result = await run((sql, transaction) =>
        Effect.gen(function* () {
          const held = yield* holdOpen(sql, transaction, 300)
          const changes: ReadonlyArray<Effect.Effect<unknown, unknown>> = [
            transaction(insert(sql, 301)),
            // Whether the first one's write is committed yet when this one runs (the writer: one transaction).
            transaction(
              Effect.zipRight(
                insert(sql, 302),
                Effect.sync(() => committed(301))
              )
            ),
            transaction(Effect.zipRight(insert(sql, 303), Effect.fail("refused"))),
            transaction(Effect.zipRight(insert(sql, 304), Effect.dieMessage("a defect"))),
            transaction(insert(sql, 301)),
            transaction(
              Effect.gen(function* () {
                yield* insert(sql, 305)
                // A nested one that fails: its savepoint alone is rolled back.
                yield* Effect.either(transaction(Effect.zipRight(insert(sql, 306), Effect.fail("inner"))))
                return yield* sql`SELECT id FROM things WHERE id IN (305, 306)`
              })
            )
          ]
          const waiting = yield* startInOrder(changes.map((change) => Effect.exit(change)))
          yield* held.open
          yield* Fiber.join(held.fiber)
          return yield* Effect.forEach(waiting, Fiber.join)
        })
      )
      const outcomes = result.map((exit) =>
        Exit.match(exit, {
          onSuccess: (value) => ({ succeeded: value }),
          onFailure: (cause) =>
            Cause.isDie(cause) ? "died" : { failed: Option.getOrUndefined(Cause.failureOption(cause)) }
        })
      )
      expect(outcomes).toEqual([
        { succeeded: expect.anything() },
        // The writer: the first one's write, in the same transaction, is not committed yet.
        { succeeded: name === "idiomatic" },
        { failed: "refused" },
        "died",
        { failed: expect.any(SqlError) },
        { succeeded: [{ id: 305 }] }
      ])
      expect([300, 301, 302, 303, 304, 305, 306].map(committed)).toEqual([true, true, true, false, false, true, false])
    })

    for (const outcome of ["commits", "rolls back"] as const) {
      test(`a read never sees a change's uncommitted writes: it waits for the change, which ${outcome}`, async () => {
        const id = outcome === "commits" ? 310 : 311
        for (const traced of [false, true]) {
          const result = await run((sql, transaction) =>
            Effect.gen(function* () {
              const held = yield* holdOpen(sql, transaction, id + (traced ? 10 : 0), outcome)
              const read = sql`SELECT name FROM things WHERE id = ${id + (traced ? 10 : 0)}`
              const reading = yield* Effect.fork(
                traced ? read.pipe(Effect.withTracerEnabled(true), Effect.withTracer(makeTracer(() => {}))) : read
              )
              yield* Effect.sleep("30 millis")
              const early = yield* Fiber.poll(reading)
              yield* held.open
              yield* Fiber.join(held.fiber)
              return { early: Option.isSome(early), rows: yield* Fiber.join(reading) }
            })
          )
          expect(result.early).toBe(false)
          expect(result.rows).toEqual(outcome === "commits" ? [{ name: `held ${id + (traced ? 10 : 0)}` }] : [])
        }
      })
    }

    test("a change runs with its caller's services and fiber refs, and its caller keeps the refs it set", async () => {
      const result = await run((sql, transaction) =>
        transaction(
          Effect.gen(function* () {
            const caller = yield* Caller
            const before = yield* FiberRef.get(callerRef)
            yield* FiberRef.set(callerRef, "set inside")
            yield* insert(sql, 330)
            return { caller, before }
          })
        ).pipe(
          Effect.flatMap((inside) =>
            Effect.gen(function* () {
              const after = yield* FiberRef.get(callerRef)
              // Nothing of the transaction stays with the caller: its next statements are outside any.
              const inTransaction = Option.isSome(yield* Effect.serviceOption(SqlClient.TransactionConnection))
              return { ...inside, after, inTransaction }
            })
          ),
          Effect.locally(callerRef, "the caller's"),
          Effect.provideService(Caller, "a caller")
        )
      )
      expect(result).toEqual({ caller: "a caller", before: "the caller's", after: "set inside", inTransaction: false })
      expect(committed(330)).toBe(true)
    })

    test("with tracing on, a change's statements are spans beneath its caller's; with it off, none", async () => {
      const spans: Array<EndedSpan> = []
      const traced = (sql: SqlClient.SqlClient, transaction: Transact, id: number, on: boolean) =>
        transaction(insert(sql, id)).pipe(
          Effect.withSpan("caller"),
          Effect.withTracerEnabled(on),
          Effect.withTracer(makeTracer((span) => spans.push(span)))
        )
      await run((sql, transaction) =>
        Effect.zipRight(traced(sql, transaction, 340, true), traced(sql, transaction, 341, false))
      )
      const byId = new Map(spans.map((span) => [span.spanId, span]))
      const ancestors = (span: EndedSpan): Array<string> => {
        const parent = span.parent._tag === "Some" ? byId.get(span.parent.value.spanId) : undefined
        return parent === undefined ? [] : [parent.name, ...ancestors(parent)]
      }
      const inserts = spans.filter(
        (span) =>
          span.name === "sql.execute" && String(span.attributes.get("db.query.text")).includes("INSERT INTO things")
      )
      expect(inserts.length).toBe(1)
      expect(ancestors(inserts[0]!)).toEqual(["sql.transaction", "caller"])
      expect(spans.filter((span) => span.name === "caller").length).toBe(1)
    })

    test("a change whose caller is interrupted while it waits never runs, and holds nothing", async () => {
      const result = await run((sql, transaction) =>
        Effect.gen(function* () {
          const held = yield* holdOpen(sql, transaction, 350)
          const [waiting] = yield* startInOrder([transaction(insert(sql, 351))])
          const stopping = yield* Effect.fork(Fiber.interrupt(waiting!))
          yield* Effect.sleep("30 millis")
          // The writer lets it go at once; the library takes its connection uninterruptibly, so it ends once it has one.
          const early = Option.isSome(yield* Fiber.poll(stopping))
          yield* held.open
          const exit = yield* Fiber.join(stopping)
          yield* Fiber.join(held.fiber)
          yield* transaction(insert(sql, 352))
          return { early, interrupted: Exit.isInterrupted(exit) }
        }).pipe(Effect.timeout("5 seconds"))
      )
      expect(result).toEqual({ early: name === "fast", interrupted: true })
      expect([350, 351, 352].map(committed)).toEqual([true, false, true])
    })

    test("a change whose caller is interrupted while it runs is rolled back alone", async () => {
      const result = await run((sql, transaction) =>
        Effect.gen(function* () {
          const held = yield* holdOpen(sql, transaction, 360)
          const written = yield* Deferred.make<void>()
          const [before, stopped, after] = yield* startInOrder([
            transaction(insert(sql, 361)),
            transaction(
              Effect.zipRight(insert(sql, 362), Effect.zipRight(Deferred.succeed(written, undefined), Effect.never))
            ),
            transaction(insert(sql, 363))
          ])
          yield* held.open
          yield* Deferred.await(written)
          const exit = yield* Fiber.interrupt(stopped!)
          const others: ReadonlyArray<Exit.Exit<unknown, unknown>> = [
            yield* Fiber.join(held.fiber),
            yield* Fiber.await(before!),
            yield* Fiber.await(after!)
          ]
          return { interrupted: Exit.isInterrupted(exit), others: others.map(Exit.isSuccess) }
        }).pipe(Effect.timeout("5 seconds"))
      )
      expect(result).toEqual({ interrupted: true, others: [true, true, true] })
      expect([360, 361, 362, 363].map(committed)).toEqual([true, true, false, true])
    })

    test("a change whose caller is interrupted once it has run is committed all the same", async () => {
      const result = await run((sql, transaction) =>
        Effect.gen(function* () {
          const held = yield* holdOpen(sql, transaction, 370)
          const later = yield* Deferred.make<void>()
          const go = yield* Deferred.make<void>()
          const [ran, last] = yield* startInOrder([
            transaction(insert(sql, 371)),
            transaction(
              Effect.zipRight(insert(sql, 372), Effect.zipRight(Deferred.succeed(later, undefined), Deferred.await(go)))
            )
          ])
          yield* held.open
          // The first has run; the second holds the transaction open (the writer: the same one).
          yield* Deferred.await(later)
          const stopping = yield* Effect.fork(Fiber.interrupt(ran!))
          yield* Effect.sleep("30 millis")
          // The writer's caller waits for its COMMIT; the library's answered when it committed, before.
          const early = Option.isSome(yield* Fiber.poll(stopping))
          yield* Deferred.succeed(go, undefined)
          yield* Fiber.join(stopping)
          yield* Fiber.join(last!)
          return early
        }).pipe(Effect.timeout("5 seconds"))
      )
      expect(result).toBe(name === "idiomatic")
      expect([370, 371, 372].map(committed)).toEqual([true, true, true])
    })

    // The library's transaction leaves its transaction open when its COMMIT fails (it rolls back only when the
    // effect failed), and every later statement runs inside it: this is the writer's alone.
    test.if(name === "fast")(
      "a failed COMMIT fails every change of its batch and leaves none of their writes",
      async () => {
        await run(
          (sql) =>
            sql`CREATE TABLE notes (id INTEGER PRIMARY KEY, thing_id INTEGER REFERENCES things (id) DEFERRABLE INITIALLY DEFERRED)`
        )
        const exits = await run((sql, transaction) =>
          Effect.gen(function* () {
            const held = yield* holdOpen(sql, transaction, 380)
            const batch = yield* startInOrder(
              [
                transaction(insert(sql, 381)),
                // A deferred foreign key: checked at COMMIT, which fails.
                transaction(sql`INSERT INTO notes (id, thing_id) VALUES (${1}, ${999})`),
                transaction(insert(sql, 382))
              ].map((change) => Effect.exit(change))
            )
            yield* held.open
            yield* Fiber.join(held.fiber)
            return yield* Effect.forEach(batch, Fiber.join)
          })
        )
        for (const exit of exits) expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
        expect(await run((sql) => sql`SELECT id FROM notes`)).toEqual([])
        expect([380, 381, 382].map(committed)).toEqual([true, false, false])
        await run((sql, transaction) => transaction(insert(sql, 383)))
        expect(committed(383)).toBe(true)
      }
    )
  })
}

test("the service's schema has no deferred constraint, which would fail the changes committed with its own", async () => {
  const migrated = ManagedRuntime.make(
    SqlLive.pipe(Layer.provide(withDatabaseUrl(`sqlite:${join(dir, "migrated.sqlite")}`)))
  )
  const deferred = await migrated.runPromise(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql`SELECT name FROM sqlite_master WHERE upper(sql) LIKE '%DEFERRABLE%' OR upper(sql) LIKE '%DEFER_FOREIGN_KEYS%'`
    )
  )
  await migrated.dispose()
  expect(deferred).toEqual([])
}, 60_000)

for (const [name, fastPaths] of twinsOf("group-commit")) {
  test(`Events.transaction runs its changes through them (${name === "fast" ? "the writer: two at once are one SQLite transaction" : "the twin: one each"})`, async () => {
    const file = join(dir, `events-${name}.sqlite`)
    const events = ManagedRuntime.make(
      Events.Default.pipe(
        Layer.provideMerge(SqlLive),
        Layer.provide(withSettings({ DATABASE_URL: `sqlite:${file}`, FAST_PATHS: fastPaths }))
      )
    )
    const seen = await events.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { transaction } = yield* Events
        yield* sql`CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)`
        // Asked for at once: the second runs after the first, and looks from another connection for its row.
        const [, second] = yield* Effect.all(
          [transaction(insert(sql, 1)), transaction(Effect.sync(() => committedIn(file)(1)))],
          { concurrency: "unbounded" }
        )
        return second
      })
    )
    await events.dispose()
    // The writer commits them together, so the first is not committed yet when the second runs; the twin commits each.
    expect(seen).toBe(name === "idiomatic")
  }, 60_000)
}

/**
 * The writer when SQLite fails under it, through a connection that fails the way it can: a change's failing statement
 * makes SQLite roll the whole transaction back (so ending its savepoint fails), `BEGIN` fails, the connection dies at
 * `COMMIT`. Each time a change holds the writer while three more queue behind it, to be one batch.
 */
describe("the group-commit writer when SQLite fails under it", () => {
  const file = join(dir, "faults.sqlite")
  const committed = committedIn(file)
  let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, unknown>
  /** What a statement of this text does instead of what it should, once, after `skip` more of them. */
  interface Fault {
    readonly text: string
    readonly does: "rolls back everything and fails" | "fails" | "dies"
    skip: number
  }
  let fault: Fault | undefined
  /** What the writer ran on its connection outside the changes' own statements. */
  let ran: Array<string> = []

  beforeAll(async () => {
    runtime = ManagedRuntime.make(SqlClientLive.pipe(Layer.provide(withSettings({ DATABASE_URL: `sqlite:${file}` }))))
    await runtime.runPromise(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`
      )
    )
  }, 60_000)
  afterAll(() => runtime.dispose(), 20_000)

  const faulty = (connection: Connection): Connection => ({
    ...connection,
    executeUnprepared: (text, params, transformRows) =>
      Effect.suspend(() => {
        ran.push(text)
        let now: Fault["does"] | undefined
        if (fault?.text === text && fault.skip-- === 0) {
          now = fault.does
          fault = undefined
        }
        const error = new SqlError({ cause: new Error("disk I/O error") })
        if (now === "dies") return Effect.die(new Error("the connection broke"))
        if (now === "fails") return Effect.fail(error)
        if (now === "rolls back everything and fails") {
          return Effect.zipRight(connection.executeUnprepared("ROLLBACK", [], undefined), Effect.fail(error))
        }
        return connection.executeUnprepared(text, params, transformRows)
      })
  })

  /** A writer of its own over the library's client, whose reserved connection is `faulty`. */
  const withWriter = <A, E>(f: (sql: SqlClient.SqlClient, transaction: Transact) => Effect.Effect<A, E>) =>
    runtime.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const transaction = yield* makeGroupCommit({
            reserve: Effect.map(sql.reserve, faulty),
            withTransaction: sql.withTransaction
          })
          return yield* f(sql, transaction)
        })
      ).pipe(Effect.withTracerEnabled(false), Effect.timeout("10 seconds"))
    )

  /**
   * A change held open (`first`) while three queue behind it, one batch: `first + 1` succeeds, `+ 2` fails, `+ 3`
   * succeeds; `armed` (the fault, for that batch) set once they are queued.
   */
  const batchOfThree = (sql: SqlClient.SqlClient, transaction: Transact, first: number, armed: Fault) =>
    Effect.gen(function* () {
      const held = yield* holdOpen(sql, transaction, first)
      const batch = yield* startInOrder(
        [
          transaction(insert(sql, first + 1)),
          transaction(Effect.zipRight(insert(sql, first + 2), Effect.fail("refused"))),
          transaction(insert(sql, first + 3))
        ].map((change) => Effect.exit(change))
      )
      yield* Effect.sync(() => {
        ran = []
        fault = armed
      })
      yield* held.open
      yield* Fiber.join(held.fiber)
      return (yield* Effect.forEach(batch, Fiber.join)).map((exit) =>
        Exit.isSuccess(exit) ? "succeeded" : Cause.isDie(exit.cause) ? "died" : "failed"
      )
    })

  const member = ["SAVEPOINT change", "RELEASE change"]

  test("a batch lost under a failing change: those run before die, those after run in a new transaction", async () => {
    const outcomes = await withWriter((sql, transaction) =>
      batchOfThree(sql, transaction, 1, {
        text: "ROLLBACK TO change",
        does: "rolls back everything and fails",
        skip: 0
      })
    )
    expect(outcomes).toEqual(["died", "failed", "succeeded"])
    expect([1, 2, 3, 4].map(committed)).toEqual([true, false, false, true])
    // The held one's end, then the batch: begun, lost at its second change, rolled back; its third begun anew.
    expect(ran).toEqual([
      "RELEASE change",
      "COMMIT",
      ...["BEGIN", ...member, "SAVEPOINT change", "ROLLBACK TO change", "ROLLBACK"],
      ...["BEGIN", ...member, "COMMIT"]
    ])
  })

  test("a BEGIN that fails fails the batch's changes, which never ran; the writer goes on", async () => {
    const outcomes = await withWriter((sql, transaction) =>
      Effect.gen(function* () {
        const outcomes = yield* batchOfThree(sql, transaction, 11, { text: "BEGIN", does: "fails", skip: 0 })
        yield* transaction(insert(sql, 15))
        return outcomes
      })
    )
    expect(outcomes).toEqual(["failed", "failed", "failed"])
    expect([11, 12, 13, 14, 15].map(committed)).toEqual([true, false, false, false, true])
  })

  test("a connection that dies at COMMIT: every change of the batch dies, nothing stays, the writer goes on", async () => {
    const outcomes = await withWriter((sql, transaction) =>
      Effect.gen(function* () {
        // The held one's COMMIT first, then the batch's.
        const outcomes = yield* batchOfThree(sql, transaction, 21, { text: "COMMIT", does: "dies", skip: 1 })
        // The same writer, after the defect.
        yield* transaction(insert(sql, 25))
        return outcomes
      })
    )
    expect(outcomes).toEqual(["died", "failed", "died"])
    expect([21, 22, 23, 24, 25].map(committed)).toEqual([true, false, false, false, true])
  })
})
