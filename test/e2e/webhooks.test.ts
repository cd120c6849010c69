/**
 * Webhooks end to end: registration, validation, signed deliveries to a real receiver on loopback, retries,
 * manual retry, time-outs and redirects as failures, the delivery log, and the SSRF guard at registration and at
 * connect time. Retry delays are shortened through WEBHOOK_RETRY_DELAYS. What records an attempt's outcome
 * (delivery, retries, failures, the delivery log) runs on both delivery recorders: the fast one and its idiomatic twin.
 */

import { Database } from "bun:sqlite"
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { verify } from "@octokit/webhooks-methods"
import { makeId } from "../../src/Domain/Ids.ts"
import { sqlOn } from "../support/databases.ts"
import { storedSecret } from "../support/fixtures.ts"
import { DELIVERY_RECORDERS, deliveryRecorderOf, eventually, stopWithin } from "../support/helpers.ts"
import { startInProcess, startupFailureInProcess } from "../support/in-process.ts"
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"

const DELAY_MS = 300
const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: `${DELAY_MS}ms,${DELAY_MS}ms,${DELAY_MS}ms,${DELAY_MS}ms`,
  WEBHOOK_TIMEOUT: "1s",
  WEBHOOK_CLAIM_TIMEOUT: "3s",
  WEBHOOK_POLL_INTERVAL: "100ms"
}
const { WEBHOOK_ALLOW_PRIVATE_TARGETS: _, ...STRICT_ENV } = ENV

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const WEBHOOK_ID = /^whk_[0-7][0-9a-hjkmnp-tv-z]{25}$/
const EVENT_ID = /^evt_[0-7][0-9a-hjkmnp-tv-z]{25}$/
const DELIVERY_ID = /^dlv_[0-7][0-9a-hjkmnp-tv-z]{25}$/
const SIGNATURE = /^sha256=[0-9a-f]{64}$/
const PROJECT_EVENTS = ["project.created", "project.updated", "project.deleted"]

/**
 * Private targets allowed (the receiver is on loopback): one server per delivery recorder, each with its own users.
 * `server`, `ann` and `bob` are those of the recorder whose tests run (outside their blocks, the fast one: the
 * default).
 */
const DEFAULT_RECORDER = DELIVERY_RECORDERS[0]![0]
const recorders = new Map<string, { readonly server: Server; readonly ann: TestUser; readonly bob: TestUser }>()
let server: Server
let strict: Server // private targets refused
let receiver: Receiver
let ann: TestUser
let bob: TestUser
let sam: TestUser // on the strict server

/** The tests that follow run on the server of the `kind` recorder. */
const use = (kind: string) => {
  const chosen = recorders.get(kind)
  if (chosen === undefined) throw new Error(`no server for the ${kind} recorder`)
  ;({ server, ann, bob } = chosen)
}

beforeAll(async () => {
  receiver = startReceiver()
  const [started, strictServer] = await Promise.all([
    Promise.all(
      DELIVERY_RECORDERS.map(async ([kind, env]) => {
        const on = await startInProcess({ env: { ...ENV, ...env } })
        const [annOn, bobOn] = await Promise.all([on.user({ name: "Ann" }), on.user({ name: "Bob" })])
        return [kind, { server: on, ann: annOn, bob: bobOn }] as const
      })
    ),
    startInProcess({ env: STRICT_ENV })
  ])
  for (const [kind, set] of started) recorders.set(kind, set)
  use(DEFAULT_RECORDER)
  strict = strictServer
  sam = await strict.user({ name: "Sam" })
}, 60_000)
afterAll(async () => {
  await Promise.all([...[...recorders.values()].map((set) => stopWithin(set.server)), stopWithin(strict)])
  await receiver?.stop()
}, 20_000)

// Every test registers its own webhooks on paths of its own; they are deleted afterwards so that later
// tests' projects do not keep feeding them.
let pathCounter = 0
const newPath = (label = "hook") => `/${label}-${++pathCounter}`
const registered: Array<{ readonly key: string; readonly id: string; readonly on: Server }> = []
afterEach(async () => {
  const all = registered.splice(0)
  await Promise.all(all.map(({ key, id, on }) => on.request(`/v1/webhooks/${id}`, { method: "DELETE", key })))
})

const register = (user: TestUser, body: unknown, on: Server = server) =>
  on.request("/v1/webhooks", { method: "POST", key: user.key, body })

interface Hook {
  readonly id: string
  readonly url: string
  readonly path: string
  readonly events: Array<string>
  readonly secret: string
  readonly status: string
  readonly created_at: string
  readonly updated_at: string
}

/** Registers a webhook on a fresh receiver path; the secret is the generated one unless given. */
const hook = async (
  user: TestUser,
  options: { readonly path?: string; readonly events?: Array<string>; readonly secret?: string } = {}
): Promise<Hook> => {
  const path = options.path ?? newPath()
  const res = await register(user, {
    url: receiver.url(path),
    events: options.events ?? PROJECT_EVENTS,
    ...(options.secret !== undefined ? { secret: options.secret } : {})
  })
  expect(res.status).toBe(201)
  registered.push({ key: user.key, id: res.body.data.id, on: server })
  return { ...res.body.data, path, secret: options.secret ?? res.body.data.secret }
}

const createProject = async (user: TestUser, name: string, extra: Record<string, unknown> = {}) => {
  const res = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name, ...extra } })
  expect(res.status).toBe(201)
  return res.body.data as { id: string; name: string; status: string; owner_id: string; updated_at: string }
}

const getDelivery = (user: TestUser, hookId: string, deliveryId: string, on: Server = server) =>
  on.request(`/v1/webhooks/${hookId}/deliveries/${deliveryId}`, { key: user.key })

const listDeliveries = (user: TestUser, hookId: string, query = "", on: Server = server) =>
  on.request(`/v1/webhooks/${hookId}/deliveries${query}`, { key: user.key })

/** Polls one delivery until `until` accepts it. */
const deliveryWhen = (
  user: TestUser,
  hookId: string,
  deliveryId: string,
  until: (delivery: any) => boolean,
  options: { readonly on?: Server; readonly timeoutMs?: number } = {}
) =>
  eventually(
    async () => {
      const res = await getDelivery(user, hookId, deliveryId, options.on)
      return res.status === 200 && until(res.body.data) ? res.body.data : undefined
    },
    { timeoutMs: options.timeoutMs ?? 10_000, what: `delivery ${deliveryId}` }
  )

/** Creates a project as `user`, then follows the delivery that reached `created` first until it is delivered. */
const deliveredAfterCreate = async (user: TestUser, created: { id: string; path: string }, name: string) => {
  await createProject(user, name)
  const [first] = await receiver.waitFor(1, { path: created.path })
  return deliveryWhen(user, created.id, first!.headers["x-service-delivery"]!, (d) => d.status === "delivered")
}

/** Polls a webhook's delivery log until it holds a delivery `until` accepts. */
const firstDeliveryWhen = (
  user: TestUser,
  hookId: string,
  until: (delivery: any) => boolean,
  options: { readonly on?: Server; readonly timeoutMs?: number } = {}
) =>
  eventually(
    async () => {
      const res = await listDeliveries(user, hookId, "?per_page=100", options.on)
      return res.status === 200 ? res.body.data.find(until) : undefined
    },
    { timeoutMs: options.timeoutMs ?? 10_000, what: `a delivery of ${hookId}` }
  )

