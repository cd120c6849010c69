/**
 * Manual retries stand outside the schedule (docs/webhooks.md): a retry (`…/retry`, `recover`, the dashboard's
 * Redeliver) is one extra attempt, listed with `trigger: "manual"`, not counted in `attempt_count`, and it does not
 * move the next scheduled attempt. Its success ends the delivery and makes a failed webhook active; its failure
 * changes neither the delivery's status nor its schedule. A delivered delivery can be redelivered.
 *
 * The schedule is shortened: the first wait is long enough for manual retries to be made while it runs, the others
 * short. Both delivery recorders, each on its own server.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { DELIVERY_RECORDERS, eventually, stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"

const FIRST_WAIT_MS = 6_000
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
const servers = new Map<string, { readonly server: Server; readonly ann: TestUser }>()
let paths = 0

beforeAll(async () => {
  receiver = startReceiver()
  await Promise.all(
    DELIVERY_RECORDERS.map(async ([kind, env]) => {
      const server = await startInProcess({ env: { ...ENV, ...env } })
      servers.set(kind, { server, ann: await server.user({ name: "Ann" }) })
    })
  )
}, 60_000)
afterAll(async () => {
  await Promise.all([...servers.values()].map(({ server }) => stopWithin(server)))
  await receiver?.stop()
}, 20_000)

describe.each(DELIVERY_RECORDERS.map(([kind]) => kind))("manual retries, %s delivery recorder", (kind) => {
  const on = () => servers.get(kind)!
  const call = (method: string, path: string, body?: unknown) =>
    on().server.request(`/v1${path}`, { method, key: on().ann.key, ...(body === undefined ? {} : { body }) })

  /** A webhook on a fresh receiver path, and a project whose creation it receives. */
  const hookWithDelivery = async () => {
    const path = `/manual-${kind}-${++paths}`
    const hook = await call("POST", "/webhooks", { url: receiver.url(path), events: ["project.created"] })
    expect(hook.status).toBe(201)
    return { hookId: hook.body.data.id as string, path }
  }
  const createProject = async (name: string) => expect((await call("POST", "/projects", { name })).status).toBe(201)
  const delivery = async (hookId: string, id: string): Promise<DeliveryView> => {
    const res = await call("GET", `/webhooks/${hookId}/deliveries/${id}`)
    expect(res.status).toBe(200)
    return res.body.data
  }
  const deliveryWhen = (hookId: string, id: string, until: (d: DeliveryView) => boolean, what: string) =>
    eventually(
      async () => {
        const d = await delivery(hookId, id)
        return until(d) ? d : undefined
      },
      { what, timeoutMs: 15_000 }
    )
  const webhookStatus = async (hookId: string) => (await call("GET", `/webhooks/${hookId}`)).body.data.status
  /** Asks for a manual retry (202) and waits for the attempt it makes, numbered `number`. */
  const retryAndWait = async (hookId: string, id: string, number: number) => {
    const res = await call("POST", `/webhooks/${hookId}/deliveries/${id}/retry`)
    expect(res.status).toBe(202)
    expect(res.body.data.id).toBe(id)
    return deliveryWhen(hookId, id, (d) => d.attempts.length >= number, `attempt ${number} of ${id}`)
  }

  test("on a retrying delivery: four failed Redelivers are extra attempts; the schedule, the count and the status stay; a fifth that succeeds delivers it", async () => {
    const { hookId, path } = await hookWithDelivery()
    receiver.setDefault({ status: 500, body: "down" }, path)
    await createProject("Retrying")
    const [first] = await receiver.waitFor(1, { path })
    const id = first!.headers["x-service-delivery"]!
    const retrying = await deliveryWhen(hookId, id, (d) => d.attempt_count === 1, "the first scheduled failure")
    expect(retrying.status).toBe("pending")
    const scheduledAt = retrying.next_attempt_at
    expect(scheduledAt).not.toBeNull()

    for (let n = 2; n <= 5; n++) {
      const after = await retryAndWait(hookId, id, n)
      expect(after.attempts[n - 1]).toMatchObject({ number: n, trigger: "manual", outcome: "failed", status_code: 500 })
      // Not counted, and the next scheduled attempt has not moved.
      expect(after).toMatchObject({ status: "pending", attempt_count: 1, next_attempt_at: scheduledAt })
    }
    expect(await webhookStatus(hookId)).toBe("active")
    const beforeSuccess = await delivery(hookId, id)
    // The scheduled attempt had not come yet (its wait is longer than the manual attempts took).
    expect(beforeSuccess.attempts.map((a) => a.trigger)).toEqual(["schedule", "manual", "manual", "manual", "manual"])

    receiver.setDefault({ status: 200, body: "back" }, path)
    const delivered = await retryAndWait(hookId, id, 6)
    expect(delivered.attempts[5]).toMatchObject({ number: 6, trigger: "manual", outcome: "succeeded" })
    expect(delivered).toMatchObject({ status: "delivered", attempt_count: 1, next_attempt_at: null })
    // The scheduled attempt that was due never comes.
    const wait = Date.parse(scheduledAt!) - Date.now() + 500
    await Bun.sleep(Math.max(0, wait))
    expect(receiver.requests(path)).toHaveLength(6)
    expect((await delivery(hookId, id)).attempts).toHaveLength(6)
  }, 40_000)

  test("a failed manual attempt does not delay the schedule: the scheduled attempts still come, five of them, then the delivery and the webhook fail", async () => {
    const { hookId, path } = await hookWithDelivery()
    receiver.setDefault({ status: 503 }, path)
    await createProject("Failing anyway")
    const [first] = await receiver.waitFor(1, { path })
    const id = first!.headers["x-service-delivery"]!
    await deliveryWhen(hookId, id, (d) => d.attempt_count === 1, "the first scheduled failure")
    await retryAndWait(hookId, id, 2)
    const failed = await deliveryWhen(hookId, id, (d) => d.status === "failed", "the delivery to fail")
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
    expect(await webhookStatus(hookId)).toBe("failed")

    // On the failed delivery: a failed manual attempt leaves it (and the webhook) failed, with nothing scheduled.
    const still = await retryAndWait(hookId, id, 7)
    expect(still).toMatchObject({ status: "failed", attempt_count: 5, next_attempt_at: null })
    expect(still.attempts[6]).toMatchObject({ number: 7, trigger: "manual", outcome: "failed" })
    expect(await webhookStatus(hookId)).toBe("failed")

    // One that succeeds delivers it and makes the webhook active.
    receiver.setDefault({ status: 204 }, path)
    const delivered = await retryAndWait(hookId, id, 8)
    expect(delivered).toMatchObject({ status: "delivered", attempt_count: 5, next_attempt_at: null })
    expect(delivered.attempts[7]).toMatchObject({ number: 8, trigger: "manual", outcome: "succeeded" })
    expect(await webhookStatus(hookId)).toBe("active")
    await Bun.sleep(500)
    expect(receiver.requests(path)).toHaveLength(8)
  }, 40_000)

  test("a delivered delivery can be redelivered; a failed redelivery leaves it delivered and the webhook active", async () => {
    const { hookId, path } = await hookWithDelivery()
    await createProject("Delivered")
    const [first] = await receiver.waitFor(1, { path })
    const id = first!.headers["x-service-delivery"]!
    await deliveryWhen(hookId, id, (d) => d.status === "delivered", "the delivery")

    receiver.enqueue(path, { status: 500, body: "oops" })
    const failedRedelivery = await retryAndWait(hookId, id, 2)
    expect(failedRedelivery).toMatchObject({ status: "delivered", attempt_count: 1, next_attempt_at: null })
    expect(failedRedelivery.attempts[1]).toMatchObject({ number: 2, trigger: "manual", outcome: "failed" })
    expect(await webhookStatus(hookId)).toBe("active")

    const redelivered = await retryAndWait(hookId, id, 3)
    expect(redelivered.attempts[2]).toMatchObject({ number: 3, trigger: "manual", outcome: "succeeded" })
    expect(redelivered).toMatchObject({ status: "delivered", attempt_count: 1 })
    const requests = receiver.requests(path)
    expect(requests).toHaveLength(3)
    // The same delivery and the same bytes every time.
    expect(new Set(requests.map((r) => r.headers["x-service-delivery"]))).toEqual(new Set([id]))
    expect(new Set(requests.map((r) => r.body)).size).toBe(1)
  }, 30_000)

  test("recover: one manual attempt for each failed delivery, not counted; asked again, nothing more", async () => {
    const { hookId, path } = await hookWithDelivery()
    // The receiver refuses until the schedule runs out.
    receiver.setDefault({ status: 503 }, path)
    await createProject("Recover me")
    const [first] = await receiver.waitFor(1, { path })
    const id = first!.headers["x-service-delivery"]!
    const failed = await deliveryWhen(hookId, id, (d) => d.status === "failed", "the delivery to fail")
    expect(failed.attempts).toHaveLength(5)

    receiver.setDefault({ status: 200 }, path)
    const since = new Date(Date.now() - 3600_000).toISOString()
    const res = await call("POST", `/webhooks/${hookId}/recover`, { since })
    expect(res.status).toBe(202)
    expect(res.body.data).toEqual({ queued: 1 })
    // Asked for already (or made since, and delivered): not queued again.
    expect((await call("POST", `/webhooks/${hookId}/recover`, { since })).body.data).toEqual({ queued: 0 })
    const done = await deliveryWhen(hookId, id, (d) => d.status === "delivered", "the recovered delivery")
    expect(done.attempt_count).toBe(5)
    expect(done.attempts.map((a) => a.trigger)).toEqual([
      "schedule",
      "schedule",
      "schedule",
      "schedule",
      "schedule",
      "manual"
    ])
    expect(await webhookStatus(hookId)).toBe("active")
    expect((await call("POST", `/webhooks/${hookId}/recover`, { since })).body.data).toEqual({ queued: 0 })
    expect(receiver.requests(path)).toHaveLength(6)
  }, 40_000)
})
