/**
 * A webhook's `rate_limit` (docs/webhooks.md, "Rate limit"): settable on create and `PUT` (1 to 10,000, or null for
 * none), shown on the record and in the OpenAPI document; at most that many attempts to the endpoint start in any
 * one-second window, however it falls. The attempts' start times, as the service records them, over every
 * one-second window (less an allowance, `TRANSIT_ALLOWANCE_MS` in test/support/rate-window.ts); the receiver (a
 * process of its own, so its times are not this busy process's) shows that each arrived, once: on a loaded machine
 * its receipt times lag the starts unevenly (`startsOf` below). Deliveries beyond the limit wait: all delivered in
 * the end, none failed, one attempt each. Test events count too. In this process, on
 * the engine of `DATABASE_URL` (the suite runs on both); the same rule across two replicas is
 * test/e2e/replicas-rate-limit.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { eventually, stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { mostInOneSecond, type ReceiverProcess, receiptGaps, startReceiverProcess } from "../support/rate-window.ts"
import type { Server, TestUser } from "../support/server.ts"

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "300ms,300ms,300ms,300ms",
  WEBHOOK_TIMEOUT: "2s",
  WEBHOOK_CLAIM_TIMEOUT: "20s",
  WEBHOOK_POLL_INTERVAL: "200ms",
  RATE_LIMIT_PER_MINUTE: "100000"
}

/** Events no test here causes: for webhooks that only check the record. */
const QUIET = ["project.deleted"]

let server: Server
let receiver: ReceiverProcess
let ann: TestUser
let paths = 0

beforeAll(async () => {
  receiver = await startReceiverProcess()
  server = await startInProcess({ env: ENV })
  ann = await server.user({ name: "Ann" })
}, 60_000)
afterAll(async () => {
  await stopWithin(server)
  await receiver?.stop()
}, 30_000)

const call = (method: string, path: string, body?: unknown) =>
  server.request(`/v1${path}`, { method, key: ann.key, ...(body === undefined ? {} : { body }) })

const register = async (rateLimit: number | null | undefined, events = ["project.created"]) => {
  const path = `/limited-${++paths}`
  const res = await call("POST", "/webhooks", {
    url: receiver.url(path),
    events,
    ...(rateLimit === undefined ? {} : { rate_limit: rateLimit })
  })
  expect(res.status).toBe(201)
  return { id: res.body.data.id as string, path, record: res.body.data }
}

const receiptsOf = (path: string, count: number) =>
  eventually(() => (receiver.receipts(path).length >= count ? receiver.receipts(path) : undefined), {
    timeoutMs: 60_000,
    what: `${count} requests to ${path}`
  })

describe("rate_limit on the record", () => {
  test("set on create, shown on GET, changed and cleared by PUT; absent means none", async () => {
    const plain = await register(undefined, QUIET)
    expect(plain.record.rate_limit).toBeNull()

    const limited = await register(5, QUIET)
    expect(limited.record.rate_limit).toBe(5)
    expect((await call("GET", `/webhooks/${limited.id}`)).body.data.rate_limit).toBe(5)

    const raised = await call("PUT", `/webhooks/${limited.id}`, { rate_limit: 10_000 })
    expect(raised.status).toBe(200)
    expect(raised.body.data.rate_limit).toBe(10_000)

    const cleared = await call("PUT", `/webhooks/${limited.id}`, { rate_limit: null })
    expect(cleared.status).toBe(200)
    expect(cleared.body.data.rate_limit).toBeNull()
    expect((await call("GET", `/webhooks/${limited.id}`)).body.data.rate_limit).toBeNull()
    const listed = await call("GET", "/webhooks?per_page=100")
    const row = listed.body.data.find((hook: { id: string }) => hook.id === limited.id)
    expect(row.rate_limit).toBeNull()
  })

  // What the API answers for each (src/Http/ErrorTranslation.ts words a union's problems as "one of").
  const refused: ReadonlyArray<readonly [string, unknown, string]> = [
    ["0", 0, "must be one of: a number between 1 and 10000, null (got 0)"],
    ["10001", 10_001, "must be one of: a number between 1 and 10000, null (got 10001)"],
    ["1.5", 1.5, "must be one of: an integer, null (got 1.5)"],
    ['"x"', "x", 'must be one of: a number, null (got "x")'],
    ["-3", -3, "must be one of: a number between 1 and 10000, null (got -3)"],
    ["true", true, "must be one of: a number, null (got true)"]
  ]
  test.each(refused)(
    "rate_limit %s → 400 validation_failed on rate_limit, on create and on PUT",
    async (_, value, message) => {
      const created = await call("POST", "/webhooks", {
        url: receiver.url(`/refused-${++paths}`),
        events: ["project.created"],
        rate_limit: value
      })
      expect(created.status).toBe(400)
      expect(created.body.error.code).toBe("validation_failed")
      expect(created.body.error.details).toEqual([{ field: "rate_limit", message }])

      const hook = await register(3, QUIET)
      const updated = await call("PUT", `/webhooks/${hook.id}`, { rate_limit: value })
      expect(updated.status).toBe(400)
      expect(updated.body.error.details).toEqual([{ field: "rate_limit", message }])
      expect((await call("GET", `/webhooks/${hook.id}`)).body.data.rate_limit).toBe(3)
    }
  )

  test("the OpenAPI document declares it: an integer from 1 to 10000, or null", async () => {
    const doc = (await server.request("/v1/openapi.json")).body
    const json = JSON.stringify(doc.components.schemas.Webhook.properties.rate_limit)
    expect(json).toContain('"minimum":1')
    expect(json).toContain('"maximum":10000')
    expect(json).toContain("null")
    for (const body of ["CreateWebhook", "UpdateWebhook"]) {
      expect(JSON.stringify(doc.components.schemas[body])).toContain("rate_limit")
    }
  })
})