const hmacHex = (secret: string, body: string) => createHmac("sha256", secret).update(body, "utf8").digest("hex")
const eventOf = (request: ReceivedRequest) => JSON.parse(request.body)
const sleep = (ms: number) => Bun.sleep(ms)

describe("registration", () => {
  test("POST creates an active webhook: 201, whk_ id, every field, and a generated whsec_ secret shown once", async () => {
    const url = receiver.url(newPath())
    const res = await register(ann, { url, events: ["project.created", "project.deleted", "project.created"] })
    expect(res.status).toBe(201)
    const data = res.body.data
    registered.push({ key: ann.key, id: data.id, on: server })
    expect(data.id).toMatch(WEBHOOK_ID)
    expect(data).toMatchObject({ url, status: "active", failed_at: null })
    expect(data.events).toEqual(["project.created", "project.deleted"])
    expect(data.created_at).toMatch(TIMESTAMP)
    expect(data.updated_at).toBe(data.created_at)
    expect(data.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/)
    expect(Object.keys(data).sort()).toEqual([
      "created_at",
      "disabled_at",
      "events",
      "failed_at",
      "id",
      "previous_public_key",
      "public_key",
      "rate_limit",
      "secret",
      "signature",
      "status",
      "updated_at",
      "url"
    ])
    expect(res.body.meta.request_id).toMatch(/^req_/)

    const read = await server.request(`/v1/webhooks/${data.id}`, { key: ann.key })
    expect(read.status).toBe(200)
    expect(read.body.data).not.toHaveProperty("secret")
    const { secret: _secret, ...withoutSecret } = data
    expect(read.body.data).toEqual(withoutSecret)

    const list = await server.request("/v1/webhooks?per_page=100", { key: ann.key })
    expect(list.status).toBe(200)
    expect(list.body.meta).toMatchObject({ page: 1, per_page: 100 })
    expect(list.body.meta.total).toBeGreaterThanOrEqual(1)
    const listed = list.body.data.find((w: { id: string }) => w.id === data.id)
    // The list adds the webhook's health: none before its first attempt.
    expect(listed).toEqual({ ...withoutSecret, health: null })
    for (const item of list.body.data) expect(item).not.toHaveProperty("secret")
    expect(list.text).not.toContain(data.secret)

    // Two registrations get two different secrets.
    const other = await register(ann, { url: receiver.url(newPath()), events: ["project.created"] })
    registered.push({ key: ann.key, id: other.body.data.id, on: server })
    expect(other.body.data.secret).toMatch(/^whsec_[0-9A-Za-z]{32}$/)
    expect(other.body.data.secret).not.toBe(data.secret)
  })

  test("all nine event types can be subscribed to", async () => {
    const nine = [
      "project.created",
      "project.updated",
      "project.deleted",
      "member.invited",
      "member.joined",
      "member.removed",
      "deployment.started",
      "deployment.completed",
      "deployment.failed"
    ]
    const res = await register(ann, { url: receiver.url(newPath()), events: nine })
    expect(res.status).toBe(201)
    registered.push({ key: ann.key, id: res.body.data.id, on: server })
    expect([...res.body.data.events].sort()).toEqual([...nine].sort())
  })

  test("one webhook per URL per user: a second registration or a PUT onto a taken URL is 409; another user may use it", async () => {
    const first = await hook(ann)
    const again = await register(ann, { url: first.url, events: ["project.deleted"] })
    expect(again.status).toBe(409)
    expect(again.body.error).toMatchObject({ code: "conflict", status: 409 })
    const second = await hook(ann)
    const moved = await server.request(`/v1/webhooks/${second.id}`, {
      method: "PUT",
      key: ann.key,
      body: { url: first.url }
    })
    expect(moved.status).toBe(409)
    expect(moved.body.error.code).toBe("conflict")
    const unchanged = await server.request(`/v1/webhooks/${second.id}`, { key: ann.key })
    expect(unchanged.body.data.url).toBe(second.url)
    const bobs = await register(bob, { url: first.url, events: ["project.created"] })
    expect(bobs.status).toBe(201)
    registered.push({ key: bob.key, id: bobs.body.data.id, on: server })
    // A PUT that keeps its own URL is not a clash.
    const same = await server.request(`/v1/webhooks/${first.id}`, {
      method: "PUT",
      key: ann.key,
      body: { url: first.url }
    })
    expect(same.status).toBe(200)
  })

  test("a secret given on create is never echoed back", async () => {
    const res = await register(ann, {
      url: receiver.url(newPath()),
      events: ["project.created"],
      secret: "my-own-secret-0123456789"
    })
    expect(res.status).toBe(201)
    registered.push({ key: ann.key, id: res.body.data.id, on: server })
    expect(res.body.data).not.toHaveProperty("secret")
    expect(res.text).not.toContain("my-own-secret-0123456789")
    const read = await server.request(`/v1/webhooks/${res.body.data.id}`, { key: ann.key })
    expect(read.text).not.toContain("my-own-secret-0123456789")
  })

  test("PUT changes url, events and secret; the next delivery goes to the new url, signed with the new secret", async () => {
    const created = await hook(ann)
    const newUrlPath = newPath("moved")
    const res = await server.request(`/v1/webhooks/${created.id}`, {
      method: "PUT",
      key: ann.key,
      body: { url: receiver.url(newUrlPath), events: ["project.created"], secret: "rotated-secret-0123456789" }
    })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({
      id: created.id,
      url: receiver.url(newUrlPath),
      events: ["project.created"],
      status: "active",
      failed_at: null,
      created_at: created.created_at
    })
    expect(res.body.data).not.toHaveProperty("secret")
    expect(res.body.data.updated_at >= created.created_at).toBe(true)

    const project = await createProject(ann, "After PUT")
    const [request] = await receiver.waitFor(1, { path: newUrlPath })
    expect(eventOf(request!).data.id).toBe(project.id)
    expect(await verify("rotated-secret-0123456789", request!.body, request!.headers["x-service-signature"]!)).toBe(
      true
    )
    expect(await verify(created.secret, request!.body, request!.headers["x-service-signature"]!)).toBe(false)
    expect(receiver.requests(created.path)).toHaveLength(0)

    // A partial PUT leaves the other fields alone.
    const partial = await server.request(`/v1/webhooks/${created.id}`, {
      method: "PUT",
      key: ann.key,
      body: { events: ["project.deleted", "project.updated"] }
    })
    expect(partial.status).toBe(200)
    expect(partial.body.data.url).toBe(receiver.url(newUrlPath))
    expect([...partial.body.data.events].sort()).toEqual(["project.deleted", "project.updated"])
  })

  test("PUT with an empty body, a bad field, an unknown field or a read-only field is validation_failed", async () => {
    const created = await hook(ann)
    const cases: Array<[unknown, string]> = [
      [{}, ""],
      [{ secret: "short" }, "secret"],
      [{ url: "ftp://x" }, "url"],
      [{ events: [] }, "events"],
      [{ events: ["project.exploded"] }, "events.0"],
      [{ status: "failed" }, "status"],
      [{ id: "whk_01jd3xkq8w0000000000000000" }, "id"],
      [{ failed_at: null }, "failed_at"],
      [{ colour: "blue" }, "colour"]
    ]
    for (const [body, field] of cases) {
      const res = await server.request(`/v1/webhooks/${created.id}`, { method: "PUT", key: ann.key, body })
      expect({ body, status: res.status, code: res.body.error.code }).toEqual({
        body,
        status: 400,
        code: "validation_failed"
      })
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field)
    }
    const unchanged = await server.request(`/v1/webhooks/${created.id}`, { key: ann.key })
    expect(unchanged.body.data.updated_at).toBe(created.updated_at)
  })

  test("DELETE answers 204, then the webhook is 404 everywhere", async () => {
    const created = await hook(ann)
    const deleted = await server.request(`/v1/webhooks/${created.id}`, { method: "DELETE", key: ann.key })
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe("")
    for (const [method, path] of [
      ["GET", ""],
      ["PUT", ""],
      ["DELETE", ""],
      ["GET", "/deliveries"]
    ] as const) {
      const res = await server.request(`/v1/webhooks/${created.id}${path}`, {
        method,
        key: ann.key,
        ...(method === "PUT" ? { body: { events: ["project.created"] } } : {})
      })
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 })
      expect(res.body.error.code).toBe("not_found")
    }
    const list = await server.request("/v1/webhooks?per_page=100", { key: ann.key })
    expect(list.body.data.map((w: { id: string }) => w.id)).not.toContain(created.id)
    // And nothing is delivered to it any more.
    await createProject(ann, "After delete")
    await sleep(300)
    expect(receiver.requests(created.path)).toHaveLength(0)
  })

  test("another user's webhook is 404 on GET, PUT, DELETE, its deliveries, one delivery and retry — and is untouched", async () => {
    const annHook = await hook(ann, { events: ["project.created"] })
    await createProject(ann, "For the log")
    const [request] = await receiver.waitFor(1, { path: annHook.path })
    const deliveryId = request!.headers["x-service-delivery"]!
    const base = `/v1/webhooks/${annHook.id}`
    const attempts: Array<[string, string, unknown?]> = [
      ["GET", base],
      ["PUT", base, { url: receiver.url("/hijacked") }],
      ["DELETE", base],
      ["GET", `${base}/deliveries`],
      ["GET", `${base}/deliveries/${deliveryId}`],
      ["POST", `${base}/deliveries/${deliveryId}/retry`]
    ]
    for (const [method, path, body] of attempts) {
      const res = await server.request(path, { method, key: bob.key, ...(body !== undefined ? { body } : {}) })
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 })
      expect(res.body.error.code).toBe("not_found")
    }
    const bobs = await server.request("/v1/webhooks?per_page=100", { key: bob.key })
    expect(bobs.body.data.map((w: { id: string }) => w.id)).not.toContain(annHook.id)
    const still = await server.request(base, { key: ann.key })
    expect(still.body.data.url).toBe(annHook.url)
    await sleep(200)
    expect(receiver.requests(annHook.path)).toHaveLength(1) // Bob's retry did not redeliver
    expect(receiver.requests("/hijacked")).toHaveLength(0)
  })

  test("unknown and malformed webhook and delivery ids", async () => {
    const created = await hook(ann)
    const unknownHook = await server.request("/v1/webhooks/whk_01jd3xkq8w0000000000000000", { key: ann.key })
    expect(unknownHook.status).toBe(404)
    const malformed = await server.request("/v1/webhooks/nope", { key: ann.key })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error.details[0].field).toBe("id")
    const unknownDelivery = await getDelivery(ann, created.id, "dlv_01jd3xkq8w0000000000000000")
    expect(unknownDelivery.status).toBe(404)
    const unknownRetry = await server.request(
      `/v1/webhooks/${created.id}/deliveries/dlv_01jd3xkq8w0000000000000000/retry`,
      { method: "POST", key: ann.key }
    )
    expect(unknownRetry.status).toBe(404)
    const badDelivery = await getDelivery(ann, created.id, "evt_01jd3xkq8w0000000000000000")
    expect(badDelivery.status).toBe(400)
    expect(badDelivery.body.error.details[0].field).toBe("delivery_id")
  })

  test("scopes: a read-only key lists and reads webhooks but cannot create, change or delete them", async () => {
    const created = await hook(ann)
    const keyRes = await server.request("/v1/api-keys", {
      method: "POST",
      key: ann.key,
      body: { name: "read only", scopes: ["read"] }
    })
    expect(keyRes.status).toBe(201)
    const reader = keyRes.body.data.key as string
    expect((await server.request("/v1/webhooks", { key: reader })).status).toBe(200)
    expect((await server.request(`/v1/webhooks/${created.id}`, { key: reader })).status).toBe(200)
    const post = await server.request("/v1/webhooks", {
      method: "POST",
      key: reader,
      body: { url: receiver.url(newPath()), events: ["project.created"] }
    })
    expect(post.status).toBe(403)
    expect(post.body.error.code).toBe("forbidden")
    const put = await server.request(`/v1/webhooks/${created.id}`, {
      method: "PUT",
      key: reader,
      body: { events: ["project.created"] }
    })
    expect(put.status).toBe(403)
    const del = await server.request(`/v1/webhooks/${created.id}`, { method: "DELETE", key: reader })
    expect(del.status).toBe(403)
    const unauthenticated = await server.request("/v1/webhooks")
    expect(unauthenticated.status).toBe(401)
  })
})

