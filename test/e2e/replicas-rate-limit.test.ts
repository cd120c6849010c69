/**
 * A webhook's `rate_limit` held across replicas (docs/webhooks.md, "Rate limit"): two server processes on one
 * PostgreSQL database, events made through both at once so both claim and attempt the webhook's deliveries. The
 * pace lives in the database, so together they start no more than the limit in any one-second window, as the
 * receiver (a process of its own) counts it (less `TRANSIT_ALLOWANCE_MS`, test/support/rate-window.ts); a pace kept
 * by each process alone would let twice the limit through.
 * Every event arrives once and none fails. Only on PostgreSQL: SQLite is one process's file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { eventually, stopWithin } from "../support/helpers.ts"
import { mostInOneSecond, type ReceiverProcess, receiptGaps, startReceiverProcess } from "../support/rate-window.ts"
import {
  migratedDatabaseUrl,
  type ServerProcess,
  startServer,
  type TestUser,
  usingPostgres
} from "../support/server.ts"

const POSTGRES = usingPostgres()
if (!POSTGRES) console.warn("replicas-rate-limit.test.ts: skipped: DATABASE_URL is not a postgres:// URL")

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "300ms,300ms,300ms,300ms",
  WEBHOOK_TIMEOUT: "2s",
  WEBHOOK_CLAIM_TIMEOUT: "20s",
  WEBHOOK_POLL_INTERVAL: "200ms",
  RATE_LIMIT_PER_MINUTE: "100000"
}
const LIMIT = 4
const EVENTS = 32

let replicas: Array<ServerProcess> = []
let receiver: ReceiverProcess
const at = (i: number): ServerProcess => replicas[i % replicas.length]!

describe.skipIf(!POSTGRES)("rate_limit across two replicas on one PostgreSQL", () => {
  beforeAll(async () => {
    receiver = await startReceiverProcess()
    const databaseUrl = await migratedDatabaseUrl()
    // One after the other: each start-up gets the machine to itself.
    replicas = [await startServer({ databaseUrl, env: ENV }), await startServer({ databaseUrl, env: ENV })]
  }, 90_000)

  afterAll(async () => {
    for (const server of replicas) {
      if (server.process.exitCode !== null) console.error(`a replica exited:\n${server.logs.join("\n")}`)
    }
    await Promise.all(replicas.map((server) => stopWithin(server)))
    await receiver?.stop()
  }, 30_000)

  test(`limit ${LIMIT}, ${EVENTS} events made through both replicas at once: no one-second window at the receiver holds more than ${LIMIT}; every event arrives once, none failed`, async () => {
    const user: TestUser = await at(0).user()
    const hook = await at(0).request("/v1/webhooks", {
      method: "POST",
      key: user.key,
      body: { url: receiver.url("/shared"), events: ["project.created"], rate_limit: LIMIT }
    })
    expect(hook.status).toBe(201)
    expect(hook.body.data.rate_limit).toBe(LIMIT)
    const id: string = hook.body.data.id

    const made = await Promise.all(
      Array.from({ length: EVENTS }, (_, i) =>
        at(i).request("/v1/projects", { method: "POST", key: user.key, body: { name: `Shared ${i}` } })
      )
    )
    for (const res of made) expect(res.status).toBe(201)

    const received = await eventually(
      () => (receiver.receipts("/shared").length >= EVENTS ? receiver.receipts("/shared") : undefined),
      { timeoutMs: 90_000, what: `${EVENTS} requests at the receiver` }
    )
    if (mostInOneSecond(received) > LIMIT) console.error(`receipts, ms after the first: ${receiptGaps(received)}`)
    expect(mostInOneSecond(received)).toBeLessThanOrEqual(LIMIT)
    expect(new Set(received.map((receipt) => receipt.eventId)).size).toBe(EVENTS)

    const deliveries = await eventually(
      async () => {
        const res = await at(1).request(`/v1/webhooks/${id}/deliveries?per_page=100`, { key: user.key })
        const rows: ReadonlyArray<{ status: string; attempt_count: number }> = res.body.data
        return rows.length === EVENTS && rows.every((d) => d.status === "delivered") ? rows : undefined
      },
      { timeoutMs: 30_000, what: "every delivery recorded as delivered" }
    )
    for (const delivery of deliveries) expect(delivery.attempt_count).toBe(1)
    expect(receiver.receipts("/shared").length).toBe(EVENTS)
  }, 150_000)
})