/**
 * The `count` deliveries of `hook`, once all are recorded as delivered, and when each one's last attempt started.
 * The limit bounds the attempts the service starts, so they are counted by when each started (`last_attempt_at`),
 * as the receipts are (windows short of a second by the same allowance, here for the time between the worker's turn
 * and its clock read). At the receiver a request now and then arrives later than the ones after it on a loaded
 * machine: CI saw two 5 ms apart, the first 215 ms late, and receipts 266 ms apart under a doubled suite, past the
 * allowance; the receipts still show that every attempt arrived.
 */
const startsOf = async (hook: { id: string; path: string }, count: number) => {
  const deliveries = await eventually(
    async () => {
      const res = await call("GET", `/webhooks/${hook.id}/deliveries?per_page=100`)
      const rows: ReadonlyArray<{ status: string; attempt_count: number; last_attempt_at: string }> = res.body.data
      return rows.length === count && rows.every((d) => d.status === "delivered") ? rows : undefined
    },
    { timeoutMs: 30_000, what: `the ${count} deliveries recorded as delivered` }
  )
  const starts = deliveries.map((delivery) => ({
    at: Date.parse(delivery.last_attempt_at),
    path: hook.path,
    eventId: null,
    eventType: null
  }))
  return { deliveries, starts }
}

describe("the limit, measured at the receiver", () => {
  test("limit 5, 30 events at once: no one-second window holds more than 5 starts; all 30 delivered, none failed, one attempt each", async () => {
    const limited = await register(5)
    const made = await Promise.all(
      Array.from({ length: 30 }, (_, i) => call("POST", "/projects", { name: `Burst ${paths}-${i}` }))
    )
    for (const res of made) expect(res.status).toBe(201)

    const received = await receiptsOf(limited.path, 30)
    // Every event once: what waited was not attempted meanwhile.
    expect(new Set(received.map((receipt) => receipt.eventId)).size).toBe(30)

    const { deliveries, starts } = await startsOf(limited, 30)
    for (const delivery of deliveries) expect(delivery.attempt_count).toBe(1)
    if (mostInOneSecond(starts) > 5) console.error(`starts, ms after the first: ${receiptGaps(starts)}`)
    expect(mostInOneSecond(starts)).toBeLessThanOrEqual(5)
    expect(receiver.receipts(limited.path).length).toBe(30)
    expect((await call("GET", `/webhooks/${limited.id}`)).body.data.status).toBe("active")
  }, 120_000)

  test("test events count: limit 2, 8 test events: no one-second window holds more than 2 starts, all 8 arrive", async () => {
    const hook = await register(2, QUIET)
    for (let i = 0; i < 8; i++) expect((await call("POST", `/webhooks/${hook.id}/test`, {})).status).toBe(202)
    const received = await receiptsOf(hook.path, 8)
    expect(received.every((receipt) => receipt.eventType === "webhook.test")).toBe(true)
    const { starts } = await startsOf(hook, 8)
    if (mostInOneSecond(starts) > 2) console.error(`starts, ms after the first: ${receiptGaps(starts)}`)
    expect(mostInOneSecond(starts)).toBeLessThanOrEqual(2)
  }, 120_000)
})
