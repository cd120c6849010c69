/**
 * Manual retries stand outside the schedule (docs/webhooks.md): a retry (`…/retry`, `recover`, the dashboard's
 * Redeliver) is one extra attempt, listed with `trigger: "manual"`, not counted in `attempt_count`, and it does not
 * move the next scheduled attempt. Its success ends the delivery and makes a failed webhook active; its failure
 * changes neither the delivery's status nor its schedule. A delivered delivery can be redelivered.
 *
 * The schedule is shortened: the first wait is long enough for manual retries to be made while it runs, the others
 * short. Both delivery recorders, each on its own server. Most of each test is waiting for the schedule, so they run
 * concurrently (`describe.concurrent`): each with a user of its own (no other test's projects reach its webhook) and a
 * receiver path of its own.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { DELIVERY_RECORDERS, eventually, stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server } from "../support/server.ts"

/** Longer than four manual attempts take, on a loaded machine too (6 s was not, with the suite run twice over). */
const FIRST_WAIT_MS = 12_000
const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: `${FIRST_WAIT_MS}ms,100ms,100ms,100ms`,
  WEBHOOK_TIMEOUT: "1s",
  WEBHOOK_CLAIM_TIMEOUT: "3s",
  WEBHOOK_POLL_INTERVAL: "100ms"
}

interface Attempt {
  readonly number: number
  readonly trigger: string
  readonly outcome: string
  readonly status_code: number | null
}
interface DeliveryView {
  readonly id: string
  readonly status: string
  readonly attempt_count: number
  readonly next_attempt_at: string | null
  readonly attempts: ReadonlyArray<Attempt>
}

let receiver: Receiver
const servers = new Map<string, Server>()
let paths = 0

beforeAll(async () => {
  receiver = startReceiver()
  await Promise.all(
    DELIVERY_RECORDERS.map(async ([kind, env]) => {
      servers.set(kind, await startInProcess({ env: { ...ENV, ...env } }))
    })
  )
}, 60_000)
afterAll(async () => {
  await Promise.all([...servers.values()].map((server) => stopWithin(server)))
  await receiver?.stop()
}, 20_000)

