/**
 * What a transaction's own machinery costs on PostgreSQL, in-process: N empty transactions (`BEGIN`, `COMMIT`), C at
 * a time, on a pool like the service's (20 connections, prepared statements), this process's CPU a transaction.
 *
 * - `library`: `sql.withTransaction(Effect.void)` on the service's client (`pg-statements` on, tracing off): the
 *   library's span, `Scope`, reserved connection and `BEGIN`/`COMMIT` effects, as `Events.transaction` runs them.
 * - `straight`: the best case of a transaction run straight (no span, no `Scope`, no `TransactionConnection`): a
 *   connection checked out of the pool in one callback, `BEGIN` and `COMMIT` sent on it, given back.
 *
 * The difference is the most a straight transaction could save a create. Run the two in turn, A B A B, pinned to one
 * core, with PostgreSQL on another:
 *
 *   DATABASE_URL=postgres://… taskset -c 0 bun bench/transaction.ts library|straight [--transactions 20000]
 *     [--concurrency 64] [--rounds 4]
 */

import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, Exit, Layer, ManagedRuntime, Redacted } from "effect"
import type Pg from "pg"
import { SqlClientLive } from "../src/Sql/Client.ts"
import { makePool } from "../src/Sql/PgPool.ts"
import { DEFAULT_CAPACITY, preparingClient } from "../src/Sql/PgPrepared.ts"
import { dropDatabases } from "../test/support/databases.ts"
import { withSettings } from "../test/support/fixtures.ts"
import { freshDatabaseUrl, usingPostgres } from "../test/support/server.ts"
import { arg } from "./args.ts"
import { median } from "./stats.ts"

const who = process.argv[2]
if (who !== "library" && who !== "straight") throw new Error("bun bench/transaction.ts library|straight [options]")
if (!usingPostgres()) throw new Error("DATABASE_URL must name a PostgreSQL server")
const transactions = arg("transactions", 20_000)
const concurrency = arg("concurrency", 64)
const rounds = arg("rounds", 4)
const url = await freshDatabaseUrl()

/** One statement on a connection, answered through its callback. */
const send = (client: Pg.PoolClient, text: string) =>
  Effect.async<void, SqlError>((resume) => {
    client.query(text, (cause: Error | null) =>
      resume(cause ? Effect.fail(new SqlError({ cause, message: "Failed to execute statement" })) : Effect.void)
    )
  })

/** `straight`: check out, `BEGIN`, the body, `COMMIT` (or `ROLLBACK`), give back. */
const straightTransaction =
  (pool: Pg.Pool) =>
  <A, E, R>(body: Effect.Effect<A, E, R>) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        Effect.async<readonly [Pg.PoolClient, () => void], SqlError>((resume) => {
          pool.connect((cause, client, release) =>
            resume(
              cause || client === undefined
                ? Effect.fail(new SqlError({ cause, message: "Failed to acquire connection" }))
                : Effect.succeed([client, () => release()] as const)
            )
          )
        }),
        ([client, release]) =>
          send(client, "BEGIN").pipe(
            Effect.zipRight(restore(body)),
            Effect.exit,
            Effect.flatMap((exit) =>
              Effect.zipRight(
                Effect.ensuring(
                  Effect.orDie(send(client, Exit.isSuccess(exit) ? "COMMIT" : "ROLLBACK")),
                  Effect.sync(release)
                ),
                exit
              )
            )
          )
      )
    )

const one: Effect.Effect<void, unknown, SqlClient.SqlClient> =
  who === "library" ? Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(Effect.void)) : Effect.void
const runtime = ManagedRuntime.make(
  SqlClientLive.pipe(Layer.provide(withSettings({ DATABASE_URL: url, FAST_PATHS: "all" })))
)
const program = Effect.gen(function* () {
  const pool = yield* makePool({
    url: Redacted.make(url),
    maxConnections: 20,
    applicationName: "bench-transaction",
    connectTimeout: Duration.seconds(5),
    Client: preparingClient(DEFAULT_CAPACITY)
  })
  const transaction = who === "library" ? one : straightTransaction(pool)(Effect.void)
  const burst = Effect.forEach(Array.from({ length: transactions }), () => transaction, {
    concurrency,
    discard: true
  })
  yield* burst
  const perTransaction: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    Bun.gc(true)
    const before = process.cpuUsage()
    yield* burst
    const used = process.cpuUsage(before)
    perTransaction.push((used.user + used.system) / transactions)
  }
  return perTransaction
}).pipe(Effect.scoped, Effect.withTracerEnabled(false))

const perTransaction = await runtime.runPromise(program)
console.log(
  `${who}: ${transactions} empty transactions ${concurrency} at a time: ` +
    `${perTransaction.map((x) => x.toFixed(1)).join(", ")} µs of CPU a transaction (median ${median(perTransaction).toFixed(1)})`
)
await runtime.dispose()
await dropDatabases()
