/**
 * Webhooks a receiver can trust and an owner can run, over real HTTP to a real receiver: the Standard Webhooks
 * headers on every attempt (verified by the `standardwebhooks` package, and by hand for a secret the user chose),
 * secret rotation with its overlap, `PUT` replacing a secret at once, the test event, recovering failed deliveries,
 * and the request recorded on the delivery (payload and headers) beside the response, by both delivery recorders
 * (the fast one and its idiomatic twin).
 */

import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { Webhook } from "standardwebhooks"
import { DELIVERY_RECORDERS, deliveryRecorderOf, eventually, sleep, stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"

const BASE_ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_TIMEOUT: "1s",
  WEBHOOK_CLAIM_TIMEOUT: "3s",
  WEBHOOK_POLL_INTERVAL: "100ms"
}
// Retries a second apart, so that each attempt's `webhook-timestamp` (whole seconds) is a new one.
const ENV = { ...BASE_ENV, WEBHOOK_RETRY_DELAYS: "1s,1s,1s,1s" }
// Fast retries (a delivery fails for good in about a second) and a rotated-out secret that stops verifying at once.
const FAST_ENV = { ...BASE_ENV, WEBHOOK_RETRY_DELAYS: "100ms,100ms,100ms,100ms", WEBHOOK_SECRET_OVERLAP: "1s" }

const GENERATED = /^whsec_[0-9A-Za-z]{32}$/
const V1 = /^v1,[A-Za-z0-9+/]{43}=$/

let server: Server
let fast: Server
/** The server of the idiomatic delivery recorder (`server` runs the fast one), with its own Ann and Bob. */
let idiomatic: { readonly server: Server; readonly ann: TestUser; readonly bob: TestUser }
let receiver: Receiver
let ann: TestUser
let bob: TestUser
let reader: TestUser // read scope only
let fay: TestUser // on the fast server

beforeAll(async () => {
  receiver = startReceiver()
  const idiomaticEnv = DELIVERY_RECORDERS.find(([kind]) => kind === "idiomatic")![1]
  let other: Server
  ;[server, fast, other] = await Promise.all([
    startInProcess({ env: ENV }),
    startInProcess({ env: FAST_ENV }),
    startInProcess({ env: { ...ENV, ...idiomaticEnv } })
  ])
  let idiomaticAnn: TestUser
  let idiomaticBob: TestUser
  ;[ann, bob, reader, fay, idiomaticAnn, idiomaticBob] = await Promise.all([
    server.user({ name: "Ann" }),
    server.user({ name: "Bob" }),
    server.user({ name: "Reader", scopes: "read" }),
    fast.user({ name: "Fay" }),
    other.user({ name: "Ann" }),
    other.user({ name: "Bob" })
  ])
  idiomatic = { server: other, ann: idiomaticAnn, bob: idiomaticBob }
}, 60_000)
afterAll(async () => {
  await Promise.all([stopWithin(server), stopWithin(fast), stopWithin(idiomatic?.server)])
  await receiver?.stop()
}, 20_000)

let pathCounter = 0
const newPath = (label = "sig") => `/${label}-${++pathCounter}`
const registered: Array<{ readonly key: string; readonly id: string; readonly on: Server }> = []
afterEach(async () => {
  const all = registered.splice(0)
  await Promise.all(all.map(({ key, id, on }) => on.request(`/v1/webhooks/${id}`, { method: "DELETE", key })))
})

interface Hook {
  readonly id: string
  readonly path: string
  readonly secret: string
}

const hook = async (
  user: TestUser,
  options: { readonly secret?: string; readonly on?: Server; readonly path?: string } = {}
): Promise<Hook> => {
  const on = options.on ?? server
  const path = options.path ?? newPath()
  const res = await on.request("/v1/webhooks", {
    method: "POST",
    key: user.key,
    body: {
      url: receiver.url(path),
      events: ["project.created"],
      ...(options.secret !== undefined ? { secret: options.secret } : {})
    }
  })
  expect(res.status).toBe(201)
  registered.push({ key: user.key, id: res.body.data.id, on })
  return { id: res.body.data.id, path, secret: options.secret ?? res.body.data.secret }
}

