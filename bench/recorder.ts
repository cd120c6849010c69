/**
 * The delivery recorder below the worker, in-process: batches of outcomes (deliveries claimed, attempted and
 * succeeded, to `--hooks` webhooks) written by the fast recorder and by its idiomatic twin (src/Webhooks/Recorder.ts),
 * A B, B A. Prints this process's CPU and the wall time per batch (PostgreSQL's own CPU is not counted).
 * Usage: bun bench/recorder.ts [--batches 400] [--size 40] [--hooks 10] [--rounds 2]
 *        (`--size`: outcomes per batch; the worker writes what ends within 20 ms, up to 512)
 * Uses DATABASE_URL when set (a postgres URL: a fresh database is made on it), else a temporary SQLite file.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import { DeliveryId, makeId } from "../src/Domain/Ids.ts"
import { SqlLive } from "../src/Sql/Client.ts"
import { Users } from "../src/Users/Users.ts"
import { DeliveryRecorder, type DeliveryRecorderService, type Recording } from "../src/Webhooks/Recorder.ts"
import { FastRecorderLive } from "../src/Webhooks/RecorderFast.ts"
import { IdiomaticRecorderLive } from "../src/Webhooks/RecorderIdiomatic.ts"
import { withDatabaseUrl } from "../test/support/fixtures.ts"
import { webhookRow } from "../test/support/helpers.ts"
import { removeLeftovers } from "../test/support/leftovers.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"
import { arg } from "./args.ts"

const BATCHES = arg("batches", 400)
const SIZE = arg("size", 40)
const HOOKS = arg("hooks", 10)
const ROUNDS = arg("rounds", 2)

const databaseUrl = await freshDatabaseUrl()
const runtime = ManagedRuntime.make(
  Users.Default.pipe(Layer.provideMerge(SqlLive), Layer.provide(withDatabaseUrl(databaseUrl)))
)
const sqlRun = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, f))

const user = await runtime.runPromise(
  Effect.flatMap(Users, (users) => users.create({ email: `recorder-${Date.now()}@example.com`, name: "Recorder" }))
)
const T0 = new Date().toISOString()
const hooks = Array.from({ length: HOOKS }, () => makeId("webhook"))
const eventId = makeId("event")
await sqlRun((sql) =>
  Effect.gen(function* () {
    yield* sql`INSERT INTO webhooks ${sql.insert(
      hooks.map((id, n) =>
        webhookRow({ id, userId: user.id, url: `http://127.0.0.1:9/${n}`, secret: `whsec_${n}`, at: T0 })
      )
    )}`
    yield* sql`INSERT INTO events ${sql.insert({ id: eventId, type: "project.created", payload: "{}", trace_context: null, created_at: T0 })}`
  })
)

const recorders = new Map(
  await Promise.all(
    (databaseUrl.startsWith("postgres") ? [FastRecorderLive, IdiomaticRecorderLive] : [IdiomaticRecorderLive]).map(
      async (layer) => {
        const recorder = await runtime.runPromise(Effect.provide(DeliveryRecorder, layer))
        return [recorder.kind, recorder] as const
      }
    )
  )
)

/** `count` pending deliveries, claimed with `token` as the worker's claims are. */
const seed = async (count: number, token: string): Promise<Array<{ id: DeliveryId; webhook: string }>> => {
  const rows = Array.from({ length: count }, (_, i) => ({
    id: DeliveryId.make(makeId("delivery")),
    webhook: hooks[i % HOOKS]!
  }))
  for (let i = 0; i < rows.length; i += 500) {
    await sqlRun(
      (sql) =>
        sql`INSERT INTO deliveries ${sql.insert(
          rows.slice(i, i + 500).map((row) => ({
            id: row.id,
            webhook_id: row.webhook,
            event_id: eventId,
            event_type: "project.created",
            status: "pending",
            attempt_count: 0,
            manual: 0,
            next_attempt_at: T0,
            last_attempt_at: null,
            claimed_until: "2999-01-01T00:00:00.000Z",
            claim_token: token,
            created_at: T0
          }))
        )}`
    )
  }
  return rows
}

const outcomeOf = (row: { id: DeliveryId; webhook: string }, token: string): Recording => {
  const at = new Date().toISOString()
  return {
    settlement: {
      id: row.id,
      claim_token: token,
      status: "delivered",
      attempt_count: 1,
      next_attempt_at: null,
      last_attempt_at: at,
      trigger: "schedule"
    },
    attempt: {
      delivery_id: row.id,
      number: 1,
      attempted_at: at,
      duration_ms: 2,
      status_code: 204,
      error: null,
      trigger: "schedule",
      response_body: null,
      outcome: "succeeded",
      request_headers: JSON.stringify({
        "content-type": "application/json",
        "webhook-id": eventId,
        "webhook-timestamp": "1764100000",
        "webhook-signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4="
      }),
      response_headers: JSON.stringify({ "content-length": "0" })
    },
    webhook_id: row.webhook,
    decisive: true
  }
}

const measure = async (kind: string, recorder: DeliveryRecorderService) => {
  const token = crypto.randomUUID()
  const rows = await seed(BATCHES * SIZE, token)
  const cpu = process.cpuUsage()
  const started = performance.now()
  for (let b = 0; b < BATCHES; b++) {
    const batch = rows.slice(b * SIZE, (b + 1) * SIZE).map((row) => outcomeOf(row, token))
    const { kept } = await runtime.runPromise(recorder.record(batch, new Date().toISOString()))
    if (kept.size !== batch.length) throw new Error(`${kind}: ${kept.size} of ${batch.length} kept`)
  }
  const wall = performance.now() - started
  const used = process.cpuUsage(cpu)
  const cpuMs = (used.user + used.system) / 1000
  console.log(
    `${kind.padEnd(9)} ${BATCHES} batches of ${SIZE}: CPU ${(cpuMs / BATCHES).toFixed(3)} ms a batch ` +
      `(${((1000 * cpuMs) / (BATCHES * SIZE)).toFixed(1)} µs an outcome), wall ${(wall / BATCHES).toFixed(3)} ms a batch`
  )
}

console.log(`database: ${databaseUrl.split(":")[0]}`)
// Warm-up, unmeasured: both JIT-compiled before the first figure.
for (const recorder of recorders.values()) {
  const token = crypto.randomUUID()
  const rows = await seed(20 * SIZE, token)
  for (let b = 0; b < 20; b++) {
    await runtime.runPromise(
      recorder.record(
        rows.slice(b * SIZE, (b + 1) * SIZE).map((row) => outcomeOf(row, token)),
        new Date().toISOString()
      )
    )
  }
}
// A B, B A, …: which runs first may move its figure (it did in compare.sh), so each takes each place in turn.
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? [...recorders] : [...recorders].reverse()
  for (const [kind, recorder] of order) await measure(kind, recorder)
}
await runtime.dispose()
await removeLeftovers()
process.exit(0)
