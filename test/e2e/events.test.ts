/**
 * The events feed over HTTP, where the bytes and headers matter: each item is the body a receiver got, byte for
 * byte, in the list and alone; `Link` headers and the exact total; the `type` filter's validation; 404 for an event
 * outside the caller's audience; 403 for a credential without `read`. The audience rules themselves are tested
 * in-process (test/events/feed.service.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "300ms,300ms,300ms,300ms",
  WEBHOOK_POLL_INTERVAL: "100ms"
}

let server: Server
let receiver: Receiver
let ann: TestUser
let bob: TestUser
/** The bodies Ann's webhook received, oldest first. */
let delivered: Array<string> = []

beforeAll(async () => {
  receiver = startReceiver()
  server = await startInProcess({ env: ENV })
  ann = await server.user({ name: "Ann" })
  bob = await server.user({ name: "Bob" })
  const hook = await server.request("/v1/webhooks", {
    method: "POST",
    key: ann.key,
    body: { url: receiver.url("/ann"), events: ["project.created", "project.updated", "project.deleted"] }
  })
  expect(hook.status).toBe(201)
  // Names and descriptions that JSON escapes, so the bytes compared are not only ASCII.
  for (const [i, name] of ["Ünïcode “quoted” \\ back", "Tab\there", "Emoji 🚀 </script>"].entries()) {
    const created = await server.request("/v1/projects", { method: "POST", key: ann.key, body: { name } })
    expect(created.status).toBe(201)
    const updated = await server.request(`/v1/projects/${created.body.data.id}`, {
      method: "PUT",
      key: ann.key,
      body: { description: `line\nbreak ${i}` }
    })
    expect(updated.status).toBe(200)
  }
  await receiver.waitFor(6, { path: "/ann", timeoutMs: 20_000 })
  delivered = receiver.requests("/ann").map((request) => request.body)
}, 60_000)
afterAll(async () => {
  await server?.stop()
  await receiver?.stop()
}, 20_000)

/** The delivered bodies, newest first (the feed's order), by event id. */
const newestFirst = () => {
  const byId = new Map(delivered.map((body) => [JSON.parse(body).id as string, body]))
  return [...byId.keys()]
    .sort((a, b) => {
      const x = JSON.parse(byId.get(a)!).created_at
      const y = JSON.parse(byId.get(b)!).created_at
      return x === y ? (a < b ? 1 : -1) : x < y ? 1 : -1
    })
    .map((id) => byId.get(id)!)
}

describe("GET /v1/events", () => {
  test("each item is the delivered body, byte for byte, newest first, with the exact total", async () => {
    const res = await server.request("/v1/events", { key: ann.key })
    expect(res.status).toBe(200)
    expect(delivered).toHaveLength(6)
    expect(res.text.startsWith(`{"data":[${newestFirst().join(",")}],"meta":{`)).toBe(true)
    expect(res.body.meta).toMatchObject({ total: 6, page: 1, per_page: 20 })
  })

  test("GET /v1/events/:id is the delivered body, byte for byte", async () => {
    for (const body of delivered) {
      const id = JSON.parse(body).id
      const res = await server.request(`/v1/events/${id}`, { key: ann.key })
      expect(res.status).toBe(200)
      expect(res.text.startsWith(`{"data":${body},"meta":{"request_id":`)).toBe(true)
    }
  })

  test("pages with Link headers, keeping the filter", async () => {
    const res = await server.request("/v1/events?type=project.created&per_page=2&page=1", { key: ann.key })
    expect(res.status).toBe(200)
    expect(res.body.meta).toMatchObject({ total: 3, page: 1, per_page: 2 })
    const link = res.headers.get("link") ?? ""
    expect(link).toContain('rel="next"')
    expect(link).toContain("type=project.created")
    expect(link).toContain("page=2")
    const created = newestFirst().filter((body) => JSON.parse(body).type === "project.created")
    expect(res.text.startsWith(`{"data":[${created.slice(0, 2).join(",")}],`)).toBe(true)
    const next = await server.request("/v1/events?type=project.created&per_page=2&page=2", { key: ann.key })
    expect(next.text.startsWith(`{"data":[${created[2]}],`)).toBe(true)
    expect(next.headers.get("link")).not.toContain('rel="next"')
    expect(next.headers.get("link")).toContain('rel="prev"')
  })

  test("type takes several types separated by commas", async () => {
    const res = await server.request("/v1/events?type=project.updated,project.deleted", { key: ann.key })
    expect(res.status).toBe(200)
    expect(res.body.meta.total).toBe(3)
    expect(res.body.data.map((e: { type: string }) => e.type)).toEqual([
      "project.updated",
      "project.updated",
      "project.updated"
    ])
  })

  test("an unknown, empty or misspelt type is 400 validation_failed naming `type`", async () => {
    for (const type of ["project.archived", "project.created,nope", "", "project.created,", "PROJECT.CREATED"]) {
      const res = await server.request(`/v1/events?type=${encodeURIComponent(type)}`, { key: ann.key })
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe("validation_failed")
      expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(["type"])
      expect(res.body.error.details[0].message).toContain("project.created")
    }
  })

  test("created_after and per_page are validated as on other lists", async () => {
    for (const [query, field] of [
      ["created_after=yesterday", "created_after"],
      ["created_before=2026-02-31", "created_before"],
      ["per_page=500", "per_page"],
      ["page=0", "page"]
    ]) {
      const bad = await server.request(`/v1/events?${query}`, { key: ann.key })
      expect(bad.status).toBe(400)
      expect(bad.body.error.code).toBe("validation_failed")
      expect(bad.body.error.details.map((d: { field: string }) => d.field)).toEqual([field])
    }
  })

  test("someone else's feed does not hold them", async () => {
    const res = await server.request("/v1/events", { key: bob.key })
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ data: [], meta: { total: 0 } })
  })
})

describe("access", () => {
  test("an event outside the caller's audience is 404 not_found, as is an unknown one; a malformed id is 400", async () => {
    const id = JSON.parse(delivered[0]!).id
    const other = await server.request(`/v1/events/${id}`, { key: bob.key })
    expect(other.status).toBe(404)
    expect(other.body.error.code).toBe("not_found")
    const unknown = await server.request("/v1/events/evt_01jd3xkq8w0000000000000000", { key: ann.key })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.code).toBe("not_found")
    const malformed = await server.request("/v1/events/proj_01jd3xkq8w0000000000000000", { key: ann.key })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error.code).toBe("validation_failed")
  })

  test("a credential without `read` is 403 on both endpoints", async () => {
    const narrow = await server.user({ name: "Narrow", scopes: "projects:read,write" })
    for (const path of ["/v1/events", `/v1/events/${JSON.parse(delivered[0]!).id}`]) {
      const res = await server.request(path, { key: narrow.key })
      expect(res.status).toBe(403)
      expect(res.body.error.code).toBe("forbidden")
    }
    const reader = await server.user({ name: "Reader", scopes: "read" })
    expect((await server.request("/v1/events", { key: reader.key })).status).toBe(200)
  })
})
