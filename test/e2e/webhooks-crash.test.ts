/**
 * Crash safety of webhook delivery: nothing is lost when a process dies with attempts in flight (its claims
 * lapse and the next process takes them), a SIGTERM lets attempts in flight finish, and — on PostgreSQL — two
 * processes on one database never attempt the same delivery at the same time. Each of these on both delivery
 * recorders (the fast one and its idiomatic twin). What is killed or signalled is a process (`startServer`); the
 * server that takes over after a SIGKILL or from a SIGTERM's inbox only needs to be another server on the same
 * database, and runs in this process.
 */
import { afterEach, describe, expect, test } from "bun:test"
import { DELIVERY_RECORDERS, deliveryRecorderOf, eventually, stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.ts"
import { freshDatabaseUrl, type Server, startServer, type TestUser, usingPostgres } from "../support/server.ts"

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "300ms,300ms,300ms,300ms",
  WEBHOOK_TIMEOUT: "1s",
  WEBHOOK_CLAIM_TIMEOUT: "2s",
  WEBHOOK_POLL_INTERVAL: "100ms",
  SHUTDOWN_TIMEOUT: "2 seconds"
}

// Everything a test starts is stopped afterwards, whatever happened.
const servers: Array<Server> = []
const receivers: Array<Receiver> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => stopWithin(server)))
  await Promise.all(receivers.splice(0).map((receiver) => receiver.stop()))
}, 20_000)

const start = async (options: { readonly databaseUrl?: string; readonly env?: Record<string, string> } = {}) => {
  const server = await startServer({
    env: { ...ENV, ...options.env },
    ...(options.databaseUrl !== undefined ? { databaseUrl: options.databaseUrl } : {})
  })
  servers.push(server)
  return server
}

/** A server nothing kills or signals (a rule of the worker, or the one taking over): in this process. */
const startInside = async (options: { readonly databaseUrl?: string; readonly env?: Record<string, string> } = {}) => {
  const server = await startInProcess({
    env: { ...ENV, ...options.env },
    ...(options.databaseUrl !== undefined ? { databaseUrl: options.databaseUrl } : {})
  })
  servers.push(server)
  return server
}

const receive = (behaviour: Parameters<typeof startReceiver>[0] = {}) => {
  const receiver = startReceiver(behaviour)
  receivers.push(receiver)
  return receiver
}

const registerHook = async (server: Server, user: TestUser, url: string) => {
  const res = await server.request("/v1/webhooks", {
    method: "POST",
    key: user.key,
    body: { url, events: ["project.created"] }
  })
  expect(res.status).toBe(201)
  return res.body.data as { id: string; secret: string }
}

const createProjects = async (server: Server, user: TestUser, count: number, prefix: string) => {
  const created = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      server.request("/v1/projects", { method: "POST", key: user.key, body: { name: `${prefix} ${i}` } })
    )
  )
  for (const res of created) expect(res.status).toBe(201)
  return created.map((res) => res.body.data.id as string)
}

interface DeliveryRow {
  readonly id: string
  readonly event_id: string
  readonly status: string
  readonly attempt_count: number
}

/** Every delivery of a webhook (up to 100 per page, all pages). */
const allDeliveries = async (server: Server, user: TestUser, hookId: string): Promise<Array<DeliveryRow>> => {
  const rows: Array<DeliveryRow> = []
  for (let page = 1; ; page++) {
    const res = await server.request(`/v1/webhooks/${hookId}/deliveries?per_page=100&page=${page}`, { key: user.key })
    expect(res.status).toBe(200)
    rows.push(...res.body.data)
    if (rows.length >= res.body.meta.total || res.body.data.length === 0) return rows
  }
}

/** Waits until the webhook has `count` deliveries, all delivered. */
const allDelivered = (server: Server, user: TestUser, hookId: string, count: number, timeoutMs = 20_000) =>
  eventually(
    async () => {
      const rows = await allDeliveries(server, user, hookId)
      return rows.length === count && rows.every((row) => row.status === "delivered") ? rows : undefined
    },
    { timeoutMs, intervalMs: 200, what: `${count} deliveries of ${hookId} to be delivered` }
  )

const eventIdsOf = (receiver: Receiver, path?: string) =>
  new Set(receiver.requests(path).map((request) => request.headers["x-service-event-id"]!))