describe("validation", () => {
  const long = `http://127.0.0.1/${"a".repeat(2048)}`
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ["url missing", { events: ["project.created"] }, "url"],
    ["url relative", { url: "/hooks/in", events: ["project.created"] }, "url"],
    ["url ftp", { url: "ftp://x", events: ["project.created"] }, "url"],
    ["url not a URL", { url: "not a url", events: ["project.created"] }, "url"],
    ["url over 2048 characters", { url: long, events: ["project.created"] }, "url"],
    ["url with credentials", { url: "http://user:pw@127.0.0.1/x", events: ["project.created"] }, "url"],
    ["url not a string", { url: 42, events: ["project.created"] }, "url"],
    ["events missing", { url: "http://127.0.0.1/x" }, "events"],
    ["events empty", { url: "http://127.0.0.1/x", events: [] }, "events"],
    ["events unknown type", { url: "http://127.0.0.1/x", events: ["project.exploded"] }, "events.0"],
    ["events second unknown", { url: "http://127.0.0.1/x", events: ["project.created", "nope"] }, "events.1"],
    ["events not an array", { url: "http://127.0.0.1/x", events: "project.created" }, "events"],
    ["secret too short", { url: "http://127.0.0.1/x", events: ["project.created"], secret: "short" }, "secret"],
    ["secret too long", { url: "http://127.0.0.1/x", events: ["project.created"], secret: "s".repeat(257) }, "secret"],
    [
      "secret not a string",
      { url: "http://127.0.0.1/x", events: ["project.created"], secret: 1234567890123456 },
      "secret"
    ],
    ["unknown field", { url: "http://127.0.0.1/x", events: ["project.created"], active: true }, "active"],
    ["read-only field", { url: "http://127.0.0.1/x", events: ["project.created"], status: "active" }, "status"]
  ]
  test.each(cases)("%s → 400 validation_failed naming the field", async (_name, body, field) => {
    const res = await register(ann, body)
    expect(res.status).toBe(400)
    expect(res.body.error).toMatchObject({ code: "validation_failed", status: 400 })
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain(field)
    for (const detail of res.body.error.details) expect(typeof detail.message).toBe("string")
  })

  test("every bad field is reported at once, and nothing is created", async () => {
    const before = await server.request("/v1/webhooks", { key: ann.key })
    const res = await register(ann, { url: "ftp://x", events: ["project.exploded"], secret: "short" })
    expect(res.status).toBe(400)
    expect(res.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(["events.0", "secret", "url"])
    const events = res.body.error.details.find((d: { field: string }) => d.field === "events.0")
    expect(events.message).toContain("project.created")
    const after = await server.request("/v1/webhooks", { key: ann.key })
    expect(after.body.meta.total).toBe(before.body.meta.total)
  })

  test("a body that is not a JSON object is bad_request", async () => {
    const res = await server.request("/v1/webhooks", {
      method: "POST",
      key: ann.key,
      rawBody: "[]",
      headers: { "content-type": "application/json" }
    })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe("bad_request")
  })
})