const createProject = async (user: TestUser, on: Server = server) => {
  const res = await on.request("/v1/projects", { method: "POST", key: user.key, body: { name: `p-${++pathCounter}` } })
  expect(res.status).toBe(201)
  return res.body.data as { id: string }
}

const post = (user: TestUser, path: string, body: unknown = {}, on: Server = server) =>
  on.request(`/v1${path}`, { method: "POST", key: user.key, body })

/** The n-th request to arrive at `path` from now on (counting those there already). */
const nth = async (path: string, n: number) => (await receiver.waitFor(n, { path, timeoutMs: 15_000 }))[n - 1]!

/** The entries of a `webhook-signature` header. */
const entries = (request: ReceivedRequest) => (request.headers["webhook-signature"] ?? "").split(" ")

/** True when the `standardwebhooks` package accepts the request for `secret`. */
const verifies = (secret: string, request: ReceivedRequest) => {
  try {
    new Webhook(secret).verify(request.body, request.headers)
    return true
  } catch {
    return false
  }
}

/** The Standard Webhooks signature, computed by hand from the secret's UTF-8 bytes (a secret not of whsec_ form). */
const byHand = (secret: string, request: ReceivedRequest) =>
  `v1,${createHmac("sha256", Buffer.from(secret, "utf8"))
    .update(`${request.headers["webhook-id"]}.${request.headers["webhook-timestamp"]}.${request.body}`)
    .digest("base64")}`

const serviceSignature = (secret: string, body: string) =>
  `sha256=${createHmac("sha256", Buffer.from(secret, "utf8")).update(body).digest("hex")}`

const delivery = async (user: TestUser, hookId: string, deliveryId: string, on: Server = server) => {
  const res = await on.request(`/v1/webhooks/${hookId}/deliveries/${deliveryId}`, { key: user.key })
  expect(res.status).toBe(200)
  return res.body.data
}

const deliveryWhen = (
  user: TestUser,
  hookId: string,
  deliveryId: string,
  until: (d: any) => boolean,
  on: Server = server
) =>
  eventually(
    async () => {
      const d = await delivery(user, hookId, deliveryId, on)
      return until(d) ? d : undefined
    },
    { timeoutMs: 20_000, what: `delivery ${deliveryId}` }
  )

const deliveriesOf = async (user: TestUser, hookId: string, query = "", on: Server = server) => {
  const res = await on.request(`/v1/webhooks/${hookId}/deliveries${query}`, { key: user.key })
  expect(res.status).toBe(200)
  return res.body as { data: Array<any>; meta: { total: number } }
}

