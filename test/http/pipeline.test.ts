/**
 * The request pipeline as a client sees it (docs/request-pipeline.md): a body is parsed once, whatever the method,
 * and every answer carries the headers each step learned — on a success and on a failure alike, since no step
 * shares a mutable object with another: the one that learns a header puts it on the response (or, for a failure,
 * on the response the platform makes of it).
 */
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test"
import { stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Response, Server } from "../support/server.ts"

/** Different, so each answer shows which bucket it was counted against. */
const PER_CREDENTIAL = 1000
const PER_CLIENT_IP = 500

let server: Server
beforeAll(async () => {
  server = await startInProcess({
    env: { RATE_LIMIT_PER_MINUTE: String(PER_CREDENTIAL), RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: String(PER_CLIENT_IP) }
  })
}, 60_000)
afterAll(async () => {
  await stopWithin(server)
}, 30_000)

/** How many times the server parsed exactly `text` as JSON while `send` ran (the server runs in this process). */
const parsesOf = async (text: string, send: () => Promise<Response>): Promise<{ status: number; parses: number }> => {
  const spy = spyOn(JSON, "parse")
  try {
    const res = await send()
    return { status: res.status, parses: spy.mock.calls.filter(([parsed]) => parsed === text).length }
  } finally {
    spy.mockRestore()
  }
}

describe("a body is parsed once", () => {
  test("a PUT's: the checks before routing parse it, the payload is decoded from that", async () => {
    const user = await server.user()
    const created = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "Once" } })
    expect(created.status).toBe(201)
    const text = JSON.stringify({ name: `Renamed ${crypto.randomUUID()}` })
    const put = () =>
      server.request(`/v1/projects/${created.body.data.id}`, {
        method: "PUT",
        key: user.key,
        rawBody: text,
        headers: { "content-type": "application/json" }
      })
    expect(await parsesOf(text, put)).toEqual({ status: 200, parses: 1 })
  })

  test("a PUT's invalid payload: still once, and validation_failed names the field", async () => {
    const user = await server.user()
    const created = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "Once" } })
    const text = JSON.stringify({ name: "", marker: crypto.randomUUID() })
    let body: any
    const put = async () => {
      const res = await server.request(`/v1/projects/${created.body.data.id}`, {
        method: "PUT",
        key: user.key,
        rawBody: text,
        headers: { "content-type": "application/json" }
      })
      body = res.body
      return res
    }
    expect(await parsesOf(text, put)).toEqual({ status: 400, parses: 1 })
    expect(body.error.code).toBe("validation_failed")
  })

  test("a keyed POST's: the key's hash and the payload both come from the one parse", async () => {
    const user = await server.user()
    const text = JSON.stringify({ name: `Keyed ${crypto.randomUUID()}` })
    const post = () =>
      server.request("/v1/projects", {
        method: "POST",
        key: user.key,
        rawBody: text,
        headers: { "content-type": "application/json", "idempotency-key": crypto.randomUUID() }
      })
    expect(await parsesOf(text, post)).toEqual({ status: 201, parses: 1 })
  })
})

const CORS = "access-control-allow-origin"

/**
 * The headers every `/v1` answer carries: its request id, CORS, and the bucket it was counted against (the
 * credential's when the endpoint's `Authentication` counted it, else the client IP's).
 */
const expectCommon = (res: Response, bucket: number = PER_CREDENTIAL) => {
  expect(res.headers.get("x-request-id")).toMatch(/^req_/)
  if (res.body?.error !== undefined) expect(res.body.error.request_id).toBe(res.headers.get("x-request-id"))
  expect(res.headers.get(CORS)).toBe("*")
  expect(res.headers.get("access-control-expose-headers")).toContain("Idempotent-Replayed")
  expect(res.headers.get("x-ratelimit-limit")).toBe(String(bucket))
  expect(Number(res.headers.get("x-ratelimit-remaining"))).toBeLessThan(bucket)
}

