// engine-independent: no database
/**
 * One delivery attempt (`attempt()` from Delivery/Attempt.ts) against a real receiver on loopback: what it sends,
 * and how it judges 2xx, 3xx, 4xx/5xx, time-outs, slow and endless bodies, connection errors and refused targets.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { verify } from "@octokit/webhooks-methods"
import { Duration, Effect } from "effect"
import { Webhook } from "standardwebhooks"
import {
  type AttemptRequest,
  attempt,
  signatureHeaders,
  signingKey,
  USER_AGENT
} from "../../src/Webhooks/Delivery/Attempt.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"

let receiver: Receiver
beforeAll(() => {
  receiver = startReceiver()
}, 60_000)
afterAll(async () => {
  await receiver.stop()
}, 20_000)

let counter = 0
const request = (url: string, overrides: Partial<AttemptRequest> = {}): AttemptRequest => ({
  url,
  secret: "unit-test-secret-0123456789",
  previousSecret: null,
  body: JSON.stringify({
    id: "evt_1",
    type: "project.created",
    created_at: "2026-01-01T00:00:00.000Z",
    data: { n: ++counter }
  }),
  eventType: "project.created",
  eventId: "evt_01jd3xkq8w0000000000000000",
  deliveryId: "dlv_01jd3xkq8w0000000000000000",
  ...overrides
})

const run = (req: AttemptRequest, options: { timeoutMs?: number; allowPrivate?: boolean } = {}) =>
  Effect.runPromise(
    attempt(req, { timeout: Duration.millis(options.timeoutMs ?? 1_000), allowPrivate: options.allowPrivate ?? true })
  )

describe("attempt", () => {
  test("POSTs the body as given with the signature and service headers; a 200 succeeds", async () => {
    const path = "/ok"
    const req = request(receiver.url(path))
    receiver.enqueue(path, { status: 200, body: "thanks" })
    const result = await run(req)
    expect(result).toMatchObject({ succeeded: true, statusCode: 200, error: null, responseBody: "thanks" })
    expect(result.durationMs).toBeGreaterThanOrEqual(0)
    const [received] = receiver.requests(path)
    expect(received!.method).toBe("POST")
    expect(received!.body).toBe(req.body)
    expect(received!.headers).toMatchObject({
      "content-type": "application/json",
      "user-agent": USER_AGENT,
      "x-service-event": "project.created",
      "x-service-event-id": req.eventId,
      "x-service-delivery": req.deliveryId
    })
    expect(await verify(req.secret, received!.body, received!.headers["x-service-signature"]!)).toBe(true)
  })

  test("a host name is connected to at its checked address, with the name kept in the Host header", async () => {
    const path = "/by-name"
    const port = new URL(receiver.origin).port
    await run(request(`http://localhost:${port}${path}`))
    const [received] = receiver.requests(path)
    expect(received!.headers.host).toBe(`localhost:${port}`)
  })

  test.each([201, 202, 204, 299])("%d succeeds", async (status) => {
    const path = `/status-${status}`
    receiver.enqueue(path, { status })
    expect(await run(request(receiver.url(path)))).toMatchObject({ succeeded: true, statusCode: status, error: null })
  })

  test.each([301, 302, 303, 307, 308])("%d fails and is not followed", async (status) => {
    const path = `/redirect-${status}`
    const target = `/redirect-target-${status}`
    receiver.enqueue(path, { status, headers: { location: receiver.url(target) } })
    const result = await run(request(receiver.url(path)))
    expect(result).toMatchObject({ succeeded: false, statusCode: status })
    expect(result.error).toContain(String(status))
    await Bun.sleep(50)
    expect(receiver.requests(target)).toHaveLength(0)
  })

  test.each([400, 404, 410, 429, 500, 502, 503])("%d fails with its status and body", async (status) => {
    const path = `/error-${status}`
    receiver.enqueue(path, { status, body: `error ${status}` })
    const result = await run(request(receiver.url(path)))
    expect(result).toMatchObject({ succeeded: false, statusCode: status, responseBody: `error ${status}` })
    expect(result.error).toContain(String(status))
  })

  test("keeps only the first 4 KiB of the response body", async () => {
    const path = "/big"
    receiver.enqueue(path, { status: 200, body: "y".repeat(100_000) })
    const result = await run(request(receiver.url(path)))
    expect(result.succeeded).toBe(true)
    expect(result.responseBody).toBe("y".repeat(4096))
  })

  test("an endless response body does not hold the attempt: 4 KiB are read and the rest is dropped", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(
          new ReadableStream({
            async pull(controller) {
              await Bun.sleep(5)
              controller.enqueue(new TextEncoder().encode("z".repeat(100)))
            }
          }),
          { status: 200 }
        )
    })
    try {
      const started = performance.now()
      const result = await run(request(`http://127.0.0.1:${server.port}/endless`), { timeoutMs: 3_000 })
      expect(performance.now() - started).toBeLessThan(2_500)
      expect(result).toMatchObject({ succeeded: true, statusCode: 200 })
      expect(result.responseBody).toBe("z".repeat(4096))
    } finally {
      await server.stop(true)
    }
  })

  test("a receiver slower than the time-out fails with no status code, at about the time-out", async () => {
    const path = "/slow"
    receiver.enqueue(path, { status: 200, delayMs: 1_500 })
    const started = performance.now()
    const result = await run(request(receiver.url(path)), { timeoutMs: 400 })
    const took = performance.now() - started
    expect(result).toMatchObject({ succeeded: false, statusCode: null, responseBody: null })
    expect(result.error).toMatch(/timed out/i)
    expect(took).toBeGreaterThanOrEqual(350)
    expect(took).toBeLessThan(1_200)
  })

  test("a body that stalls past the time-out fails as a time-out", async () => {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 30,
      fetch: () =>
        new Response(
          new ReadableStream({
            async start(controller) {
              controller.enqueue(new TextEncoder().encode("partial"))
              await Bun.sleep(2_000)
              controller.close()
            }
          }),
          { status: 200 }
        )
    })
    try {
      const started = performance.now()
      const result = await run(request(`http://127.0.0.1:${server.port}/stall`), { timeoutMs: 400 })
      expect(performance.now() - started).toBeLessThan(1_500)
      expect(result.succeeded).toBe(false)
      expect(result.error).toMatch(/timed out/i)
    } finally {
      await server.stop(true)
    }
  })

  test("nobody listening: a connection failure with no status code", async () => {
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") })
    const port = closed.port
    await closed.stop(true)
    const result = await run(request(`http://127.0.0.1:${port}/gone`))
    expect(result).toMatchObject({ succeeded: false, statusCode: null, responseBody: null })
    expect(result.error).toMatch(/^connection failed/)
  })

  test("private targets refused: loopback is not contacted at all, by address or by name", async () => {
    const path = "/never"
    const port = new URL(receiver.origin).port
    for (const url of [receiver.url(path), `http://localhost:${port}${path}`]) {
      const result = await run(request(url), { allowPrivate: false })
      expect(result).toMatchObject({ succeeded: false, statusCode: null, responseBody: null })
      expect(result.error).toMatch(/^refused: /)
    }
    await Bun.sleep(50)
    expect(receiver.requests(path)).toHaveLength(0)
  })
})

describe("Standard Webhooks signing", () => {
  const body = JSON.stringify({ id: "evt_1", type: "project.created", data: { name: "é" } })
  const now = () => Math.floor(Date.now() / 1000)

  test("the key: a whsec_ secret's decoded bytes when 16 or more, else the secret's UTF-8 bytes", () => {
    const generated = "whsec_0123456789ABCDEFGHIJabcdefghijKL"
    expect(signingKey(generated)).toEqual(Buffer.from(generated.slice(6), "base64"))
    expect(signingKey(generated).byteLength).toBe(24)
    // 12 bytes once decoded: too short to be the key.
    const short = `whsec_${Buffer.from("0123456789ab").toString("base64")}`
    expect(signingKey(short)).toEqual(Buffer.from(short, "utf8"))
    // Not base64 (a space, a character outside the alphabet, bad padding).
    for (const secret of ["whsec_not base64 at all, really", "whsec_0123456789ABCDEFGHIJabcdefghi!", "whsec_abc"]) {
      expect(signingKey(secret)).toEqual(Buffer.from(secret, "utf8"))
    }
    expect(signingKey("a secret of my own choosing")).toEqual(Buffer.from("a secret of my own choosing", "utf8"))
  })

  test("one entry with one secret, two (new first) with a previous one; the package verifies each secret", () => {
    const secret = "whsec_0123456789ABCDEFGHIJabcdefghijKL"
    const previous = "whsec_ZYXWVUTSRQPONMLKJIzyxwvutsrqpo98"
    const at = now()
    const one = signatureHeaders({ secret, previousSecret: null, eventId: "evt_1", body }, at)
    expect(one["webhook-id"]).toBe("evt_1")
    expect(one["webhook-timestamp"]).toBe(String(at))
    expect(one["webhook-signature"].split(" ")).toHaveLength(1)
    expect(new Webhook(secret).verify(body, one)).toEqual(JSON.parse(body))
    expect(() => new Webhook(previous).verify(body, one)).toThrow()

    const two = signatureHeaders({ secret, previousSecret: previous, eventId: "evt_1", body }, at)
    const [first, second] = two["webhook-signature"].split(" ")
    expect(first).toBe(one["webhook-signature"])
    expect(new Webhook(secret).verify(body, two)).toEqual(JSON.parse(body))
    expect(new Webhook(previous).verify(body, { ...two, "webhook-signature": second! })).toEqual(JSON.parse(body))
    // X-Service-Signature is the current secret's alone.
    expect(two["x-service-signature"]).toBe(one["x-service-signature"])
  })

  test("the timestamp is signed: another timestamp, id or body does not verify; an old one is refused", () => {
    const secret = "whsec_0123456789ABCDEFGHIJabcdefghijKL"
    const headers = signatureHeaders({ secret, previousSecret: null, eventId: "evt_1", body }, now())
    const wh = new Webhook(secret)
    expect(() => wh.verify(body, { ...headers, "webhook-timestamp": String(now() - 1) })).toThrow()
    expect(() => wh.verify(body, { ...headers, "webhook-id": "evt_2" })).toThrow()
    expect(() => wh.verify(`${body} `, headers)).toThrow()
    const old = signatureHeaders({ secret, previousSecret: null, eventId: "evt_1", body }, now() - 600)
    expect(() => wh.verify(body, old)).toThrow()
  })
})
