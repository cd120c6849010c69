/**
 * The delivery worker, from outside, on a real server:
 * - retries are attempted when due, not at the next poll (the poll interval here is an hour);
 * - operators see failures: each failed attempt, the delivery giving up and the webhook turning `failed` are each
 *   logged at `warning` with the ids an operator needs;
 * - an idle server with tracing on exports no trace: the worker's polling makes no spans.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { DELIVERY_RECORDERS, deliveryRecorderOf } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { eventually, type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"

/** A minimal OTLP/HTTP JSON collector: the names of the spans it was sent, in arrival order. */
const collector = () => {
  const spans: Array<string> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const body = (await request.json()) as any
      if (new URL(request.url).pathname === "/v1/traces") {
        for (const rs of body.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) for (const span of ss.spans ?? []) spans.push(span.name)
        }
      }
      return Response.json({})
    }
  })
  return { url: `http://127.0.0.1:${server.port}`, spans, stop: () => server.stop(true) }
}

interface LogLine {
  readonly level: string
  readonly message: string
  readonly [field: string]: unknown
}
const logLines = (server: Server): Array<LogLine> =>
  server.logs.flatMap((line) => {
    try {
      return [JSON.parse(line) as LogLine]
    } catch {
      return []
    }
  })

let receiver: Receiver
let otlp: ReturnType<typeof collector>
/** Tracing on, polling every 50 ms. */
let traced: Server
/**
 * Retries 50 ms apart, and a poll interval of an hour: only being woken when a retry is due delivers them. One per
 * delivery recorder, each with its own Ann.
 */
const slowPolls = new Map<string, { readonly server: Server; readonly ann: TestUser }>()

beforeAll(async () => {
  receiver = startReceiver()
  for (const [kind] of DELIVERY_RECORDERS) receiver.setDefault({ status: 500, body: "broken" }, `/failing-${kind}`)
  otlp = collector()
  const SLOW_POLL_ENV = {
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_DELAYS: "50ms,50ms,50ms,50ms",
    WEBHOOK_TIMEOUT: "1s",
    WEBHOOK_CLAIM_TIMEOUT: "3s",
    WEBHOOK_POLL_INTERVAL: "1h"
  }
  const [started, tracedServer] = await Promise.all([
    Promise.all(
      DELIVERY_RECORDERS.map(async ([kind, env]) => {
        const server = await startInProcess({ env: { ...SLOW_POLL_ENV, ...env } })
        return [kind, { server, ann: await server.user({ name: "Ann" }) }] as const
      })
    ),
    startInProcess({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_METRICS_EXPORTER: "none",
        OTEL_LOGS_EXPORTER: "none",
        WEBHOOK_POLL_INTERVAL: "50ms"
      }
    })
  ])
  for (const [kind, set] of started) slowPolls.set(kind, set)
  traced = tracedServer
}, 60_000)
afterAll(async () => {
  await Promise.all([traced?.stop(), ...[...slowPolls.values()].map((set) => set.server.stop())])
  await receiver?.stop()
  otlp?.stop()
}, 20_000)

describe.each(DELIVERY_RECORDERS.map(([kind]) => kind))(
  "retries and the operator's log, %s delivery recorder",
  (kind) => {
    test("five failed attempts come when due (the poll is an hour away), each logged; then the delivery and the webhook", async () => {
      const { server: slowPoll, ann } = slowPolls.get(kind)!
      expect(deliveryRecorderOf(slowPoll)).toBe(kind)
      const failing = `/failing-${kind}`
      const hook = await slowPoll.request("/v1/webhooks", {
        method: "POST",
        key: ann.key,
        body: { url: receiver.url(failing), events: ["project.created"] }
      })
      expect(hook.status).toBe(201)
      const webhookId: string = hook.body.data.id
      const project = await slowPoll.request("/v1/projects", { method: "POST", key: ann.key, body: { name: "Doomed" } })
      expect(project.status).toBe(201)

      const attempts = await receiver.waitFor(5, { path: failing, timeoutMs: 10_000 })
      const deliveryId = attempts[0]!.headers["x-service-delivery"]!
      expect(new Set(attempts.map((a) => a.headers["x-service-delivery"]))).toEqual(new Set([deliveryId]))
      const delivery = await eventually(
        async () => {
          const res = await slowPoll.request(`/v1/webhooks/${webhookId}/deliveries/${deliveryId}`, { key: ann.key })
          return res.body.data.status === "failed" ? res.body.data : undefined
        },
        { what: "the delivery to be failed" }
      )
      expect(delivery.attempt_count).toBe(5)
      expect((await slowPoll.request(`/v1/webhooks/${webhookId}`, { key: ann.key })).body.data.status).toBe("failed")

      const ofDelivery = () => logLines(slowPoll).filter((line) => line.delivery_id === deliveryId)
      const webhookFailed = await eventually(() => ofDelivery().find((line) => line.message === "webhook failed"), {
        what: "the log line of the webhook turning failed"
      })
      const failedAttempts = ofDelivery().filter((line) => line.message === "webhook delivery attempt failed")
      expect(failedAttempts.map((line) => line.attempt)).toEqual([1, 2, 3, 4, 5])
      for (const line of failedAttempts) {
        expect(line.level).toBe("warn")
        expect(line.webhook_id).toBe(webhookId)
        expect(line.event_type).toBe("project.created")
        expect(line.status_code).toBe(500)
        expect(line.error).toBe("HTTP 500")
      }
      expect(failedAttempts[4]!.next_attempt_at).toBeNull()
      const givenUp = ofDelivery().filter((line) => line.message === "webhook delivery failed")
      expect(givenUp).toHaveLength(1)
      expect(givenUp[0]).toMatchObject({
        level: "warn",
        webhook_id: webhookId,
        event_type: "project.created",
        attempt: 5,
        status_code: 500
      })
      expect(webhookFailed).toMatchObject({ level: "warn", webhook_id: webhookId })

      // A webhook already failed does not "turn" failed again: the next delivery's failure is logged, the webhook not.
      await slowPoll.request("/v1/projects", { method: "POST", key: ann.key, body: { name: "Doomed too" } })
      await receiver.waitFor(10, { path: failing, timeoutMs: 10_000 })
      const ofWebhook = () => logLines(slowPoll).filter((line) => line.webhook_id === webhookId)
      await eventually(
        () => ofWebhook().filter((line) => line.message === "webhook delivery failed").length === 2 || undefined,
        { what: "the second delivery's failure in the log" }
      )
      expect(ofWebhook().filter((line) => line.message === "webhook failed")).toHaveLength(1)
    }, 30_000)
  }
)

describe("tracing an idle server", () => {
  test("the worker's polling exports no trace for two seconds (some 40 polls); a request then does", async () => {
    // Whatever start-up traced has been exported by now (batches go every 100 ms).
    await Bun.sleep(1_000)
    const before = otlp.spans.length
    // A poll every 50 ms, a batch every 100 ms: a traced poll would show within 150 ms, so 2 s is ample.
    await Bun.sleep(2_000)
    expect(otlp.spans.slice(before)).toEqual([])

    // The exporter works: a request is traced and arrives.
    const bob = await traced.user({ name: "Bob" })
    expect((await traced.request("/v1/users/me", { key: bob.key })).status).toBe(200)
    await eventually(() => otlp.spans.includes("GET /v1/users/me") || undefined, { what: "the request's span" })
  }, 30_000)
})