describe.concurrent.each(DELIVERY_RECORDERS.map(([kind]) => kind))("manual retries, %s delivery recorder", (kind) => {
  /**
   * A test's own user (no other test's projects reach their webhook) with a webhook on a fresh receiver path, and
   * the calls the test makes as them.
   */
  const ownHook = async () => {
    const server = servers.get(kind)!
    const ann = await server.user({ name: "Ann" })
    const call = (method: string, path: string, body?: unknown) =>
      server.request(`/v1${path}`, { method, key: ann.key, ...(body === undefined ? {} : { body }) })
    const path = `/manual-${kind}-${++paths}`
    const hook = await call("POST", "/webhooks", { url: receiver.url(path), events: ["project.created"] })
    expect(hook.status).toBe(201)
    const hookId: string = hook.body.data.id

    /** A project whose creation the webhook receives. */
    const createProject = async (name: string) => expect((await call("POST", "/projects", { name })).status).toBe(201)
    const delivery = async (id: string): Promise<DeliveryView> => {
      const res = await call("GET", `/webhooks/${hookId}/deliveries/${id}`)
      expect(res.status).toBe(200)
      return res.body.data
    }
    const deliveryWhen = (id: string, until: (d: DeliveryView) => boolean, what: string) =>
      eventually(
        async () => {
          const d = await delivery(id)
          return until(d) ? d : undefined
        },
        { what, timeoutMs: FIRST_WAIT_MS + 15_000 }
      )
    const webhookStatus = async () => (await call("GET", `/webhooks/${hookId}`)).body.data.status
    /** Asks for a manual retry (202) and waits for the attempt it makes, numbered `number`. */
    const retryAndWait = async (id: string, number: number) => {
      const res = await call("POST", `/webhooks/${hookId}/deliveries/${id}/retry`)
      expect(res.status).toBe(202)
      expect(res.body.data.id).toBe(id)
      return deliveryWhen(id, (d) => d.attempts.length >= number, `attempt ${number} of ${id}`)
    }
    return { hookId, path, call, createProject, delivery, deliveryWhen, webhookStatus, retryAndWait }
  }

  test("on a retrying delivery: four failed Redelivers are extra attempts; the schedule, the count and the status stay; a fifth that succeeds delivers it", async () => {
    const { path, createProject, delivery, deliveryWhen, webhookStatus, retryAndWait } = await ownHook()
    receiver.setDefault({ status: 500, body: "down" }, path)
    await createProject("Retrying")
    const [first] = await receiver.waitFor(1, { path })
    const id = first!.headers["x-service-delivery"]!
    const retrying = await deliveryWhen(id, (d) => d.attempt_count === 1, "the first scheduled failure")
    expect(retrying.status).toBe("pending")
    const scheduledAt = retrying.next_attempt_at
    expect(scheduledAt).not.toBeNull()

    for (let n = 2; n <= 5; n++) {
      const after = await retryAndWait(id, n)
      expect(after.attempts[n - 1]).toMatchObject({ number: n, trigger: "manual", outcome: "failed", status_code: 500 })
      // Not counted, and the next scheduled attempt has not moved.
      expect(after).toMatchObject({ status: "pending", attempt_count: 1, next_attempt_at: scheduledAt })
    }
    expect(await webhookStatus()).toBe("active")
    const beforeSuccess = await delivery(id)
    // The scheduled attempt had not come yet (its wait is longer than the manual attempts took).
    expect(beforeSuccess.attempts.map((a) => a.trigger)).toEqual(["schedule", "manual", "manual", "manual", "manual"])

    receiver.setDefault({ status: 200, body: "back" }, path)
    const delivered = await retryAndWait(id, 6)
    expect(delivered.attempts[5]).toMatchObject({ number: 6, trigger: "manual", outcome: "succeeded" })
    expect(delivered).toMatchObject({ status: "delivered", attempt_count: 1, next_attempt_at: null })
    // The scheduled attempt that was due never comes.
    const wait = Date.parse(scheduledAt!) - Date.now() + 500
    await Bun.sleep(Math.max(0, wait))
    expect(receiver.requests(path)).toHaveLength(6)
    expect((await delivery(id)).attempts).toHaveLength(6)
  }, 60_000)

  test("a failed manual attempt does not delay the schedule: the scheduled attempts still come, five of them, then the delivery and the webhook fail", async () => {
    const { path, createProject, deliveryWhen, webhookStatus, retryAndWait } = await ownHook()
    receiver.setDefault({ status: 503 }, path)
    await createProject("Failing anyway")
    const [first] = await receiver.waitFor(1, { path })
    const id = first!.headers["x-service-delivery"]!
    await deliveryWhen(id, (d) => d.attempt_count === 1, "the first scheduled failure")
    await retryAndWait(id, 2)
    const failed = await deliveryWhen(id, (d) => d.status === "failed", "the delivery to fail")
    expect(failed.attempt_count).toBe(5)
    expect(failed.attempts.map((a) => a.trigger)).toEqual([
      "schedule",
      "manual",
      "schedule",
      "schedule",
      "schedule",
      "schedule"
    ])
    expect(failed.attempts.map((a) => a.number)).toEqual([1, 2, 3, 4, 5, 6])
    expect(await webhookStatus()).toBe("failed")

    // On the failed delivery: a failed manual attempt leaves it (and the webhook) failed, with nothing scheduled.
    const still = await retryAndWait(id, 7)
    expect(still).toMatchObject({ status: "failed", attempt_count: 5, next_attempt_at: null })
    expect(still.attempts[6]).toMatchObject({ number: 7, trigger: "manual", outcome: "failed" })
    expect(await webhookStatus()).toBe("failed")

    // One that succeeds delivers it and makes the webhook active.
    receiver.setDefault({ status: 204 }, path)
    const delivered = await retryAndWait(id, 8)
    expect(delivered).toMatchObject({ status: "delivered", attempt_count: 5, next_attempt_at: null })
    expect(delivered.attempts[7]).toMatchObject({ number: 8, trigger: "manual", outcome: "succeeded" })
    expect(await webhookStatus()).toBe("active")
    await Bun.sleep(500)
    expect(receiver.requests(path)).toHaveLength(8)
  }, 60_000)

  test("a delivered delivery can be redelivered; a failed redelivery leaves it delivered and the webhook active", async () => {
    const { path, createProject, deliveryWhen, webhookStatus, retryAndWait } = await ownHook()
    await createProject("Delivered")
    const [first] = await receiver.waitFor(1, { path })
    const id = first!.headers["x-service-delivery"]!
    await deliveryWhen(id, (d) => d.status === "delivered", "the delivery")

    receiver.enqueue(path, { status: 500, body: "oops" })
    const failedRedelivery = await retryAndWait(id, 2)
    expect(failedRedelivery).toMatchObject({ status: "delivered", attempt_count: 1, next_attempt_at: null })
    expect(failedRedelivery.attempts[1]).toMatchObject({ number: 2, trigger: "manual", outcome: "failed" })
    expect(await webhookStatus()).toBe("active")

    const redelivered = await retryAndWait(id, 3)
    expect(redelivered.attempts[2]).toMatchObject({ number: 3, trigger: "manual", outcome: "succeeded" })
    expect(redelivered).toMatchObject({ status: "delivered", attempt_count: 1 })
    const requests = receiver.requests(path)
    expect(requests).toHaveLength(3)
    // The same delivery and the same bytes every time.
    expect(new Set(requests.map((r) => r.headers["x-service-delivery"]))).toEqual(new Set([id]))
    expect(new Set(requests.map((r) => r.body)).size).toBe(1)
  }, 30_000)

  test("recover: one manual attempt for each failed delivery, not counted; asked again, nothing more", async () => {
    const { hookId, path, call, createProject, deliveryWhen, webhookStatus } = await ownHook()
    // The receiver refuses until the schedule runs out.
    receiver.setDefault({ status: 503 }, path)
    await createProject("Recover me")
    const [first] = await receiver.waitFor(1, { path })
    const id = first!.headers["x-service-delivery"]!
    const failed = await deliveryWhen(id, (d) => d.status === "failed", "the delivery to fail")
    expect(failed.attempts).toHaveLength(5)

    receiver.setDefault({ status: 200 }, path)
    const since = new Date(Date.now() - 3600_000).toISOString()
    const res = await call("POST", `/webhooks/${hookId}/recover`, { since })
    expect(res.status).toBe(202)
    expect(res.body.data).toEqual({ queued: 1 })
    // Asked for already (or made since, and delivered): not queued again.
    expect((await call("POST", `/webhooks/${hookId}/recover`, { since })).body.data).toEqual({ queued: 0 })
    const done = await deliveryWhen(id, (d) => d.status === "delivered", "the recovered delivery")
    expect(done.attempt_count).toBe(5)
    expect(done.attempts.map((a) => a.trigger)).toEqual([
      "schedule",
      "schedule",
      "schedule",
      "schedule",
      "schedule",
      "manual"
    ])
    expect(await webhookStatus()).toBe("active")
    expect((await call("POST", `/webhooks/${hookId}/recover`, { since })).body.data).toEqual({ queued: 0 })
    expect(receiver.requests(path)).toHaveLength(6)
  }, 60_000)
})