// What the recorder guarantees across crashes and processes (all or nothing, only claims still held), on each one.
describe.each(DELIVERY_RECORDERS)("with the %s delivery recorder", (kind, recorderEnv) => {
  describe("a process killed with attempts in flight", () => {
    test("loses nothing: the next process on the same database delivers every event once the claims lapse", async () => {
      const databaseUrl = await freshDatabaseUrl()
      // The receiver holds every request past the first process's life, and that process waits 4 s for an answer
      // (its claims last 5 s): what it sent before the kill is in flight, unanswered and unrecorded, however slow the
      // machine is between the first request and the kill (1 s was too short for a loaded CI machine).
      const env = { ...recorderEnv, WEBHOOK_TIMEOUT: "4s", WEBHOOK_CLAIM_TIMEOUT: "5s" }
      const receiver = receive({ default: { status: 200, delayMs: 8_000 } })
      const first = await start({ databaseUrl, env })
      expect(deliveryRecorderOf(first)).toBe(kind)
      const user = await first.user()
      const hook = await registerHook(first, user, receiver.url("/crash"))

      const projectIds = await createProjects(first, user, 20, "Crash")
      const [firstRequest] = await receiver.waitFor(1, { timeoutMs: 5_000 })
      await Bun.sleep(100)
      const inFlightAtKill = receiver.requests().length
      expect(inFlightAtKill).toBeGreaterThan(0)
      expect(await first.stop("SIGKILL")).not.toBe(0)
      const killedAt = Date.now()
      // None had timed out in the first process yet, so none can have been recorded.
      expect(killedAt - firstRequest!.receivedAt).toBeLessThan(4_000)

      // The receiver recovers; a new process starts on the same database.
      receiver.setDefault({ status: 200, body: "ok" })
      const second = await startInside({ databaseUrl, env: recorderEnv })
      const delivered = await allDelivered(second, user, hook.id, 20)

      // Every event arrived at least once; redeliveries carry the same delivery id, event id and signed bytes.
      const expectedEvents = new Set(delivered.map((row) => row.event_id))
      expect(expectedEvents.size).toBe(20)
      const received = eventIdsOf(receiver)
      for (const eventId of expectedEvents) expect(received.has(eventId)).toBe(true)
      const projectsReceived = new Set(receiver.requests().map((request) => JSON.parse(request.body).data.id as string))
      for (const projectId of projectIds) expect(projectsReceived.has(projectId)).toBe(true)
      const byDelivery = new Map<string, Array<ReceivedRequest>>()
      for (const request of receiver.requests()) {
        const id = request.headers["x-service-delivery"]!
        byDelivery.set(id, [...(byDelivery.get(id) ?? []), request])
      }
      expect(new Set(byDelivery.keys())).toEqual(new Set(delivered.map((row) => row.id)))
      for (const [, requests] of byDelivery) {
        expect(new Set(requests.map((request) => request.body)).size).toBe(1)
        expect(new Set(requests.map((request) => request.headers["x-service-signature"])).size).toBe(1)
        expect(new Set(requests.map((request) => request.headers["x-service-event-id"])).size).toBe(1)
      }
      // An attempt cut off by the kill was never recorded: each delivery shows exactly the attempts that were.
      for (const row of delivered) {
        const detail = await second.request(`/v1/webhooks/${hook.id}/deliveries/${row.id}`, { key: user.key })
        const attempts = detail.body.data.attempts as Array<{ number: number; outcome: string }>
        expect(attempts.length).toBe(row.attempt_count)
        expect(attempts.map((a) => a.number)).toEqual(attempts.map((_, i) => i + 1))
        expect(attempts.at(-1)!.outcome).toBe("succeeded")
      }
      // The deliveries cut off by the kill were attempted again, by the new process, only once their claim
      // (WEBHOOK_CLAIM_TIMEOUT = 5 s here) had lapsed: claimed when the event was written (handed straight to the
      // worker) or later (claimed from the table), so not before the event's created_at + 5 s.
      let retaken = 0
      for (const [, requests] of byDelivery) {
        const before = requests.filter((request) => request.receivedAt <= killedAt)
        const after = requests.filter((request) => request.receivedAt > killedAt)
        if (before.length === 0) continue
        expect(after.length).toBeGreaterThanOrEqual(1)
        const createdAt = Date.parse(JSON.parse(before[0]!.body).created_at)
        expect(after[0]!.receivedAt - createdAt).toBeGreaterThanOrEqual(4_990)
        retaken++
      }
      expect(retaken).toBeGreaterThanOrEqual(inFlightAtKill)
    }, 60_000)
  })

  describe("a process stopped with SIGTERM with attempts in flight", () => {
    test("exits within the delivery time-out plus a margin, after recording the attempts it had in flight", async () => {
      const databaseUrl = await freshDatabaseUrl()
      // The attempts take 600 ms; the process waits 4 s for an answer (its claims last 5 s), so none times out and
      // is retried on a loaded machine (with 1 s, CI saw 32 requests for 30 deliveries).
      const env = { ...recorderEnv, WEBHOOK_TIMEOUT: "4s", WEBHOOK_CLAIM_TIMEOUT: "5s" }
      const receiver = receive({ default: { status: 200, delayMs: 600 } })
      const first = await start({ databaseUrl, env })
      expect(deliveryRecorderOf(first)).toBe(kind)
      const user = await first.user()
      const hook = await registerHook(first, user, receiver.url("/term"))
      // Enough attempts finishing together that their outcomes are recorded as a batch while the process stops.
      await createProjects(first, user, 30, "Term")
      await receiver.waitFor(30, { timeoutMs: 5_000 })

      const signalled = performance.now()
      const exitedCleanly = await stopWithin(first, 12_000)
      const took = performance.now() - signalled
      expect(exitedCleanly).toBe(true)
      expect(took).toBeLessThan(8_000) // WEBHOOK_TIMEOUT 4s + 1s, SHUTDOWN_TIMEOUT 2s, plus slack
      expect(first.process.exitCode).toBe(0)

      // The attempts that were in flight finished and were recorded: nothing is sent twice.
      receiver.setDefault({ status: 200 })
      const second = await start({ databaseUrl, env: recorderEnv })
      const delivered = await allDelivered(second, user, hook.id, 30)
      await Bun.sleep(5_500) // longer than the first process's claims: a lapsed, unrecorded claim would be retried now
      expect(receiver.requests()).toHaveLength(30)
      for (const row of delivered) expect(row.attempt_count).toBe(1)
    }, 60_000)
  })

  describe("two processes on one PostgreSQL database", () => {
    test.skipIf(!usingPostgres())(
      "never attempt the same delivery at the same time, and deliver every event exactly once",
      async () => {
        const databaseUrl = await freshDatabaseUrl()
        const receiver = receive({ default: { status: 200, delayMs: 50 } })
        // Exactly once needs every attempt answered and recorded well within its time-out and its claim: 5 s and
        // 15 s, for a loaded machine (with 1 s and 5 s, a run at load 13 saw 59 requests for 50 deliveries).
        const env = {
          WEBHOOK_POLL_INTERVAL: "20ms",
          WEBHOOK_CONCURRENCY: "8",
          WEBHOOK_TIMEOUT: "5s",
          WEBHOOK_CLAIM_TIMEOUT: "15s",
          ...recorderEnv
        }
        const a = await start({ databaseUrl, env })
        const b = await start({ databaseUrl, env })
        expect([deliveryRecorderOf(a), deliveryRecorderOf(b)]).toEqual([kind, kind])
        const [ann, bob] = await Promise.all([a.user({ name: "Ann" }), a.user({ name: "Bob" })])
        // Two webhooks each: every project fans out to two deliveries.
        const hooks = {
          ann: [await registerHook(a, ann, receiver.url("/ann-1")), await registerHook(b, ann, receiver.url("/ann-2"))],
          bob: [await registerHook(b, bob, receiver.url("/bob-1")), await registerHook(a, bob, receiver.url("/bob-2"))]
        }
        // 100 projects, through both processes at once.
        const created = await Promise.all([
          createProjects(a, ann, 25, "A-ann"),
          createProjects(b, ann, 25, "B-ann"),
          createProjects(a, bob, 25, "A-bob"),
          createProjects(b, bob, 25, "B-bob")
        ])
        expect(created.flat()).toHaveLength(100)

        const rows = {
          ann: await Promise.all(hooks.ann.map((hook) => allDelivered(a, ann, hook.id, 50, 30_000))),
          bob: await Promise.all(hooks.bob.map((hook) => allDelivered(b, bob, hook.id, 50, 30_000)))
        }
        const deliveryIds = [...rows.ann.flat(), ...rows.bob.flat()].map((row) => row.id)
        expect(new Set(deliveryIds).size).toBe(200)

        // No delivery was ever in flight twice at once.
        expect([...receiver.overlapping]).toEqual([])
        expect(Math.max(...receiver.maxInFlightByDelivery.values())).toBe(1)
        // Every event arrived, at every webhook, exactly once.
        for (const [path, eventIds] of [
          ["/ann-1", rows.ann[0]!],
          ["/ann-2", rows.ann[1]!],
          ["/bob-1", rows.bob[0]!],
          ["/bob-2", rows.bob[1]!]
        ] as const) {
          const expected = new Set(eventIds.map((row) => row.event_id))
          expect(expected.size).toBe(50)
          expect(eventIdsOf(receiver, path)).toEqual(expected)
          expect(receiver.requests(path)).toHaveLength(50)
        }
        for (const row of [...rows.ann.flat(), ...rows.bob.flat()]) expect(row.attempt_count).toBe(1)
        const projectNames = new Set(receiver.requests().map((request) => JSON.parse(request.body).data.name as string))
        expect(projectNames.size).toBe(100)
      },
      60_000
    )
  })
})