describe("delivery: who gets which event", () => {
  test("project.updated and project.deleted carry the project record; each hook gets only the types it subscribes to", async () => {
    const deletedOnly = await hook(ann, { events: ["project.deleted"] })
    const all = await hook(ann, { events: PROJECT_EVENTS })
    const createdOnly = await hook(ann, { events: ["project.created"] })

    const project = await createProject(ann, "Three events")
    const [createdAll] = await receiver.waitFor(1, { path: all.path })
    const [createdCreated] = await receiver.waitFor(1, { path: createdOnly.path })
    // One event, two deliveries: the same event id, different delivery ids.
    expect(createdAll!.headers["x-service-event-id"]).toBe(createdCreated!.headers["x-service-event-id"]!)
    expect(createdAll!.headers["x-service-delivery"]).not.toBe(createdCreated!.headers["x-service-delivery"]!)
    expect(createdAll!.body).toBe(createdCreated!.body)

    const updatedRes = await server.request(`/v1/projects/${project.id}`, {
      method: "PUT",
      key: ann.key,
      body: { name: "Renamed", status: "archived" }
    })
    expect(updatedRes.status).toBe(200)
    const updated = await receiver.waitFor(2, { path: all.path })
    const updateEvent = eventOf(updated[1]!)
    expect(updated[1]!.headers["x-service-event"]).toBe("project.updated")
    expect(updateEvent.type).toBe("project.updated")
    expect(updateEvent.data).toEqual(updatedRes.body.data)
    expect(updateEvent.data).toMatchObject({ id: project.id, name: "Renamed", status: "archived" })
    expect(await verify(all.secret, updated[1]!.body, updated[1]!.headers["x-service-signature"]!)).toBe(true)

    const deleted = await server.request(`/v1/projects/${project.id}`, { method: "DELETE", key: ann.key })
    expect(deleted.status).toBe(204)
    const afterDelete = await receiver.waitFor(3, { path: all.path })
    const [onlyDeleted] = await receiver.waitFor(1, { path: deletedOnly.path })
    for (const request of [afterDelete[2]!, onlyDeleted!]) {
      expect(request.headers["x-service-event"]).toBe("project.deleted")
      const event = eventOf(request)
      expect(event.type).toBe("project.deleted")
      expect(event.data).toEqual(updatedRes.body.data)
    }
    expect(await verify(deletedOnly.secret, onlyDeleted!.body, onlyDeleted!.headers["x-service-signature"]!)).toBe(true)

    await sleep(400)
    // project.deleted-only hook got nothing for create and update; the created-only hook nothing after create.
    expect(receiver.requests(deletedOnly.path)).toHaveLength(1)
    expect(receiver.requests(createdOnly.path)).toHaveLength(1)
    expect(receiver.requests(all.path).map((r) => r.headers["x-service-event"])).toEqual(PROJECT_EVENTS)
    const log = await listDeliveries(ann, deletedOnly.id)
    expect(log.body.meta.total).toBe(1)
    expect(log.body.data[0].event_type).toBe("project.deleted")
  })

  test("a host name is resolved and pinned, the Host header keeps the name; a non-ASCII secret signs as UTF-8", async () => {
    const path = newPath("named")
    const url = `http://localhost:${new URL(receiver.origin).port}${path}`
    const secret = "sëcrét-ünïcødé-✓-0123456789"
    const res = await register(ann, { url, events: ["project.created"], secret })
    expect(res.status).toBe(201)
    registered.push({ key: ann.key, id: res.body.data.id, on: server })
    expect(res.body.data.url).toBe(url)
    await createProject(ann, "By name")
    const [request] = await receiver.waitFor(1, { path })
    expect(request!.headers.host).toBe(`localhost:${new URL(receiver.origin).port}`)
    expect(await verify(secret, request!.body, request!.headers["x-service-signature"]!)).toBe(true)
    expect(request!.headers["x-service-signature"]).toBe(`sha256=${hmacHex(secret, request!.body)}`)
  })

  test("another user's project events never reach my webhook", async () => {
    const annHook = await hook(ann)
    const bobProject = await createProject(bob, "Bob's project")
    await server.request(`/v1/projects/${bobProject.id}`, {
      method: "PUT",
      key: bob.key,
      body: { name: "Bob's renamed" }
    })
    await server.request(`/v1/projects/${bobProject.id}`, { method: "DELETE", key: bob.key })
    const annProject = await createProject(ann, "Ann's project")
    await receiver.waitFor(1, { path: annHook.path })
    await sleep(400)
    const received = receiver.requests(annHook.path)
    expect(received).toHaveLength(1)
    expect(eventOf(received[0]!).data.id).toBe(annProject.id)
    expect(receiver.requests().some((r) => r.body.includes(bobProject.id))).toBe(false)
  })

  test("a team project's events go to its owner and the team's owners and admins, not to plain members", async () => {
    const [erin, frank] = await Promise.all([server.user({ name: "Erin" }), server.user({ name: "Frank" })])
    const team = await server.fixtures.team("Webhook team", ann.id)
    await server.fixtures.addMember(team.id, bob.id, "member")
    await server.fixtures.addMember(team.id, erin.id, "admin")
    await server.fixtures.addMember(team.id, frank.id, "member")
    const hooks = {
      ann: await hook(ann, { events: ["project.created"] }), // team owner
      bob: await hook(bob, { events: ["project.created"] }), // project owner (a plain member)
      erin: await hook(erin, { events: ["project.created"] }), // team admin
      frank: await hook(frank, { events: ["project.created"] }) // plain member
    }
    const project = await createProject(bob, "Team work", { visibility: "team", team_id: team.id })
    for (const who of ["ann", "bob", "erin"] as const) {
      const [request] = await receiver.waitFor(1, { path: hooks[who].path })
      expect(eventOf(request!).data.id).toBe(project.id)
      expect(await verify(hooks[who].secret, request!.body, request!.headers["x-service-signature"]!)).toBe(true)
    }
    await sleep(400)
    expect(receiver.requests(hooks.frank.path)).toHaveLength(0)
    // One event for all of them.
    const eventIds = new Set(
      (["ann", "bob", "erin"] as const).map(
        (who) => receiver.requests(hooks[who].path)[0]!.headers["x-service-event-id"]
      )
    )
    expect(eventIds.size).toBe(1)
  }, 30_000)
})