describe("Standard Webhooks headers", () => {
  test("every attempt carries webhook-id (the event id, the same on each), its own webhook-timestamp and a v1 signature the package verifies", async () => {
    const h = await hook(ann)
    expect(h.secret).toMatch(GENERATED)
    receiver.enqueue(h.path, { status: 503 }, { status: 500 })
    await createProject(ann)
    const attempts = await receiver.waitFor(3, { path: h.path, timeoutMs: 20_000 })
    const eventId = JSON.parse(attempts[0]!.body).id
    expect(eventId).toMatch(/^evt_/)
    const stamps: Array<number> = []
    for (const request of attempts) {
      expect(request.headers["webhook-id"]).toBe(eventId)
      expect(request.headers["x-service-event-id"]).toBe(eventId)
      const stamp = request.headers["webhook-timestamp"] ?? ""
      expect(stamp).toMatch(/^\d{10}$/)
      // This attempt's time: not later than its arrival.
      expect(Number(stamp)).toBeLessThanOrEqual(Math.floor(request.receivedAt / 1000))
      stamps.push(Number(stamp))
      expect(entries(request)).toHaveLength(1)
      expect(entries(request)[0]).toMatch(V1)
      expect(verifies(h.secret, request)).toBe(true)
      // The spec's header is unchanged: the body alone, keyed with the secret's UTF-8 bytes.
      expect(request.headers["x-service-signature"]).toBe(serviceSignature(h.secret, request.body))
      // The bytes are the same on every attempt.
      expect(request.body).toBe(attempts[0]!.body)
    }
    // Retries a second or more apart: a new timestamp each time.
    expect(stamps[1]!).toBeGreaterThan(stamps[0]!)
    expect(stamps[2]!).toBeGreaterThan(stamps[1]!)
    // Another webhook's secret does not verify it, nor does a changed body.
    const other = await hook(ann)
    expect(verifies(other.secret, attempts[0]!)).toBe(false)
    expect(verifies(h.secret, { ...attempts[0]!, body: attempts[0]!.body.replace("project", "Project") })).toBe(false)
  }, 40_000)

  test("a secret the user chose (not of whsec_ form) signs with its UTF-8 bytes: verified by hand and by the package's raw format", async () => {
    const secret = "my own secret, not base64!"
    const h = await hook(ann, { secret })
    await createProject(ann)
    const request = await nth(h.path, 1)
    expect(entries(request)).toEqual([byHand(secret, request)])
    expect(request.headers["x-service-signature"]).toBe(serviceSignature(secret, request.body))
    // docs/webhooks.md: `standardwebhooks` verifies it given the secret's UTF-8 bytes with `{ format: "raw" }`.
    const raw = new Webhook(new TextEncoder().encode(secret), { format: "raw" })
    expect(raw.verify(request.body, request.headers)).toEqual(JSON.parse(request.body))
    expect(verifies(secret, request)).toBe(false)
  })

  test("a chosen secret with characters outside ASCII: the package's raw format verifies it from its UTF-8 bytes", async () => {
    const secret = "un secret choisi à la main, élève"
    const h = await hook(ann, { secret })
    await createProject(ann)
    const request = await nth(h.path, 1)
    expect(entries(request)).toEqual([byHand(secret, request)])
    const raw = new Webhook(new TextEncoder().encode(secret), { format: "raw" })
    expect(raw.verify(request.body, request.headers)).toEqual(JSON.parse(request.body))
    // Given as a string, the package takes each character's code as a byte (Latin-1), not UTF-8: it fails here.
    expect(() => new Webhook(secret, { format: "raw" }).verify(request.body, request.headers)).toThrow()
  })

  test("a chosen secret of whsec_ form that decodes to 16 bytes or more is used decoded, as the package does", async () => {
    const secret = `whsec_${Buffer.from("0123456789abcdef0123").toString("base64")}`
    const h = await hook(ann, { secret })
    await createProject(ann)
    const request = await nth(h.path, 1)
    expect(verifies(secret, request)).toBe(true)
    // Too short once decoded (12 bytes): the whole string's UTF-8 bytes are the key.
    const short = `whsec_${Buffer.from("0123456789ab").toString("base64")}`
    const s = await hook(ann, { secret: short })
    await createProject(ann)
    const second = await nth(s.path, 1)
    expect(entries(second)).toEqual([byHand(short, second)])
  })
})

