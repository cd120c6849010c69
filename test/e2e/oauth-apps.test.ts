/**
 * Self-service OAuth over HTTP (the rules themselves are in test/oauth/apps.service.test.ts): the routes, their
 * envelopes and `Link` headers, the scopes the bearer middleware enforces, path ids, strict bodies; and HTTP Basic
 * client credentials that no engine can store (a NUL byte) answered as `invalid_client`, never 500.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { expectError, expectValidation } from "../support/api.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

const REDIRECT = "http://127.0.0.1:9/callback"
let server: Server
let ann: TestUser
let annReadOnly: TestUser
let bob: TestUser

beforeAll(async () => {
  server = await startInProcess({ env: { AUTH_IP_LIMIT_PER_MINUTE: "100000" } })
  ;[ann, bob] = await Promise.all([server.user({ name: "Ann" }), server.user({ name: "Bob" })])
  annReadOnly = await server.user({ name: "Reader", scopes: "read" })
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

describe("/v1/oauth-clients", () => {
  test("register, list (with Link and total), read, update, rotate, delete", async () => {
    const created = await server.request("/v1/oauth-clients", {
      method: "POST",
      key: ann.key,
      body: { name: "  Ann's app  ", redirect_uris: [REDIRECT] }
    })
    expect(created.status).toBe(201)
    expect(created.body.data).toMatchObject({ name: "Ann's app", redirect_uris: [REDIRECT], public: false })
    expect(created.body.data.client_secret).toMatch(/^pcc_/)
    const id: string = created.body.data.id
    const second = await server.request("/v1/oauth-clients", {
      method: "POST",
      key: ann.key,
      body: { name: "Ann's SPA", redirect_uris: [REDIRECT], public: true }
    })
    expect(second.status).toBe(201)
    expect(second.body.data.client_secret).toBeUndefined()
    // The operator's clients belong to nobody and are never listed.
    await server.cli("oauth-clients", "create", "--name", "Operator app", "--redirect-uri", REDIRECT)

    const listed = await server.request("/v1/oauth-clients?per_page=1&sort=name&order=asc", { key: ann.key })
    expect(listed.status).toBe(200)
    expect(listed.body.meta).toMatchObject({ total: 2, page: 1, per_page: 1 })
    expect(listed.body.data.map((client: { name: string }) => client.name)).toEqual(["Ann's SPA"])
    expect(listed.body.data[0].client_secret).toBeUndefined()
    expect(listed.headers.get("link")).toContain('rel="next"')

    const read = await server.request(`/v1/oauth-clients/${id}`, { key: annReadOnly.key })
    expectError(read, 404, "not_found")
    const own = await server.request(`/v1/oauth-clients/${id}`, { key: ann.key })
    expect(own.status).toBe(200)
    expect(own.body.data.client_secret).toBeUndefined()

    const updated = await server.request(`/v1/oauth-clients/${id}`, {
      method: "PUT",
      key: ann.key,
      body: { redirect_uris: [REDIRECT, "http://127.0.0.1:9/other"] }
    })
    expect(updated.status).toBe(200)
    expect(updated.body.data.redirect_uris).toEqual([REDIRECT, "http://127.0.0.1:9/other"])

    const rotated = await server.request(`/v1/oauth-clients/${id}/rotate-secret`, { method: "POST", key: ann.key })
    expect(rotated.status).toBe(200)
    expect(rotated.body.data.client_secret).toMatch(/^pcc_/)
    expect(rotated.body.data.client_secret).not.toBe(created.body.data.client_secret)

    expect((await server.request(`/v1/oauth-clients/${id}`, { method: "DELETE", key: bob.key })).status).toBe(404)
    const deleted = await server.request(`/v1/oauth-clients/${id}`, { method: "DELETE", key: ann.key })
    expect(deleted.status).toBe(204)
    expectError(await server.request(`/v1/oauth-clients/${id}`, { key: ann.key }), 404, "not_found")
  })

  test("another user's client is 404 on every method", async () => {
    const created = await server.request("/v1/oauth-clients", {
      method: "POST",
      key: ann.key,
      body: { name: "Private", redirect_uris: [REDIRECT] }
    })
    const path = `/v1/oauth-clients/${created.body.data.id}`
    expectError(await server.request(path, { key: bob.key }), 404, "not_found")
    expectError(await server.request(path, { method: "PUT", key: bob.key, body: { name: "x" } }), 404, "not_found")
    expectError(await server.request(`${path}/rotate-secret`, { method: "POST", key: bob.key }), 404, "not_found")
    expectError(await server.request(path, { method: "DELETE", key: bob.key }), 404, "not_found")
    const bobs = await server.request("/v1/oauth-clients", { key: bob.key })
    expect(bobs.body.meta.total).toBe(0)
  })

  test("scopes: read lists and reads, write is needed to change", async () => {
    expect((await server.request("/v1/oauth-clients", { key: annReadOnly.key })).status).toBe(200)
    expectError(
      await server.request("/v1/oauth-clients", {
        method: "POST",
        key: annReadOnly.key,
        body: { name: "x", redirect_uris: [REDIRECT] }
      }),
      403,
      "forbidden",
      "write"
    )
    expectError(
      await server.request("/v1/authorizations/grant_01jd3xkq8w0000000000000000", {
        method: "DELETE",
        key: annReadOnly.key
      }),
      403,
      "forbidden",
      "write"
    )
    expect((await server.request("/v1/authorizations", { key: annReadOnly.key })).status).toBe(200)
  })

  test("bodies are strict and checked: redirect URIs, names, read-only fields, empty updates, ids", async () => {
    const post = (body: unknown) => server.request("/v1/oauth-clients", { method: "POST", key: ann.key, body })
    expectValidation(await post({ name: "x", redirect_uris: ["/relative"] }), "redirect_uris.0")
    expectValidation(await post({ name: "x", redirect_uris: ["https://a.example/cb#frag"] }), "redirect_uris.0")
    expectValidation(await post({ name: "x", redirect_uris: [] }), "redirect_uris")
    expectValidation(await post({ name: "", redirect_uris: [REDIRECT] }), "name")
    expectValidation(await post({ name: "x", redirect_uris: [REDIRECT], client_secret: "mine" }), "client_secret")
    const created = await post({ name: "Strict", redirect_uris: [REDIRECT] })
    const path = `/v1/oauth-clients/${created.body.data.id}`
    expectValidation(await server.request(path, { method: "PUT", key: ann.key, body: { public: true } }), "public")
    expectError(await server.request(path, { method: "PUT", key: ann.key, body: {} }), 400, "validation_failed")
    expectError(await server.request("/v1/oauth-clients/not-an-id", { key: ann.key }), 400, "validation_failed")
    expectError(
      await server.request("/v1/authorizations/cli_x", { method: "DELETE", key: ann.key }),
      400,
      "validation_failed"
    )
  })

  test("the authorizations list answers an envelope with paging", async () => {
    const listed = await server.request("/v1/authorizations?per_page=5", { key: bob.key })
    expect(listed.status).toBe(200)
    expect(listed.body).toMatchObject({ data: [], meta: { total: 0, page: 1, per_page: 5 } })
    expect(listed.headers.get("link")).toContain('rel="first"')
  })
})

describe("client credentials no engine can store", () => {
  const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`, "utf8").toString("base64")}`
  const cases = [
    ["a NUL in the client id", basic("cli_\u0000", "pcc_x")],
    ["a NUL in a real-looking client id", basic("cli_01jd3xkq8w00000000000000\u0000", "pcc_x")],
    ["a NUL in the secret", basic("cli_01jd3xkq8w0000000000000000", "pcc_\u0000")],
    ["a percent-encoded NUL", basic("cli_%00", "x")],
    ["a lone surrogate, percent-encoded", basic("cli_%ED%A0%80", "x")]
  ] as const

  test.each(cases)("%s: 401 invalid_client at /oauth/token and /oauth/revoke, never 500", async (_what, header) => {
    for (const [path, body] of [
      ["/oauth/token", "grant_type=authorization_code&code=abc&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback"],
      ["/oauth/revoke", "token=pco_x"]
    ] as const) {
      const res = await server.request(path, {
        method: "POST",
        rawBody: body,
        headers: { "content-type": "application/x-www-form-urlencoded", authorization: header }
      })
      expect({ path, status: res.status, error: res.body.error }).toEqual({
        path,
        status: 401,
        error: "invalid_client"
      })
    }
  })

  test("the server logged no failure for them", () => {
    expect(server.logs.filter((line) => line.includes('"level":"error"') || line.includes("invalid byte"))).toEqual([])
  })
})

describe("the authorization pages' assets and headers", () => {
  test("the stylesheet is the dashboard's with the pages' additions, served here and revalidated by ETag", async () => {
    const res = await fetch(`${server.url}/oauth/assets/styles.css`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/css")
    const text = await res.text()
    expect(text).toContain("--accent")
    expect(text).toContain(".auth-page")
    const etag = res.headers.get("etag") ?? ""
    expect(etag).not.toBe("")
    expect((await fetch(`${server.url}/oauth/assets/styles.css`, { headers: { "if-none-match": etag } })).status).toBe(
      304
    )
  })

  test("the pages allow no script and no inline style, and load their stylesheet from this service", async () => {
    const created = await server.request("/v1/oauth-clients", {
      method: "POST",
      key: ann.key,
      body: { name: "Headers", redirect_uris: [REDIRECT], public: true }
    })
    const url = new URL(`${server.url}/oauth/authorize`)
    url.search = new URLSearchParams({
      client_id: created.body.data.id,
      redirect_uri: REDIRECT,
      response_type: "code",
      scope: "read",
      code_challenge: "x".repeat(43),
      code_challenge_method: "S256"
    }).toString()
    const page = await fetch(url)
    expect(page.status).toBe(200)
    const csp = page.headers.get("content-security-policy") ?? ""
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("style-src 'self'")
    expect(csp).not.toContain("unsafe-inline")
    expect(csp).not.toContain("script-src")
    const html = await page.text()
    expect(html).toContain('<link rel="stylesheet" href="/oauth/assets/styles.css">')
    expect(html).not.toContain("<script")
    expect(html).not.toContain("<style")
  })
})