// Everything that records an attempt's outcome, on each recorder.
describe.each(DELIVERY_RECORDERS.map(([kind]) => kind))("with the %s delivery recorder", (kind) => {
  beforeAll(() => use(kind))
  afterAll(() => use(DEFAULT_RECORDER))

  test("the server's delivery worker runs it", () => {
    expect(deliveryRecorderOf(server)).toBe(kind)
  })

  describe("delivery", () => {
    test("project.created: exactly one signed POST with the documented headers and the event envelope", async () => {
      const created = await hook(ann, { events: ["project.created"] })
      const project = await createProject(ann, "Signed delivery", { description: "with ünïcødé ✓" })
      const [request] = await receiver.waitFor(1, { path: created.path })
      const r = request!
      expect(r.method).toBe("POST")
      expect(r.headers["content-type"]).toMatch(/^application\/json/)
      expect(r.headers["user-agent"]).toMatch(/\S/)
      expect(r.headers["x-service-event"]).toBe("project.created")
      expect(r.headers["x-service-event-id"]).toMatch(EVENT_ID)
      expect(r.headers["x-service-delivery"]).toMatch(DELIVERY_ID)
      const signatureHeader = r.headers["x-service-signature"]!
      expect(signatureHeader).toMatch(SIGNATURE)

      // The signature verifies over the raw body, with a standard verifier and by hand.
      expect(await verify(created.secret, r.body, signatureHeader)).toBe(true)
      expect(signatureHeader).toBe(`sha256=${hmacHex(created.secret, r.body)}`)
      expect(await verify("whsec_someOtherSecret0000000000000000", r.body, signatureHeader)).toBe(false)

      const event = eventOf(r)
      expect(Object.keys(event).sort()).toEqual(["actor", "created_at", "data", "id", "type"])
      expect(event.id).toBe(r.headers["x-service-event-id"])
      expect(event.type).toBe("project.created")
      expect(event.created_at).toMatch(TIMESTAMP)
      expect(event.data).toEqual(project)
      expect(event.data).toMatchObject({ id: project.id, name: "Signed delivery", status: "active" })

      // Exactly one: no second request arrives, and the log shows one delivered attempt.
      const delivery = await deliveryWhen(
        ann,
        created.id,
        r.headers["x-service-delivery"]!,
        (d) => d.status === "delivered"
      )
      await sleep(400)
      expect(receiver.requests(created.path)).toHaveLength(1)
      expect(delivery).toMatchObject({
        id: r.headers["x-service-delivery"],
        webhook_id: created.id,
        event_id: event.id,
        event_type: "project.created",
        status: "delivered",
        attempt_count: 1,
        next_attempt_at: null
      })
      expect(delivery.created_at).toMatch(TIMESTAMP)
      expect(delivery.last_attempt_at).toMatch(TIMESTAMP)
      expect(delivery.attempts).toHaveLength(1)
      expect(delivery.attempts[0]).toMatchObject({
        number: 1,
        status_code: 200,
        error: null,
        response_body: "ok",
        outcome: "succeeded"
      })
      expect(delivery.attempts[0].attempted_at).toBe(delivery.last_attempt_at)
      expect(Number.isInteger(delivery.attempts[0].duration_ms)).toBe(true)
      expect(delivery.attempts[0].duration_ms).toBeGreaterThanOrEqual(0)
    })
  })

  describe("retries", () => {
    test("500 four times, then 200: delivered on the 5th attempt, same delivery id, waits respected, every attempt recorded", async () => {
      const created = await hook(ann, { events: ["project.created"] })
      receiver.enqueue(created.path, ...[1, 2, 3, 4].map((n) => ({ status: 500, body: `nope ${n}` })), {
        status: 200,
        body: "finally"
      })
      const project = await createProject(ann, "Flaky receiver")
      const requests = await receiver.waitFor(5, { path: created.path, timeoutMs: 15_000 })
      const deliveryId = requests[0]!.headers["x-service-delivery"]!
      const delivery = await deliveryWhen(ann, created.id, deliveryId, (d) => d.status === "delivered")

      // Same delivery, same event, same signed bytes on every attempt.
      for (const request of requests) {
        expect(request.headers["x-service-delivery"]).toBe(deliveryId)
        expect(request.headers["x-service-event-id"]).toBe(delivery.event_id)
        expect(request.body).toBe(requests[0]!.body)
        expect(await verify(created.secret, request.body, request.headers["x-service-signature"]!)).toBe(true)
      }
      expect(eventOf(requests[0]!).data.id).toBe(project.id)
      // Each retry waits at least the configured delay after the previous failure was answered.
      for (let i = 1; i < requests.length; i++) {
        expect(requests[i]!.receivedMono - requests[i - 1]!.answeredMono!).toBeGreaterThanOrEqual(DELAY_MS - 1)
        expect(requests[i]!.receivedMono - requests[i - 1]!.receivedMono).toBeGreaterThanOrEqual(DELAY_MS)
      }

      expect(delivery).toMatchObject({ status: "delivered", attempt_count: 5, next_attempt_at: null })
      expect(delivery.attempts.map((a: any) => a.number)).toEqual([1, 2, 3, 4, 5])
      expect(delivery.attempts.map((a: any) => a.status_code)).toEqual([500, 500, 500, 500, 200])
      expect(delivery.attempts.map((a: any) => a.outcome)).toEqual([
        "failed",
        "failed",
        "failed",
        "failed",
        "succeeded"
      ])
      expect(delivery.attempts.map((a: any) => a.response_body)).toEqual([
        "nope 1",
        "nope 2",
        "nope 3",
        "nope 4",
        "finally"
      ])
      for (const attempt of delivery.attempts.slice(0, 4)) {
        expect(attempt.error).toMatch(/500/)
      }
      expect(delivery.attempts[4].error).toBeNull()
      for (const attempt of delivery.attempts) {
        expect(attempt.attempted_at).toMatch(TIMESTAMP)
        expect(Number.isInteger(attempt.duration_ms)).toBe(true)
        expect(Object.keys(attempt).sort()).toEqual([
          "attempted_at",
          "duration_ms",
          "error",
          "number",
          "outcome",
          "request_headers",
          "response_body",
          "response_headers",
          "status_code",
          "trigger"
        ])
        expect(attempt.trigger).toBe("schedule")
      }
      for (let i = 1; i < 5; i++) {
        const gap = Date.parse(delivery.attempts[i].attempted_at) - Date.parse(delivery.attempts[i - 1].attempted_at)
        expect(gap).toBeGreaterThanOrEqual(DELAY_MS)
      }
      expect(delivery.last_attempt_at).toBe(delivery.attempts[4].attempted_at)
      const webhook = await server.request(`/v1/webhooks/${created.id}`, { key: ann.key })
      expect(webhook.body.data).toMatchObject({ status: "active", failed_at: null })
      await sleep(DELAY_MS + 200)
      expect(receiver.requests(created.path)).toHaveLength(5)
    }, 30_000)

    test("500 five times: the delivery fails and the webhook is marked failed; a new event is still delivered and makes it active again", async () => {
      const created = await hook(ann, { events: ["project.created"] })
      receiver.enqueue(created.path, ...Array.from({ length: 5 }, () => ({ status: 500 })))
      await createProject(ann, "Always failing")
      const requests = await receiver.waitFor(5, { path: created.path, timeoutMs: 15_000 })
      const deliveryId = requests[0]!.headers["x-service-delivery"]!
      const failed = await deliveryWhen(ann, created.id, deliveryId, (d) => d.status === "failed")
      expect(failed).toMatchObject({ status: "failed", attempt_count: 5, next_attempt_at: null })
      expect(failed.attempts).toHaveLength(5)
      expect(failed.attempts.every((a: any) => a.outcome === "failed" && a.status_code === 500)).toBe(true)

      const webhook = await server.request(`/v1/webhooks/${created.id}`, { key: ann.key })
      expect(webhook.body.data.status).toBe("failed")
      expect(webhook.body.data.failed_at).toMatch(TIMESTAMP)
      expect(webhook.body.data.failed_at >= failed.last_attempt_at).toBe(true)
      const failedHooks = await server.request("/v1/webhooks?status=failed&per_page=100", { key: ann.key })
      expect(failedHooks.body.data.map((w: { id: string }) => w.id)).toContain(created.id)
      const activeHooks = await server.request("/v1/webhooks?status=active&per_page=100", { key: ann.key })
      expect(activeHooks.body.data.map((w: { id: string }) => w.id)).not.toContain(created.id)

      // No sixth automatic attempt.
      await sleep(DELAY_MS * 2 + 200)
      expect(receiver.requests(created.path)).toHaveLength(5)

      // A failed webhook still gets new events; a success makes it active again.
      const next = await createProject(ann, "After the failure")
      const all = await receiver.waitFor(6, { path: created.path })
      expect(eventOf(all[5]!).data.id).toBe(next.id)
      const recovered = await eventually(
        async () => {
          const res = await server.request(`/v1/webhooks/${created.id}`, { key: ann.key })
          return res.body.data.status === "active" ? res.body.data : undefined
        },
        { what: "the webhook to become active" }
      )
      expect(recovered.failed_at).toBeNull()
      const stillFailed = await getDelivery(ann, created.id, deliveryId)
      expect(stillFailed.body.data.status).toBe("failed")
    }, 30_000)

    test("manual retry: 202 with the delivery, one immediate extra attempt; a failure stays failed with no automatic retries, a success delivers", async () => {
      const created = await hook(ann, { events: ["project.created"] })
      receiver.enqueue(created.path, ...Array.from({ length: 6 }, () => ({ status: 503, body: "down" })))
      await createProject(ann, "Manual retry")
      const first = await receiver.waitFor(5, { path: created.path, timeoutMs: 15_000 })
      const deliveryId = first[0]!.headers["x-service-delivery"]!
      await deliveryWhen(ann, created.id, deliveryId, (d) => d.status === "failed")

      // Retry #1: the receiver still answers 503.
      const retriedAt = performance.now()
      const retry = await server.request(`/v1/webhooks/${created.id}/deliveries/${deliveryId}/retry`, {
        method: "POST",
        key: ann.key
      })
      expect(retry.status).toBe(202)
      expect(retry.body.data).toMatchObject({ id: deliveryId, webhook_id: created.id, event_type: "project.created" })
      expect(retry.body.data).not.toHaveProperty("attempts")
      expect(["pending", "failed"]).toContain(retry.body.data.status)
      expect(retry.body.meta.request_id).toMatch(/^req_/)
      const sixth = await receiver.waitFor(6, { path: created.path })
      expect(sixth[5]!.receivedMono - retriedAt).toBeLessThan(1000)
      expect(sixth[5]!.headers["x-service-delivery"]).toBe(deliveryId)
      // An extra attempt: listed as manual, not counted among the five scheduled ones.
      const afterFailedRetry = await deliveryWhen(
        ann,
        created.id,
        deliveryId,
        (d) => d.status === "failed" && d.attempts.length === 6
      )
      expect(afterFailedRetry.next_attempt_at).toBeNull()
      expect(afterFailedRetry.attempt_count).toBe(5)
      expect(afterFailedRetry.attempts[5]).toMatchObject({
        number: 6,
        status_code: 503,
        outcome: "failed",
        trigger: "manual"
      })
      // No automatic attempts follow a failed manual retry.
      await sleep(DELAY_MS * 3)
      expect(receiver.requests(created.path)).toHaveLength(6)
      const stillFailed = await getDelivery(ann, created.id, deliveryId)
      expect(stillFailed.body.data).toMatchObject({ status: "failed", attempt_count: 5 })
      const hookFailed = await server.request(`/v1/webhooks/${created.id}`, { key: ann.key })
      expect(hookFailed.body.data.status).toBe("failed")
      // The owner may set a failed webhook active again by hand.
      const reactivated = await server.request(`/v1/webhooks/${created.id}`, {
        method: "PUT",
        key: ann.key,
        body: { status: "active" }
      })
      expect(reactivated.status).toBe(200)
      expect(reactivated.body.data).toMatchObject({ status: "active", failed_at: null })

      // Retry #2: the receiver is back (default 200).
      const retry2 = await server.request(`/v1/webhooks/${created.id}/deliveries/${deliveryId}/retry`, {
        method: "POST",
        key: ann.key
      })
      expect(retry2.status).toBe(202)
      const delivered = await deliveryWhen(ann, created.id, deliveryId, (d) => d.status === "delivered")
      expect(delivered).toMatchObject({ attempt_count: 5, next_attempt_at: null })
      expect(delivered.attempts[6]).toMatchObject({
        number: 7,
        status_code: 200,
        outcome: "succeeded",
        error: null,
        trigger: "manual"
      })
      expect(receiver.requests(created.path)).toHaveLength(7)
      const hookActive = await server.request(`/v1/webhooks/${created.id}`, { key: ann.key })
      expect(hookActive.body.data).toMatchObject({ status: "active", failed_at: null })
      await sleep(DELAY_MS + 200)
      expect(receiver.requests(created.path)).toHaveLength(7)
    }, 30_000)
  })

  describe("failures that are not 5xx", () => {
    test("a receiver slower than WEBHOOK_TIMEOUT: the attempt times out with no status code, and the retry succeeds", async () => {
      const created = await hook(ann, { events: ["project.created"] })
      receiver.enqueue(created.path, { status: 200, delayMs: 1_800, body: "too late" })
      const delivery = await deliveredAfterCreate(ann, created, "Slow receiver")
      expect(delivery.attempt_count).toBe(2)
      const [timedOut, succeeded] = delivery.attempts
      expect(timedOut.outcome).toBe("failed")
      expect(timedOut.status_code).toBeNull()
      expect(timedOut.response_body).toBeNull()
      expect(timedOut.error).toMatch(/time(d)?[ -]?out/i)
      expect(timedOut.duration_ms).toBeGreaterThanOrEqual(900)
      expect(timedOut.duration_ms).toBeLessThan(1_800)
      expect(succeeded).toMatchObject({ number: 2, status_code: 200, outcome: "succeeded" })
    }, 20_000)

    test("3xx redirects are failures, recorded with their status, and their Location is never requested", async () => {
      const created = await hook(ann, { events: ["project.created"] })
      const elsewhere = newPath("elsewhere")
      receiver.enqueue(
        created.path,
        { status: 302, headers: { location: receiver.url(elsewhere) } },
        { status: 307, headers: { location: receiver.url(elsewhere) } },
        { status: 308, headers: { location: receiver.url(elsewhere) } }
      )
      const delivery = await deliveredAfterCreate(ann, created, "Redirected")
      expect(delivery.attempt_count).toBe(4)
      expect(delivery.attempts.map((a: any) => [a.status_code, a.outcome])).toEqual([
        [302, "failed"],
        [307, "failed"],
        [308, "failed"],
        [200, "succeeded"]
      ])
      for (const attempt of delivery.attempts.slice(0, 3)) expect(attempt.error).not.toBeNull()
      await sleep(200)
      expect(receiver.requests(elsewhere)).toHaveLength(0)
      expect(receiver.requests(created.path)).toHaveLength(4)
    }, 20_000)

    test("a 4xx is a failure too, and only the first 4 KiB of the response body is recorded", async () => {
      const created = await hook(ann, { events: ["project.created"] })
      const big = "0123456789abcdef".repeat(1024) // 16 KiB
      receiver.enqueue(created.path, { status: 410, body: big })
      const delivery = await deliveredAfterCreate(ann, created, "Gone receiver")
      expect(delivery.attempts[0]).toMatchObject({ number: 1, status_code: 410, outcome: "failed" })
      expect(delivery.attempts[0].response_body).toBe(big.slice(0, 4096))
      expect(delivery.attempts[1]).toMatchObject({ number: 2, status_code: 200, outcome: "succeeded" })
    })

    test("any 2xx is a success (201, 202, 204, 299), on the first attempt", async () => {
      const created = await hook(ann, { events: ["project.created"] })
      const statuses: Record<string, number> = { s201: 201, s202: 202, s204: 204, s299: 299 }
      receiver.setDefault(
        (request) => ({ status: statuses[eventOf(request).data.name as string] ?? 200 }),
        created.path
      )
      for (const name of Object.keys(statuses)) await createProject(ann, name)
      await receiver.waitFor(4, { path: created.path })
      const rows = await eventually(
        async () => {
          const res = await listDeliveries(ann, created.id, "?status=delivered")
          return res.body.meta.total === 4 ? res.body.data : undefined
        },
        { what: "four delivered" }
      )
      for (const row of rows) expect(row.attempt_count).toBe(1)
      const codes = await Promise.all(
        rows.map(async (row: any) => (await getDelivery(ann, created.id, row.id)).body.data.attempts[0].status_code)
      )
      expect(codes.sort()).toEqual([201, 202, 204, 299])
      await sleep(DELAY_MS + 200)
      expect(receiver.requests(created.path)).toHaveLength(4)
    })

    test("a connection error is a failure with no status code and the error text", async () => {
      const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") })
      const port = closed.port
      await closed.stop(true)
      const res = await register(ann, { url: `http://127.0.0.1:${port}/nothing-here`, events: ["project.created"] })
      expect(res.status).toBe(201)
      registered.push({ key: ann.key, id: res.body.data.id, on: server })
      await createProject(ann, "Nobody listening")
      const delivery = await firstDeliveryWhen(ann, res.body.data.id, (d) => d.attempt_count >= 1)
      const full = await getDelivery(ann, res.body.data.id, delivery.id)
      expect(full.body.data.attempts[0]).toMatchObject({
        number: 1,
        status_code: null,
        response_body: null,
        outcome: "failed"
      })
      expect(full.body.data.attempts[0].error).toMatch(/^connection failed/)
    })
  })

  describe("GET /v1/webhooks/:id/deliveries", () => {
    test("list envelope, status filter pending | delivered | failed, unknown status is validation_failed", async () => {
      const created = await hook(ann, { events: ["project.created"] })
      receiver.setDefault((request) => {
        const name = eventOf(request).data.name as string
        if (name === "fails") return { status: 500 }
        if (name === "slow") return { status: 200, delayMs: 800 }
        return { status: 200 }
      }, created.path)
      const ok = await createProject(ann, "ok")
      const fails = await createProject(ann, "fails")
      await receiver.waitFor(6, { path: created.path, timeoutMs: 15_000 })
      await firstDeliveryWhen(ann, created.id, (d) => d.status === "failed")
      const slow = await createProject(ann, "slow")
      await receiver.waitFor(7, { path: created.path })

      // The slow one is in flight now: pending.
      const pending = await listDeliveries(ann, created.id, "?status=pending")
      const delivered = await listDeliveries(ann, created.id, "?status=delivered")
      const failed = await listDeliveries(ann, created.id, "?status=failed")
      const all = await listDeliveries(ann, created.id)
      const eventIdOf = async (projectId: string) =>
        eventOf(receiver.requests(created.path).find((r) => eventOf(r).data.id === projectId)!).id
      expect(pending.status).toBe(200)
      expect(pending.body.data.map((d: any) => d.event_id)).toEqual([await eventIdOf(slow.id)])
      expect(delivered.body.data.map((d: any) => d.event_id)).toEqual([await eventIdOf(ok.id)])
      expect(failed.body.data.map((d: any) => d.event_id)).toEqual([await eventIdOf(fails.id)])
      expect(pending.body.data[0].status).toBe("pending")
      expect(all.body.meta).toMatchObject({ total: 3, page: 1, per_page: 20 })
      expect(all.body.meta.request_id).toMatch(/^req_/)
      expect(all.body.data).toHaveLength(3)
      for (const item of all.body.data) {
        expect(Object.keys(item).sort()).toEqual([
          "attempt_count",
          "created_at",
          "event_id",
          "event_type",
          "id",
          "last_attempt_at",
          "last_status_code",
          "next_attempt_at",
          "resource_name",
          "status",
          "webhook_id"
        ])
        expect(item.id).toMatch(DELIVERY_ID)
        expect(item.webhook_id).toBe(created.id)
      }
      // Newest first by default.
      expect(all.body.data.map((d: any) => d.event_id)).toEqual([
        await eventIdOf(slow.id),
        await eventIdOf(fails.id),
        await eventIdOf(ok.id)
      ])
      const paged = await listDeliveries(ann, created.id, "?per_page=1&page=2&order=asc")
      expect(paged.body.meta).toMatchObject({ total: 3, page: 2, per_page: 1 })
      const link = paged.headers.get("link") ?? ""
      for (const rel of ["next", "prev", "first", "last"]) expect(link).toContain(`rel="${rel}"`)
      expect(link).toContain(`/v1/webhooks/${created.id}/deliveries?`)
      expect(paged.body.data.map((d: any) => d.event_id)).toEqual([await eventIdOf(fails.id)])

      const bad = await listDeliveries(ann, created.id, "?status=bogus")
      expect(bad.status).toBe(400)
      expect(bad.body.error.code).toBe("validation_failed")
      expect(bad.body.error.details[0].field).toBe("status")
      const badStatusForDeliveries = await listDeliveries(ann, created.id, "?status=active")
      expect(badStatusForDeliveries.status).toBe(400)

      // And the slow one ends delivered.
      await eventually(
        async () => {
          const res = await listDeliveries(ann, created.id, "?status=delivered")
          return res.body.meta.total === 2 ? true : undefined
        },
        { what: "the slow delivery to be delivered" }
      )
    }, 30_000)
  })
})