describe("secret rotation", () => {
  test("during the overlap both secrets sign (new first) and both verify; X-Service-Signature is the new one's; rotating again keeps two, never three", async () => {
    const h = await hook(ann)
    const before = Date.now()
    const rotated = await post(ann, `/webhooks/${h.id}/rotate-secret`)
    expect(rotated.status).toBe(200)
    const data = rotated.body.data
    expect(data.id).toBe(h.id)
    expect(data.secret).toMatch(GENERATED)
    expect(data.secret).not.toBe(h.secret)
    const expires = Date.parse(data.previous_secret_expires_at)
    expect(expires).toBeGreaterThanOrEqual(before + 24 * 3600_000 - 1000)
    expect(expires).toBeLessThanOrEqual(Date.now() + 24 * 3600_000 + 1000)
    expect(Object.keys(data).sort()).toEqual(
      [
        "id",
        "url",
        "events",
        "status",
        "created_at",
        "updated_at",
        "failed_at",
        "disabled_at",
        "signature",
        "public_key",
        "previous_public_key",
        "previous_secret_expires_at",
        "secret"
      ].sort()
    )
    // The read never shows a secret.
    const read = await server.request(`/v1/webhooks/${h.id}`, { key: ann.key })
    expect(read.body.data.secret).toBeUndefined()

    await createProject(ann)
    const first = await nth(h.path, 1)
    const [newEntry, oldEntry] = entries(first)
    expect(entries(first)).toHaveLength(2)
    expect(verifies(data.secret, first)).toBe(true)
    expect(verifies(h.secret, first)).toBe(true)
    // New first: each entry is its own secret's.
    expect(verifies(data.secret, { ...first, headers: { ...first.headers, "webhook-signature": newEntry! } })).toBe(
      true
    )
    expect(verifies(h.secret, { ...first, headers: { ...first.headers, "webhook-signature": oldEntry! } })).toBe(true)
    expect(first.headers["x-service-signature"]).toBe(serviceSignature(data.secret, first.body))

    // Rotating again within the overlap (to a secret given by the user): the one rotated out now is the previous
    // one; the first secret no longer verifies.
    const chosen = "the third secret, chosen by hand"
    const again = await post(ann, `/webhooks/${h.id}/rotate-secret`, { secret: chosen })
    expect(again.status).toBe(200)
    expect(again.body.data.secret).toBeUndefined()
    await createProject(ann)
    const second = await nth(h.path, 2)
    expect(entries(second)).toHaveLength(2)
    expect(entries(second)[0]).toBe(byHand(chosen, second))
    expect(verifies(data.secret, second)).toBe(true)
    expect(verifies(h.secret, second)).toBe(false)
    expect(second.headers["x-service-signature"]).toBe(serviceSignature(chosen, second.body))
  })

  test("after a short WEBHOOK_SECRET_OVERLAP only the new secret signs", async () => {
    const h = await hook(fay, { on: fast })
    const rotated = await post(fay, `/webhooks/${h.id}/rotate-secret`, {}, fast)
    expect(rotated.status).toBe(200)
    const expires = Date.parse(rotated.body.data.previous_secret_expires_at)
    await sleep(Math.max(0, expires - Date.now()) + 100)
    await createProject(fay, fast)
    const request = await nth(h.path, 1)
    expect(entries(request)).toHaveLength(1)
    expect(verifies(rotated.body.data.secret, request)).toBe(true)
    expect(verifies(h.secret, request)).toBe(false)
  })

  test("PUT with a secret replaces it at once: no overlap, and a rotated-out secret stops verifying too", async () => {
    const h = await hook(ann)
    const rotated = await post(ann, `/webhooks/${h.id}/rotate-secret`)
    const put = await server.request(`/v1/webhooks/${h.id}`, {
      method: "PUT",
      key: ann.key,
      body: { secret: "replaced-at-once-secret" }
    })
    expect(put.status).toBe(200)
    await createProject(ann)
    const request = await nth(h.path, 1)
    expect(entries(request)).toEqual([byHand("replaced-at-once-secret", request)])
    expect(verifies(rotated.body.data.secret, request)).toBe(false)
    expect(verifies(h.secret, request)).toBe(false)
  })

  test("errors: a bad secret or an unknown field is validation_failed; another user's webhook 404; read scope 403", async () => {
    const h = await hook(ann)
    const short = await post(ann, `/webhooks/${h.id}/rotate-secret`, { secret: "short" })
    expect(short.status).toBe(400)
    expect(short.body.error.code).toBe("validation_failed")
    expect(short.body.error.details[0].field).toBe("secret")
    const unknown = await post(ann, `/webhooks/${h.id}/rotate-secret`, { secrets: "x".repeat(20) })
    expect(unknown.status).toBe(400)
    expect(unknown.body.error.code).toBe("validation_failed")
    const others = await post(bob, `/webhooks/${h.id}/rotate-secret`)
    expect(others.status).toBe(404)
    expect(others.body.error.code).toBe("not_found")
    const readOnly = await post(reader, `/webhooks/${h.id}/rotate-secret`)
    expect(readOnly.status).toBe(403)
    expect(readOnly.body.error.code).toBe("forbidden")
    // Nothing changed: the original secret still signs alone.
    await createProject(ann)
    const request = await nth(h.path, 1)
    expect(entries(request)).toHaveLength(1)
    expect(verifies(h.secret, request)).toBe(true)
  })
})

