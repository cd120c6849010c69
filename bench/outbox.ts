/**
 * The create path below HTTP, in-process: `Projects.create` (the project, its event and one delivery per webhook,
 * claimed and handed to the inbox) in a loop, no server, no worker. Prints the CPU and wall time per create.
 * The inbox is opened wide and drained between batches, so every delivery takes the claimed path, as in the server
 * when the worker has room.
 * Usage: bun bench/outbox.ts [--creates 4000] [--hooks 10] [--concurrency 1] [--rounds 3]
 *        FAST_PATHS=… as the server reads it (on PostgreSQL, `prepared-statements` chooses the pool)
 *        (`bun --cpu-prof --cpu-prof-dir=/tmp/prof bench/outbox.ts` for a profile, `bun bench/profile.ts` to read it)
 * Uses DATABASE_URL when set (a postgres URL: a fresh database is made on it), else a temporary SQLite file.
 */
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, ManagedRuntime } from "effect"
import { makeId } from "../src/Domain/Ids.ts"
import { DeliveryInbox } from "../src/Events/Inbox.ts"
import { Projects } from "../src/Projects/Projects.ts"
import { SqlLive } from "../src/Sql/Client.ts"
import { Users } from "../src/Users/Users.ts"
import { withSettings } from "../test/support/fixtures.ts"
import { webhookRow } from "../test/support/helpers.ts"
import { removeLeftovers } from "../test/support/leftovers.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"
import { principalOf } from "../test/support/services.ts"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}
const CREATES = arg("creates", 4000)
const HOOKS = arg("hooks", 10)
const CONCURRENCY = arg("concurrency", 1)
const ROUNDS = arg("rounds", 3)
const BATCH = 100

const databaseUrl = await freshDatabaseUrl()
const runtime = ManagedRuntime.make(
  Layer.mergeAll(Projects.Default, Users.Default, DeliveryInbox.Default).pipe(
    Layer.provideMerge(SqlLive),
    Layer.provide(withSettings({ DATABASE_URL: databaseUrl, FAST_PATHS: process.env.FAST_PATHS ?? "all" }))
  )
)

const user = await runtime.runPromise(
  Effect.flatMap(Users, (users) => users.create({ email: `outbox-${Date.now()}@example.com`, name: "Outbox" }))
)
const now = new Date().toISOString()
await runtime.runPromise(
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    HOOKS === 0
      ? Effect.void
      : sql`INSERT INTO webhooks ${sql.insert(
          Array.from({ length: HOOKS }, (_, n) =>
            webhookRow({
              id: makeId("webhook"),
              userId: user.id,
              url: `http://127.0.0.1:9/${n}`,
              secret: `whsec_${n}`,
              at: now
            })
          )
        )}`
  )
)
await runtime.runPromise(Effect.flatMap(DeliveryInbox, (inbox) => inbox.open(1_000_000, Duration.minutes(5), 1)))
const principal = principalOf(user)

const drain = Effect.flatMap(DeliveryInbox, (inbox) =>
  Effect.flatMap(inbox.takeUnstarted, (taken) => inbox.release(taken.length))
)
const createMany = (count: number, label: string) =>
  Effect.flatMap(Projects, (projects) =>
    Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => projects.create(principal, { name: `${label} ${i}` }),
      { concurrency: CONCURRENCY, discard: true }
    )
  ).pipe(Effect.withTracerEnabled(false)) // as in the server with nothing exported
const run = async (count: number, label: string) => {
  for (let done = 0; done < count; done += BATCH) {
    await runtime.runPromise(Effect.zipRight(createMany(Math.min(BATCH, count - done), `${label}${done}`), drain))
  }
}

await run(Math.min(1000, CREATES), "warm")
console.log(
  `database: ${databaseUrl.split(":")[0]}, ${HOOKS} webhooks, concurrency ${CONCURRENCY}, FAST_PATHS=${process.env.FAST_PATHS ?? "all"}`
)
for (let round = 1; round <= ROUNDS; round++) {
  const cpu = process.cpuUsage()
  const t0 = performance.now()
  await run(CREATES, `r${round}-`)
  const wall = performance.now() - t0
  const used = process.cpuUsage(cpu)
  const cpuMs = (used.user + used.system) / 1000
  console.log(
    `round ${round}: ${CREATES} creates, CPU ${((1000 * cpuMs) / CREATES).toFixed(0)} µs a create` +
      ` (user ${((1000 * used.user) / 1000 / CREATES).toFixed(0)}), wall ${((1000 * wall) / CREATES).toFixed(0)} µs`
  )
}
await runtime.dispose()
await removeLeftovers()
process.exit(0)