describe("every answer carries the headers its steps learned", () => {
  test("a success: ETag from the conditional step, the credential's bucket from Authentication", async () => {
    const user = await server.user()
    const created = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "Tagged" } })
    const res = await server.request(`/v1/projects/${created.body.data.id}`, { key: user.key })
    expect(res.status).toBe(200)
    expectCommon(res)
    expect(res.headers.get("etag")).toMatch(/^"/)
    expect(res.headers.get("retry-after")).toBeNull()
    expect(res.headers.get("www-authenticate")).toBeNull()
  })

  test("a keyed replay: Idempotent-Replayed beside the rest", async () => {
    const user = await server.user()
    const key = crypto.randomUUID()
    const send = () =>
      server.request("/v1/projects", {
        method: "POST",
        key: user.key,
        body: { name: "Replayed" },
        headers: { "idempotency-key": key }
      })
    expect((await send()).status).toBe(201)
    const again = await send()
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expectCommon(again)
  })

  test("a handler's failure (404): the credential's bucket, CORS and the request id", async () => {
    const user = await server.user()
    const gone = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "Gone" } })
    const path = `/v1/projects/${gone.body.data.id}`
    expect((await server.request(path, { method: "DELETE", key: user.key })).status).toBe(204)
    const res = await server.request(path, { key: user.key })
    expect(res.status).toBe(404)
    expectCommon(res)
  })

  test("a payload refused (400): the same headers on a failure the endpoint answers", async () => {
    const user = await server.user()
    const res = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "" } })
    expect(res.status).toBe(400)
    expectCommon(res)
  })

  test("a bad Idempotency-Key: validation_failed naming the header as HTTP writes it", async () => {
    const user = await server.user()
    const res = await server.request("/v1/projects", {
      method: "POST",
      key: user.key,
      body: { name: "Bad key" },
      headers: { "idempotency-key": "two words" }
    })
    expect(res.status).toBe(400)
    expect(res.body.error.details[0]).toEqual({
      field: "Idempotency-Key",
      message: "must be 1 to 255 visible ASCII characters (no space or control)"
    })
    expectCommon(res)
  })

  test("no credential (401): the challenge from Authentication, the client IP's bucket", async () => {
    const res = await server.request("/v1/projects")
    expect(res.status).toBe(401)
    expect(res.headers.get("www-authenticate")).toStartWith('Bearer realm="api"')
    expectCommon(res, PER_CLIENT_IP)
  })

  test("a scope missing (403): the challenge names the scopes, the credential's bucket", async () => {
    const user = await server.user({ scopes: "read" })
    const res = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "No" } })
    expect(res.status).toBe(403)
    expect(res.headers.get("www-authenticate")).toContain('error="insufficient_scope"')
    expectCommon(res)
  })

  test("another method (405, before routing): Allow from the checks", async () => {
    const res = await server.request("/v1/projects", { method: "PATCH" })
    expect(res.status).toBe(405)
    expect(res.headers.get("allow")).toBe("GET, HEAD, POST")
    expectCommon(res, PER_CLIENT_IP)
  })

  test("If-Match that does not hold (412): the write's failure keeps them too", async () => {
    const user = await server.user()
    const created = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "Cond" } })
    const res = await server.request(`/v1/projects/${created.body.data.id}`, {
      method: "PUT",
      key: user.key,
      body: { name: "Changed" },
      headers: { "if-match": '"not-the-tag"' }
    })
    expect(res.status).toBe(412)
    expectCommon(res)
  })

  test("a request outside /v1 gets its request id and no rate-limit or CORS header", async () => {
    const res = await server.request("/health/live")
    expect(res.status).toBe(200)
    expect(res.headers.get("x-request-id")).toMatch(/^req_/)
    expect(res.headers.get(CORS)).toBeNull()
    expect(res.headers.get("x-ratelimit-limit")).toBeNull()
  })
})
