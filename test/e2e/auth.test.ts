import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import type { Response, Server, TestUser } from "../support/server.ts"

let server: Server
let ann: TestUser // read,write
let reader: TestUser // read
let projectsReader: TestUser // projects:read
let manager: TestUser // team:manage

beforeAll(async () => {
  server = await startInProcess()
  ;[ann, reader, projectsReader, manager] = await Promise.all([
    server.user({ name: "Ann" }),
    server.user({ name: "Reader", scopes: "read" }),
    server.user({ name: "Projects Reader", scopes: "projects:read" }),
    server.user({ name: "Manager", scopes: "team:manage" })
  ])
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const randomKey = () => `pcs_${Array.from(crypto.getRandomValues(new Uint8Array(40)), (b) => BASE62[b % 62]).join("")}`

const expectError = (res: Response, status: number, code: string) => {
  expect(res.status).toBe(status)
  expect(res.headers.get("content-type")).toContain("application/json")
  expect(res.body.error).toMatchObject({ code, status })
  expect(typeof res.body.error.message).toBe("string")
  expect(res.body.error.message.length).toBeGreaterThan(0)
  expect(res.body.error.request_id).toMatch(/^req_[0-9a-f-]{36}$/)
  expect(res.headers.get("x-request-id")).toBe(res.body.error.request_id)
}

const expectUnauthorized = (res: Response, invalidToken: boolean) => {
  expectError(res, 401, "unauthorized")
  const challenge = res.headers.get("www-authenticate") ?? ""
  expect(challenge).toMatch(/^Bearer\b/)
  if (invalidToken) expect(challenge).toContain(`error="invalid_token"`)
}

describe("authentication", () => {
  test("no Authorization header: 401 unauthorized envelope with a Bearer challenge", async () => {
    const res = await server.request("/v1/projects")
    expectUnauthorized(res, false)
    const me = await server.request("/v1/users/me")
    expectUnauthorized(me, false)
  })

  test("a non-Bearer scheme or an empty bearer is 401", async () => {
    const basic = await server.request("/v1/projects", {
      headers: { authorization: `Basic ${btoa(`${ann.email}:secret`)}` }
    })
    expectUnauthorized(basic, false)
    const keyAsBasic = await server.request("/v1/projects", { headers: { authorization: `Basic ${ann.key}` } })
    expectUnauthorized(keyAsBasic, false)
    const empty = await server.request("/v1/projects", { headers: { authorization: "Bearer " } })
    expectUnauthorized(empty, false)
  })

  test("the Bearer scheme is case-insensitive", async () => {
    const res = await server.request("/v1/projects", { headers: { authorization: `bearer ${ann.key}` } })
    expect(res.status).toBe(200)
  })

  test('an unknown pcs_ key is 401 with error="invalid_token"', async () => {
    const res = await server.request("/v1/projects", { key: randomKey() })
    expectUnauthorized(res, true)
    // Same prefix as a real key, different rest: still unknown.
    const sameprefix = `${ann.key.slice(0, 12)}${"A".repeat(ann.key.length - 12)}`
    expectUnauthorized(await server.request("/v1/projects", { key: sameprefix }), true)
  })

  test('garbage tokens are 401 with error="invalid_token"', async () => {
    for (const token of ["garbage", "pcs_short", `${ann.key}x`, "eyJhbGciOiJub25lIn0.e30."]) {
      const res = await server.request("/v1/projects", { key: token })
      expectUnauthorized(res, true)
    }
  })

  test("a revoked key is 401 on the very next request", async () => {
    const created = await server.request("/v1/api-keys", {
      method: "POST",
      key: ann.key,
      body: { name: "to revoke", scopes: ["read"] }
    })
    expect(created.status).toBe(201)
    const { id, key } = created.body.data
    expect((await server.request("/v1/users/me", { key })).status).toBe(200)
    const revoked = await server.request(`/v1/api-keys/${id}`, { method: "DELETE", key: ann.key })
    expect(revoked.status).toBe(204)
    expectUnauthorized(await server.request("/v1/users/me", { key }), true)
    // The key that revoked it still works.
    expect((await server.request("/v1/users/me", { key: ann.key })).status).toBe(200)
  })

  test("an expired key is 401", async () => {
    const expiresAt = new Date(Date.now() + 1500)
    const created = await server.request("/v1/api-keys", {
      method: "POST",
      key: ann.key,
      body: { name: "short-lived", scopes: ["read"], expires_at: expiresAt.toISOString() }
    })
    expect(created.status).toBe(201)
    expect(created.body.data.expires_at).toBe(expiresAt.toISOString())
    const { id, key } = created.body.data
    expect((await server.request("/v1/users/me", { key })).status).toBe(200)
    await Bun.sleep(Math.max(0, expiresAt.getTime() - Date.now()) + 300)
    expectUnauthorized(await server.request("/v1/users/me", { key }), true)
    const list = await server.request("/v1/api-keys?per_page=100", { key: ann.key })
    expect(list.body.data.find((k: { id: string }) => k.id === id).status).toBe("expired")
  })

  test("last_used_at is set once a key is used", async () => {
    const created = await server.request("/v1/api-keys", {
      method: "POST",
      key: ann.key,
      body: { name: "usage", scopes: ["read"] }
    })
    const { id, key } = created.body.data
    const before = await server.request("/v1/api-keys?per_page=100", { key: ann.key })
    expect(before.body.data.find((k: { id: string }) => k.id === id).last_used_at).toBeNull()
    const startedAt = new Date(Date.now() - 1000).toISOString()
    expect((await server.request("/v1/users/me", { key })).status).toBe(200)
    const after = await server.request("/v1/api-keys?per_page=100", { key: ann.key })
    const record = after.body.data.find((k: { id: string }) => k.id === id)
    expect(record.last_used_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(record.last_used_at >= startedAt).toBe(true)
    expect(record.last_used_at >= record.created_at).toBe(true)
  })
})

describe("scopes", () => {
  test("projects:read can list projects but not create them, and cannot read the profile", async () => {
    const list = await server.request("/v1/projects", { key: projectsReader.key })
    expect(list.status).toBe(200)
    expect(Array.isArray(list.body.data)).toBe(true)

    const create = await server.request("/v1/projects", {
      method: "POST",
      key: projectsReader.key,
      body: { name: "Not allowed" }
    })
    expectError(create, 403, "forbidden")
    expect(create.body.error.message).toMatch(/projects:write|\bwrite\b/)

    const me = await server.request("/v1/users/me", { key: projectsReader.key })
    expectError(me, 403, "forbidden")
    expect(me.body.error.message).toMatch(/\bread\b/)

    // Nothing was written by the refused request.
    const after = await server.request("/v1/projects", { key: projectsReader.key })
    expect(after.body.meta.total).toBe(list.body.meta.total)
  })

  test("a read-only key cannot change the profile or manage API keys", async () => {
    expect((await server.request("/v1/users/me", { key: reader.key })).status).toBe(200)
    expect((await server.request("/v1/api-keys", { key: reader.key })).status).toBe(200)

    const put = await server.request("/v1/users/me", { method: "PUT", key: reader.key, body: { name: "Renamed" } })
    expectError(put, 403, "forbidden")
    expect(put.body.error.message).toContain("write")

    const post = await server.request("/v1/api-keys", {
      method: "POST",
      key: reader.key,
      body: { name: "more", scopes: ["read"] }
    })
    expectError(post, 403, "forbidden")
    expect(post.body.error.message).toContain("write")

    const del = await server.request(`/v1/api-keys/${reader.keyId}`, { method: "DELETE", key: reader.key })
    expectError(del, 403, "forbidden")
    // The key was not revoked.
    expect((await server.request("/v1/users/me", { key: reader.key })).body.data.name).toBe("Reader")
    const projects = await server.request("/v1/projects", { method: "POST", key: reader.key, body: { name: "x" } })
    expectError(projects, 403, "forbidden")
  })

  test("team:manage can list its teams and their members, and nothing else", async () => {
    const team = await server.fixtures.team("Managed", manager.id)
    const members = await server.request(`/v1/teams/${team.id}/members`, { key: manager.key })
    expect(members.status).toBe(200)
    expect(members.body.data).toHaveLength(1)
    expect(members.body.data[0]).toMatchObject({ user_id: manager.id, role: "owner" })

    // GET /v1/teams takes read or team:manage (issue 12).
    expect((await server.request("/v1/teams", { key: manager.key })).status).toBe(200)
    expectError(await server.request("/v1/users/me", { key: manager.key }), 403, "forbidden")
    expectError(await server.request("/v1/projects", { key: manager.key }), 403, "forbidden")
  }, 15_000)
})

describe("routing before authentication", () => {
  test("unknown routes are 404 not_found without credentials", async () => {
    for (const path of ["/v1/nope", "/v1/projects/x/y", "/v1/users", "/v1/teams/x/y/z"]) {
      const res = await server.request(path)
      expectError(res, 404, "not_found")
      expect(res.headers.get("www-authenticate")).toBeNull()
    }
    const withBadKey = await server.request("/v1/nope", { key: "garbage" })
    expectError(withBadKey, 404, "not_found")
  })

  test("a known path with another method is 405 with an Allow header, without credentials", async () => {
    const cases: Array<[string, string, Array<string>]> = [
      ["PATCH", "/v1/projects", ["GET", "POST"]],
      ["POST", "/v1/users/me", ["GET", "PUT"]],
      ["DELETE", "/v1/teams", ["GET", "POST"]],
      ["POST", "/v1/projects/proj_01jd3xkq8w0000000000000000", ["DELETE", "GET", "PUT"]],
      ["PUT", "/v1/api-keys", ["GET", "POST"]]
    ]
    for (const [method, path, allowed] of cases) {
      const res = await server.request(path, { method })
      expectError(res, 405, "method_not_allowed")
      const allow = (res.headers.get("allow") ?? "")
        .split(",")
        .map((m) => m.trim())
        .filter((m) => m !== "")
        .sort()
      // HEAD is answered wherever GET is (RFC 9110), so it is allowed there too.
      expect(allow).toEqual((allowed.includes("GET") ? [...allowed, "HEAD"] : [...allowed]).sort())
      expect(res.body.error.message).toContain(method)
      expect(res.headers.get("www-authenticate")).toBeNull()
    }
  })
})