describe("tracing", () => {
  // decisions.md (Webhooks: "Delivery request … headers … `traceparent`"; Observability: "the attempt sends
  // `traceparent` to the receiver").
  test("each delivery carries a W3C traceparent header", async () => {
    const created = await hook(ann, { events: ["project.created"] })
    await createProject(ann, "Traced")
    const [request] = await receiver.waitFor(1, { path: created.path })
    expect(request!.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[0-9a-f]$/)
  })
})

describe("SSRF guard (private targets refused)", () => {
  test.each([
    "http://127.0.0.1:9/x",
    "http://localhost/x",
    "http://[::1]/x",
    "http://10.0.0.1/x",
    "http://192.168.1.1/x",
    "http://169.254.169.254/latest/meta-data",
    "http://172.16.0.1/x",
    "http://[fd00:ec2::254]/x",
    "http://0.0.0.0/x",
    "http://2130706433/x",
    "http://[::ffff:127.0.0.1]/x"
  ])("registering %s is validation_failed on url", async (url) => {
    const res = await register(sam, { url, events: ["project.created"] }, strict)
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe("validation_failed")
    expect(res.body.error.details).toHaveLength(1)
    expect(res.body.error.details[0].field).toBe("url")
    expect(res.body.error.details[0].message).toMatch(/loopback, private, link-local or reserved/)
  })

  test("connect time: a loopback webhook written behind the API's back is refused when delivering; nothing is sent", async () => {
    const path = newPath("ssrf")
    const namedPath = newPath("ssrf-named")
    const id = makeId("webhook")
    const namedId = makeId("webhook")
    const now = new Date().toISOString()
    const row = {
      user_id: sam.id,
      events: JSON.stringify(["project.created"]),
      secret: "a-secret-for-the-ssrf-test",
      status: "active",
      created_at: now,
      updated_at: now,
      failed_at: null
    }
    await insertWebhookRow(strict.databaseUrl, { ...row, id, url: receiver.url(path) })
    await insertWebhookRow(strict.databaseUrl, {
      ...row,
      id: namedId,
      url: `http://localhost:${new URL(receiver.origin).port}${namedPath}`
    })
    registered.push({ key: sam.key, id, on: strict }, { key: sam.key, id: namedId, on: strict })
    const listed = await strict.request(`/v1/webhooks/${id}`, { key: sam.key })
    expect(listed.status).toBe(200)
    expect(listed.body.data.url).toBe(receiver.url(path))

    // Changing it through the API is refused too.
    const put = await strict.request(`/v1/webhooks/${id}`, {
      method: "PUT",
      key: sam.key,
      body: { url: "http://10.0.0.1/x" }
    })
    expect(put.status).toBe(400)
    expect(put.body.error.details[0].field).toBe("url")

    const project = await strict.request("/v1/projects", { method: "POST", key: sam.key, body: { name: "SSRF bait" } })
    expect(project.status).toBe(201)
    const first = await firstDeliveryWhen(sam, id, (d) => d.attempt_count >= 1, { on: strict })
    const detail = await getDelivery(sam, id, first.id, strict)
    const attempt = detail.body.data.attempts[0]
    expect(attempt).toMatchObject({ number: 1, status_code: null, response_body: null, outcome: "failed" })
    expect(attempt.error).toMatch(/^refused/)
    expect(attempt.error).toContain("127.0.0.1")

    // Every retry is refused the same way; the delivery and the webhook end failed.
    const failed = await deliveryWhen(sam, id, first.id, (d) => d.status === "failed", { on: strict })
    expect(failed.attempts).toHaveLength(5)
    for (const a of failed.attempts) expect(a.error).toMatch(/^refused/)
    const webhook = await strict.request(`/v1/webhooks/${id}`, { key: sam.key })
    expect(webhook.body.data.status).toBe("failed")

    // A name that resolves to loopback is refused the same way.
    const named = await firstDeliveryWhen(sam, namedId, (d) => d.attempt_count >= 1, { on: strict })
    const namedDetail = await getDelivery(sam, namedId, named.id, strict)
    expect(namedDetail.body.data.attempts[0].error).toMatch(/^refused/)
    expect(namedDetail.body.data.attempts[0].error).toContain("localhost")
    expect(namedDetail.body.data.attempts[0].status_code).toBeNull()

    expect(receiver.requests(path)).toHaveLength(0)
    expect(receiver.requests(namedPath)).toHaveLength(0)
  }, 20_000)
})

