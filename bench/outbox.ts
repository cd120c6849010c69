/**
 * The create path below HTTP, in-process: `Projects.create` (the project, its event and one delivery per webhook,
 * claimed and handed to the inbox) in a loop, no server, no worker. Prints the CPU and wall time per create.
 * The inbox is opened wide and drained between batches, so every delivery takes the claimed path, as in the server
 * when the worker has room.
 * `--plain` runs, in place of `Projects.create`, the same statements written plainly (`sql` templates in one
 * `withTransaction` on the same client, no service code): what the statements cost, for the service's create to be
 * measured against (with `--hooks 0` only: it writes no deliveries; on SQLite a transaction each, where the service's
 * group commit batches them).
 * Usage: bun bench/outbox.ts [--creates 4000] [--hooks 10] [--concurrency 1] [--rounds 3] [--plain]
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
import { arg } from "./args.ts"

const CREATES = arg("creates", 4000)
const HOOKS = arg("hooks", 10)
const CONCURRENCY = arg("concurrency", 1)
const ROUNDS = arg("rounds", 3)
const BATCH = 100
const PLAIN = process.argv.includes("--plain")
if (PLAIN && HOOKS !== 0) throw new Error("--plain writes no deliveries: use it with --hooks 0")

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
/** `--plain`: the statements `Projects.create` sends for a private project with no webhook, written plainly. */
const plainCreate = (name: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const at = new Date().toISOString()
    const project = {
      id: makeId("project"),
      name,
      description: "",
      visibility: "private",
      status: "active",
      owner_id: user.id,
      team_id: null,
      created_at: at,
      updated_at: at
    }
    const eventId = makeId("event")
    const event = {
      id: eventId,
      type: "project.created",
      payload: JSON.stringify({
        id: eventId,
        type: "project.created",
        created_at: at,
        actor: { type: "user", id: user.id, name: user.name },
        data: project
      }),
      trace_context: null,
      created_at: at
    }
    const audience = { user_id: user.id, event_id: eventId, type: "project.created", created_at: at }
    const audit = {
      id: makeId("audit"),
      action: "project.created",
      actor_type: "user",
      actor_id: user.id,
      actor_name: user.name,
      credential_type: "api_key",
      credential_id: principal.credential.id,
      target_type: "project",
      target_id: project.id,
      target_name: project.name,
      team_id: null,
      user_id: user.id,
      ip: null,
      user_agent: null,
      request_id: crypto.randomUUID(),
      changes: null,
      created_at: at
    }
    yield* Effect.gen(function* () {
      yield* sql`INSERT INTO projects ${sql.insert(project)}`
      yield* sql.onDialectOrElse({
        pg: () =>
          sql`SELECT id, url, signature, secret, previous_secret, previous_secret_expires_at, status, rate_limit
              FROM webhooks WHERE user_id IN ${sql.in([user.id])} AND events::jsonb ? ${event.type}
              AND disabled_at IS NULL`,
        orElse: () =>
          sql`SELECT id, url, signature, secret, previous_secret, previous_secret_expires_at, status, rate_limit
              FROM webhooks WHERE user_id IN ${sql.in([user.id])}
              AND EXISTS (SELECT 1 FROM json_each(events) WHERE value = ${event.type}) AND disabled_at IS NULL`
      })
      yield* sql.onDialectOrElse({
        pg: () =>
          sql`WITH ${sql("w0")} AS (INSERT INTO events ${sql.insert(event)})
              INSERT INTO event_audience ${sql.insert(audience)}`,
        orElse: () =>
          Effect.zipRight(
            sql`INSERT INTO events ${sql.insert(event)}`,
            sql`INSERT INTO event_audience ${sql.insert(audience)}`
          )
      })
      yield* sql`INSERT INTO audit_log ${sql.insert(audit)}`
    }).pipe(sql.withTransaction, Effect.orDie)
  })

const createMany = (count: number, label: string) =>
  Effect.flatMap(Projects, (projects) =>
    Effect.forEach(
      Array.from({ length: count }, (_, i) => i),
      (i) => (PLAIN ? plainCreate(`${label} ${i}`) : projects.create(principal, { name: `${label} ${i}` })),
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
  `database: ${databaseUrl.split(":")[0]}, ${HOOKS} webhooks, concurrency ${CONCURRENCY}, FAST_PATHS=${process.env.FAST_PATHS ?? "all"}${PLAIN ? ", the plain statements" : ""}`
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