describe("test event", () => {
  test("POST /test sends webhook.test to that webhook only, whatever its events; signed and logged like any delivery", async () => {
    const h = await hook(ann)
    const bystander = await hook(ann)
    const res = await post(ann, `/webhooks/${h.id}/test`)
    expect(res.status).toBe(202)
    const d = res.body.data
    expect(d.webhook_id).toBe(h.id)
    expect(d.event_type).toBe("webhook.test")
    expect(d.id).toMatch(/^dlv_/)
    expect(d.event_id).toMatch(/^evt_/)
    const request = await nth(h.path, 1)
    expect(request.headers["x-service-event"]).toBe("webhook.test")
    expect(request.headers["x-service-delivery"]).toBe(d.id)
    const body = JSON.parse(request.body)
    expect(body).toEqual({
      id: d.event_id,
      type: "webhook.test",
      created_at: d.created_at,
      actor: expect.objectContaining({ type: "user", name: "Ann" }),
      data: { webhook_id: h.id }
    })
    expect(verifies(h.secret, request)).toBe(true)
    const done = await deliveryWhen(ann, h.id, d.id, (x) => x.status === "delivered")
    expect(done.attempt_count).toBe(1)
    expect(done.last_status_code).toBe(200)
    // No other webhook got it.
    await sleep(300)
    expect(receiver.requests(bystander.path)).toHaveLength(0)
  })

  test("webhook.test cannot be subscribed to; bad body, another user's webhook, read scope", async () => {
    const sub = await server.request("/v1/webhooks", {
      method: "POST",
      key: ann.key,
      body: { url: receiver.url(newPath()), events: ["project.created", "webhook.test"] }
    })
    expect(sub.status).toBe(400)
    expect(sub.body.error.code).toBe("validation_failed")
    expect(sub.body.error.details[0].field).toBe("events.1")
    const h = await hook(ann)
    const put = await server.request(`/v1/webhooks/${h.id}`, {
      method: "PUT",
      key: ann.key,
      body: { events: ["webhook.test"] }
    })
    expect(put.status).toBe(400)
    const unknown = await post(ann, `/webhooks/${h.id}/test`, { type: "project.created" })
    expect(unknown.status).toBe(400)
    expect(unknown.body.error.code).toBe("validation_failed")
    expect((await post(bob, `/webhooks/${h.id}/test`)).status).toBe(404)
    const readOnly = await post(reader, `/webhooks/${h.id}/test`)
    expect(readOnly.status).toBe(403)
    expect(readOnly.body.error.message).toContain("write")
    expect((await post(ann, "/webhooks/whk_00000000000000000000000000/test")).status).toBe(404)
    await sleep(300)
    expect(receiver.requests(h.path)).toHaveLength(0)
  })
})