// Each on the server in this process, the start-up code `main` runs; a process refusing one of them (it exits, the
// message on its output) is test/e2e/config.test.ts's.
describe("settings", () => {
  test.each([
    [{ WEBHOOK_TIMEOUT: "2s", WEBHOOK_CLAIM_TIMEOUT: "1s" }, "WEBHOOK_CLAIM_TIMEOUT must exceed WEBHOOK_TIMEOUT"],
    [{ WEBHOOK_TIMEOUT: "1s", WEBHOOK_CLAIM_TIMEOUT: "1s" }, "WEBHOOK_CLAIM_TIMEOUT must exceed WEBHOOK_TIMEOUT"],
    [{ WEBHOOK_RETRY_DELAYS: "1m,5m" }, "WEBHOOK_RETRY_DELAYS"],
    [{ WEBHOOK_RETRY_DELAYS: "1m,5m,30m,soon" }, "WEBHOOK_RETRY_DELAYS"],
    [{ WEBHOOK_TIMEOUT: "soon" }, "WEBHOOK_TIMEOUT"],
    [{ WEBHOOK_CONCURRENCY: "0" }, "WEBHOOK_CONCURRENCY"],
    [{ WEBHOOK_POLL_INTERVAL: "often" }, "WEBHOOK_POLL_INTERVAL"]
  ])(
    "%o stops start-up with a message naming the setting",
    async (env, message) => {
      const error = await startupFailureInProcess(env)
      expect(error).toBeInstanceOf(Error)
      expect(String(error)).toContain("stopped before listening")
      expect(String(error)).toContain(message)
    },
    60_000
  )
})

/** Writes a webhook row straight into a server's database (bypassing the registration check). */
const insertWebhookRow = async (databaseUrl: string, written: Record<string, string | null>) => {
  // Its secret stored as the server stores one (encrypted), so the worker can sign with it.
  const row = { ...written, secret: await storedSecret(databaseUrl, written.secret ?? "", written.id ?? "") }
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    const sql = sqlOn(databaseUrl)
    try {
      await sql`INSERT INTO webhooks ${sql(row)}`
    } finally {
      await sql.close()
    }
    return
  }
  const db = new Database(databaseUrl.replace(/^sqlite:(\/\/)?/, ""))
  try {
    db.exec("PRAGMA busy_timeout = 5000")
    const columns = Object.keys(row)
    db.query(`INSERT INTO webhooks (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`).run(
      ...Object.values(row)
    )
  } finally {
    db.close()
  }
}