describe("WEBHOOK_CONCURRENCY", () => {
  test("caps the attempts one process has in flight", async () => {
    const receiver = receive({ default: { status: 200, delayMs: 250 } })
    // Time-outs far above the receiver's 250 ms: on a loaded machine an attempt that ran past the file's 1 s would be
    // retried, and sent twice; the cap, not the time-out, is this test's subject.
    const server = await startInside({
      env: { WEBHOOK_CONCURRENCY: "3", WEBHOOK_TIMEOUT: "10s", WEBHOOK_CLAIM_TIMEOUT: "20s" }
    })
    const user = await server.user()
    const hook = await registerHook(server, user, receiver.url("/capped"))
    await createProjects(server, user, 12, "Capped")
    await allDelivered(server, user, hook.id, 12)
    expect(receiver.requests()).toHaveLength(12)
    expect(receiver.load.maxInFlight).toBe(3)
  }, 60_000)
})

describe("the worker's inbox (deliveries handed over by the committing transaction)", () => {
  test("a SIGTERM gives back the claims of deliveries not yet started: the next process sends them at once", async () => {
    const databaseUrl = await freshDatabaseUrl()
    // A long lease: were the claims not given back, the next process could not take them for 30 s.
    const env = { WEBHOOK_CONCURRENCY: "2", WEBHOOK_CLAIM_TIMEOUT: "30s" }
    const receiver = receive({ default: { status: 200, delayMs: 500 } })
    const first = await start({ databaseUrl, env })
    const user = await first.user()
    const hook = await registerHook(first, user, receiver.url("/inbox"))
    await createProjects(first, user, 20, "Inbox")
    await receiver.waitFor(1, { timeoutMs: 5_000 })
    expect(await stopWithin(first, 8_000)).toBe(true)
    const sentByFirst = receiver.requests().length
    expect(sentByFirst).toBeLessThan(20)

    receiver.setDefault({ status: 200 })
    const second = await startInside({ databaseUrl, env })
    const delivered = await allDelivered(second, user, hook.id, 20, 15_000)
    // Each once: those the first process attempted were recorded, the rest were sent by the second.
    expect(receiver.requests()).toHaveLength(20)
    expect(new Set(receiver.requests().map((request) => request.headers["x-service-delivery"])).size).toBe(20)
    for (const row of delivered) expect(row.attempt_count).toBe(1)
  }, 60_000)

  test("more new deliveries than the inbox holds: the rest wait unclaimed and are claimed as room opens", async () => {
    // WEBHOOK_CONCURRENCY 1 with a lease of two time-outs: the inbox holds one delivery.
    const receiver = receive({ default: { status: 200, delayMs: 50 } })
    const server = await startInside({ env: { WEBHOOK_CONCURRENCY: "1" } })
    const user = await server.user()
    const hook = await registerHook(server, user, receiver.url("/overflow"))
    await createProjects(server, user, 12, "Overflow")
    const delivered = await allDelivered(server, user, hook.id, 12)
    expect(receiver.requests()).toHaveLength(12)
    expect(new Set(receiver.requests().map((request) => request.headers["x-service-delivery"])).size).toBe(12)
    expect(receiver.load.maxInFlight).toBe(1)
    for (const row of delivered) expect(row.attempt_count).toBe(1)
  }, 60_000)
})