describe("recover", () => {
  /** A webhook on the fast server whose receiver refuses everything, with `count` deliveries failed for good. */
  const failedDeliveries = async (count: number) => {
    const h = await hook(fay, { on: fast })
    receiver.setDefault({ status: 503 }, h.path)
    for (let i = 0; i < count; i++) {
      await createProject(fay, fast)
      await sleep(5) // distinct creation times, for the window test's bounds
    }
    const list = await eventually(
      async () => {
        const body = await deliveriesOf(fay, h.id, "?status=failed", fast)
        return body.meta.total === count ? body.data : undefined
      },
      { timeoutMs: 20_000, what: `${count} failed deliveries` }
    )
    return { h, list }
  }

  test("queues one attempt now for each failed delivery in [since, until); nothing twice; the retried ones are delivered", async () => {
    const { h, list } = await failedDeliveries(2)
    receiver.setDefault({ status: 200 }, h.path)
    const arrived = receiver.requests(h.path).length
    const since = new Date(Date.now() - 3600_000).toISOString()
    const res = await post(fay, `/webhooks/${h.id}/recover`, { since }, fast)
    expect(res.status).toBe(202)
    expect(res.body.data).toEqual({ queued: 2 })
    expect(res.body.meta.request_id).toMatch(/^req_/)
    // Already due or in flight: neither queued again nor counted.
    const again = await post(fay, `/webhooks/${h.id}/recover`, { since }, fast)
    expect(again.status).toBe(202)
    expect(again.body.data).toEqual({ queued: 0 })
    for (const d of list) {
      const done = await deliveryWhen(fay, h.id, d.id, (x) => x.status === "delivered", fast)
      // One extra attempt, outside the five scheduled ones.
      expect(done.attempt_count).toBe(5)
      expect(done.attempts).toHaveLength(6)
      expect(done.attempts.at(-1)).toMatchObject({ outcome: "succeeded", trigger: "manual" })
    }
    expect(receiver.requests(h.path).length - arrived).toBe(2)
    // Delivered now: nothing left to recover.
    const after = await post(fay, `/webhooks/${h.id}/recover`, { since }, fast)
    expect(after.body.data).toEqual({ queued: 0 })
  }, 40_000)

  test("the window: events created before since or at/after until are left alone", async () => {
    const { h, list } = await failedDeliveries(2)
    const [newer, older] = list // newest first
    // [older, newer): the newer one is outside (until is exclusive).
    const res = await post(fay, `/webhooks/${h.id}/recover`, { since: older.created_at, until: newer.created_at }, fast)
    expect(res.body.data).toEqual({ queued: 1 })
    const left = await delivery(fay, h.id, newer.id, fast)
    expect(left.status).toBe("failed")
    // The older one gets its one manual attempt (refused again: still failed, five scheduled attempts and this one).
    const again = await deliveryWhen(fay, h.id, older.id, (x) => x.attempts.length === 6, fast)
    expect(again).toMatchObject({ status: "failed", attempt_count: 5 })
    expect(again.attempts.at(-1).trigger).toBe("manual")
    expect((await delivery(fay, h.id, newer.id, fast)).attempt_count).toBe(5)
    // After both: none.
    const later = new Date(Date.parse(newer.created_at) + 1).toISOString()
    const none = await post(fay, `/webhooks/${h.id}/recover`, { since: later }, fast)
    expect(none.body.data).toEqual({ queued: 0 })
  }, 40_000)

  test("validation: since over 14 days ago, since not before until, a bad timestamp, no since, an unknown field", async () => {
    const h = await hook(ann)
    const call = (body: unknown) => post(ann, `/webhooks/${h.id}/recover`, body)
    const expectInvalid = async (body: unknown, field: string) => {
      const res = await call(body)
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe("validation_failed")
      expect(res.body.error.details[0].field).toBe(field)
    }
    await expectInvalid({ since: new Date(Date.now() - 15 * 86400_000).toISOString() }, "since")
    const t = new Date(Date.now() - 3600_000).toISOString()
    await expectInvalid({ since: t, until: t }, "until")
    await expectInvalid({ since: t, until: new Date(Date.now() - 7200_000).toISOString() }, "until")
    await expectInvalid({ since: "yesterday" }, "since")
    await expectInvalid({ since: "2026-01-31T12:00:00" }, "since")
    await expectInvalid({}, "since")
    await expectInvalid({ since: t, extra: 1 }, "extra")
    // 13 days back and a date-time with an offset are fine.
    const ok = await call({ since: new Date(Date.now() - 13 * 86400_000).toISOString().replace("Z", "+00:00") })
    expect(ok.status).toBe(202)
    expect(ok.body.data).toEqual({ queued: 0 })
  })

  test("another user's webhook is 404; without write it is 403", async () => {
    const h = await hook(ann)
    const since = new Date(Date.now() - 60_000).toISOString()
    const others = await post(bob, `/webhooks/${h.id}/recover`, { since })
    expect(others.status).toBe(404)
    expect(others.body.error.code).toBe("not_found")
    const readOnly = await post(reader, `/webhooks/${h.id}/recover`, { since })
    expect(readOnly.status).toBe(403)
    expect(readOnly.body.error.code).toBe("forbidden")
  })
})

