import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let ann: TestUser // read,write
let bob: TestUser // read,write
let writer: TestUser // write

beforeAll(async () => {
  server = await startInProcess()
  ;[ann, bob, writer] = await Promise.all([
    server.user({ name: "Ann" }),
    server.user({ name: "Bob" }),
    server.user({ name: "Writer", scopes: "write" })
  ])
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const KEY_ID = /^key_[0-7][0-9a-hjkmnp-tv-z]{25}$/

const createKey = (user: TestUser, body: unknown) =>
  server.request("/v1/api-keys", { method: "POST", key: user.key, body })

const listKeys = async (user: TestUser) => {
  const res = await server.request("/v1/api-keys?per_page=100", { key: user.key })
  expect(res.status).toBe(200)
  return res
}

const fieldsOf = (body: any): Array<string> => body.error.details.map((d: { field: string }) => d.field).sort()

describe("POST /v1/api-keys", () => {
  test("201 with the record and the key value", async () => {
    const startedAt = new Date(Date.now() - 1000).toISOString()
    const res = await createKey(ann, { name: "  CI deploy  ", scopes: ["projects:read", "projects:write"] })
    expect(res.status).toBe(201)
    const { data, meta } = res.body
    expect(meta.request_id).toMatch(/^req_[0-9a-f-]{36}$/)
    expect(Object.keys(data).sort()).toEqual([
      "created_at",
      "expires_at",
      "id",
      "key",
      "last_used_at",
      "name",
      "prefix",
      "revoked_at",
      "scopes",
      "status"
    ])
    expect(data.id).toMatch(KEY_ID)
    expect(data.name).toBe("CI deploy")
    expect(data.scopes).toEqual(["projects:read", "projects:write"])
    expect(data.key).toMatch(/^pcs_[0-9A-Za-z]{40}$/)
    expect(data.prefix).toBe(data.key.slice(0, 12))
    expect(data.status).toBe("active")
    expect(data.created_at).toMatch(TIMESTAMP)
    expect(data.created_at >= startedAt).toBe(true)
    expect(data.expires_at).toBeNull()
    expect(data.last_used_at).toBeNull()
    expect(data.revoked_at).toBeNull()
  })

  test("expires_at is normalised to UTC with milliseconds", async () => {
    const res = await createKey(ann, { name: "dated", scopes: ["read"], expires_at: "2099-06-01T14:00:00+02:00" })
    expect(res.status).toBe(201)
    expect(res.body.data.expires_at).toBe("2099-06-01T12:00:00.000Z")
    expect(res.body.data.status).toBe("active")
  })

  test("the new key works as a bearer, for its own scopes only", async () => {
    const { body } = await createKey(ann, { name: "reader", scopes: ["read"] })
    const me = await server.request("/v1/users/me", { key: body.data.key })
    expect(me.status).toBe(200)
    expect(me.body.data.id).toBe(ann.id)
    const write = await server.request("/v1/projects", { method: "POST", key: body.data.key, body: { name: "no" } })
    expect(write.status).toBe(403)
    expect(write.body.error.code).toBe("forbidden")
  })

  test("the key value never appears in the list", async () => {
    const { body } = await createKey(ann, { name: "secret-holder", scopes: ["read"] })
    const list = await listKeys(ann)
    expect(list.text).not.toContain(body.data.key)
    expect(list.text).not.toContain(ann.key)
    const listed = list.body.data.find((k: { id: string }) => k.id === body.data.id)
    const { key: _key, ...record } = body.data
    expect(listed).toEqual(record)
    for (const item of list.body.data) expect(item).not.toHaveProperty("key")
    // Only the caller's keys.
    const ids = list.body.data.map((k: { id: string }) => k.id)
    expect(ids).toContain(ann.keyId)
    expect(ids).not.toContain(bob.keyId)
    expect(list.body.meta.total).toBe(list.body.data.length)
  })

  test("a credential cannot grant a scope it lacks (403)", async () => {
    const res = await createKey(ann, { name: "escalate", scopes: ["read", "team:manage"] })
    expect(res.status).toBe(403)
    expect(res.body.error).toMatchObject({ code: "forbidden", status: 403 })
    expect(res.body.error.message).toContain("team:manage")
    const widen = await createKey(writer, { name: "escalate", scopes: ["read"] })
    expect(widen.status).toBe(403)
    expect(widen.body.error.message).toContain("read")
  })

  test("a write key may create a projects:write key, which can write projects but not read them", async () => {
    const res = await createKey(writer, { name: "narrow", scopes: ["projects:write"] })
    expect(res.status).toBe(201)
    expect(res.body.data.scopes).toEqual(["projects:write"])
    const key = res.body.data.key
    const created = await server.request("/v1/projects", { method: "POST", key, body: { name: "Via narrow key" } })
    expect(created.status).toBe(201)
    expect(created.body.data.owner_id).toBe(writer.id)
    const read = await server.request("/v1/projects", { key })
    expect(read.status).toBe(403)
  })

  test("validation_failed: missing name, empty scopes, unknown scope, bad or past expires_at, unknown field", async () => {
    const cases: Array<[unknown, Array<string>]> = [
      [{ scopes: ["read"] }, ["name"]],
      [{ name: "   ", scopes: ["read"] }, ["name"]],
      [{ name: "x", scopes: [] }, ["scopes"]],
      [{ name: "x" }, ["scopes"]],
      [{ name: "x", scopes: ["admin"] }, ["scopes.0"]],
      [{ name: "x", scopes: ["read", "admin"] }, ["scopes.1"]],
      [{ name: "x", scopes: "read" }, ["scopes"]],
      [{ name: "x", scopes: ["read"], expires_at: "2020-01-01T00:00:00Z" }, ["expires_at"]],
      [{ name: "x", scopes: ["read"], expires_at: "2099-01-01T00:00:00" }, ["expires_at"]],
      [{ name: "x", scopes: ["read"], expires_at: "tomorrow" }, ["expires_at"]],
      [{ name: "x", scopes: ["read"], key: "pcs_mine" }, ["key"]],
      [{ name: "x", scopes: ["read"], colour: "red" }, ["colour"]],
      [{ name: "x", scopes: ["read"], status: "active" }, ["status"]]
    ]
    const before = (await listKeys(ann)).body.meta.total
    for (const [payload, fields] of cases) {
      const res = await createKey(ann, payload)
      expect(res.status).toBe(400)
      expect(res.body.error).toMatchObject({ code: "validation_failed", status: 400 })
      expect(fieldsOf(res.body)).toEqual(fields)
      expect(res.body.error.request_id).toMatch(/^req_/)
    }
    const unknown = await createKey(ann, { name: "x", scopes: ["admin"] })
    expect(unknown.body.error.details[0].message).toContain("projects:write")
    const past = await createKey(ann, { name: "x", scopes: ["read"], expires_at: "2020-01-01T00:00:00Z" })
    expect(past.body.error.details[0].message).toContain("future")
    // Nothing was created.
    expect((await listKeys(ann)).body.meta.total).toBe(before)
  })
})

describe("DELETE /v1/api-keys/:id", () => {
  test("204, idempotent, revoked_at keeps its first value, status revoked", async () => {
    const { body } = await createKey(ann, { name: "short", scopes: ["read"] })
    const id = body.data.id
    const first = await server.request(`/v1/api-keys/${id}`, { method: "DELETE", key: ann.key })
    expect(first.status).toBe(204)
    expect(first.text).toBe("")
    const afterFirst = (await listKeys(ann)).body.data.find((k: { id: string }) => k.id === id)
    expect(afterFirst.status).toBe("revoked")
    expect(afterFirst.revoked_at).toMatch(TIMESTAMP)

    await Bun.sleep(5)
    const second = await server.request(`/v1/api-keys/${id}`, { method: "DELETE", key: ann.key })
    expect(second.status).toBe(204)
    const afterSecond = (await listKeys(ann)).body.data.find((k: { id: string }) => k.id === id)
    expect(afterSecond.revoked_at).toBe(afterFirst.revoked_at)
    expect(afterSecond.status).toBe("revoked")

    const revokedOnly = await server.request("/v1/api-keys?status=revoked&per_page=100", { key: ann.key })
    expect(revokedOnly.body.data.map((k: { id: string }) => k.id)).toContain(id)
    expect(revokedOnly.body.data.every((k: { status: string }) => k.status === "revoked")).toBe(true)
  })

  test("another user's key is 404, and it keeps working", async () => {
    const { body } = await createKey(bob, { name: "bob's", scopes: ["read"] })
    const res = await server.request(`/v1/api-keys/${body.data.id}`, { method: "DELETE", key: ann.key })
    expect(res.status).toBe(404)
    expect(res.body.error).toMatchObject({ code: "not_found", status: 404 })
    expect((await server.request("/v1/users/me", { key: body.data.key })).status).toBe(200)
    const bobs = (await listKeys(bob)).body.data.find((k: { id: string }) => k.id === body.data.id)
    expect(bobs.revoked_at).toBeNull()
  })

  test("an unknown id is 404; a malformed id is validation_failed", async () => {
    const unknown = await server.request("/v1/api-keys/key_01jd3xkq8w0000000000000000", {
      method: "DELETE",
      key: ann.key
    })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.code).toBe("not_found")
    const malformed = await server.request("/v1/api-keys/proj_01jd3xkq8w0000000000000000", {
      method: "DELETE",
      key: ann.key
    })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error.code).toBe("validation_failed")
    expect(malformed.body.error.details[0].field).toBe("id")
  })

  test("revoked by the CLI (its own connection to the database) after use: the next request is 401", async () => {
    const { body } = await createKey(ann, { name: "revoked by the operator", scopes: ["read"] })
    for (let i = 0; i < 2; i++) expect((await server.request("/v1/users/me", { key: body.data.key })).status).toBe(200)
    const revoked = await server.cli<{ status: string }>("api-keys", "revoke", "--key", body.data.id)
    expect(revoked.status).toBe("revoked")
    const after = await server.request("/v1/users/me", { key: body.data.key })
    expect(after.status).toBe(401)
    expect(after.body.error.code).toBe("unauthorized")
  })

  test("a key may revoke itself; it is then 401", async () => {
    const { body } = await createKey(ann, { name: "self-destruct", scopes: ["read", "write"] })
    const res = await server.request(`/v1/api-keys/${body.data.id}`, { method: "DELETE", key: body.data.key })
    expect(res.status).toBe(204)
    const after = await server.request("/v1/users/me", { key: body.data.key })
    expect(after.status).toBe(401)
    expect(after.body.error.code).toBe("unauthorized")
  })
})