// Recorded by each delivery recorder: the fast one (`server`) and its idiomatic twin.
describe.each(DELIVERY_RECORDERS.map(([kind]) => kind))("with the %s delivery recorder", (kind) => {
  let before = { server, ann, bob }
  beforeAll(() => {
    before = { server, ann, bob }
    if (kind === "idiomatic") ({ server, ann, bob } = idiomatic)
  })
  afterAll(() => {
    ;({ server, ann, bob } = before)
  })

  test("the server's delivery worker runs it", () => {
    expect(deliveryRecorderOf(server)).toBe(kind)
  })

  describe("the request recorded on the delivery", () => {
    test("payload (the exact bytes sent) and each attempt's request_headers and response_headers", async () => {
      const h = await hook(ann)
      receiver.enqueue(h.path, { status: 503, body: "busy", headers: { "retry-after": "1" } })
      await createProject(ann)
      const [first, second] = await receiver.waitFor(2, { path: h.path, timeoutMs: 20_000 })
      const deliveryId = first!.headers["x-service-delivery"]!
      const d = await deliveryWhen(ann, h.id, deliveryId, (x) => x.status === "delivered")
      expect(d.payload).toBe(first!.body)
      expect(d.payload).toBe(second!.body)
      expect(d.attempts).toHaveLength(2)
      d.attempts.forEach((attempt: any, i: number) => {
        const sent = [first!, second!][i]!
        for (const name of [
          "content-type",
          "user-agent",
          "webhook-id",
          "webhook-timestamp",
          "webhook-signature",
          "x-service-signature",
          "x-service-event",
          "x-service-event-id",
          "x-service-delivery",
          "traceparent"
        ]) {
          expect(attempt.request_headers[name]).toBe(sent.headers[name])
        }
        expect(attempt.request_headers.host).toBe(new URL(receiver.url(h.path)).host)
      })
      expect(d.attempts[0].request_headers["webhook-timestamp"]).not.toBe(
        d.attempts[1].request_headers["webhook-timestamp"]
      )
      expect(d.attempts[0].status_code).toBe(503)
      expect(d.attempts[0].response_headers["retry-after"]).toBe("1")
      expect(d.attempts[1].response_headers["content-type"]).toBeString()
      expect(d.last_status_code).toBe(200)
      // The list carries the last status code too.
      const list = await deliveriesOf(ann, h.id)
      expect(list.data[0].last_status_code).toBe(200)
      expect(list.data[0].payload).toBeUndefined()
    }, 30_000)

    test("no response: response_headers null, request_headers still what was to be sent", async () => {
      const closed = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } })
      const port = closed.port
      closed.stop(true)
      const res = await server.request("/v1/webhooks", {
        method: "POST",
        key: bob.key,
        body: { url: `http://127.0.0.1:${port}/gone`, events: ["project.created"] }
      })
      registered.push({ key: bob.key, id: res.body.data.id, on: server })
      const t = await post(bob, `/webhooks/${res.body.data.id}/test`)
      const d = await deliveryWhen(bob, res.body.data.id, t.body.data.id, (x) => x.attempt_count >= 1)
      expect(d.attempts[0].status_code).toBeNull()
      expect(d.attempts[0].response_headers).toBeNull()
      expect(d.attempts[0].request_headers["webhook-id"]).toBe(d.event_id)
      expect(d.last_status_code).toBeNull()
      expect(JSON.parse(d.payload).type).toBe("webhook.test")
    })

    test("the delivery list filters by event_type and creation time", async () => {
      const h = await hook(ann)
      await createProject(ann)
      const t = await post(ann, `/webhooks/${h.id}/test`)
      await receiver.waitFor(2, { path: h.path })
      const tests = await deliveriesOf(ann, h.id, "?event_type=webhook.test")
      expect(tests.meta.total).toBe(1)
      expect(tests.data.map((d) => d.id)).toEqual([t.body.data.id])
      const created = await deliveriesOf(ann, h.id, "?event_type=project.created&status=delivered")
      expect(created.data.every((d) => d.event_type === "project.created")).toBe(true)
      const after = await deliveriesOf(ann, h.id, `?created_after=${encodeURIComponent(t.body.data.created_at)}`)
      expect(after.meta.total).toBe(0)
      const before = await deliveriesOf(ann, h.id, `?created_before=${encodeURIComponent(t.body.data.created_at)}`)
      expect(before.meta.total).toBe(1)
      expect(before.data[0].event_type).toBe("project.created")
      const bad = await server.request(`/v1/webhooks/${h.id}/deliveries?event_type=project.exploded`, { key: ann.key })
      expect(bad.status).toBe(400)
      expect(bad.body.error.code).toBe("validation_failed")
      expect(bad.body.error.details[0].field).toBe("event_type")
    })
  })
})
