import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let ann: TestUser
let bob: TestUser

beforeAll(async () => {
  server = await startInProcess()
  ann = await server.user({ name: "Ann" })
  bob = await server.user({ name: "Bob" })
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

const create = (user: TestUser, body: unknown) =>
  server.request("/v1/projects", { method: "POST", key: user.key, body })

describe("POST /v1/projects", () => {
  test("creates a project: 201, success envelope, defaults, trimmed name, request id everywhere", async () => {
    const res = await create(ann, { name: "  Apollo  ", description: "Moon" })
    expect(res.status).toBe(201)
    const { data, meta } = res.body
    expect(data).toMatchObject({
      name: "Apollo",
      description: "Moon",
      visibility: "private",
      status: "active",
      owner_id: ann.id,
      team_id: null
    })
    expect(data.id).toMatch(/^proj_[0-7][0-9a-hjkmnp-tv-z]{25}$/)
    expect(data.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    expect(data.updated_at).toBe(data.created_at)
    expect(meta.request_id).toMatch(/^req_[0-9a-f-]{36}$/)
    expect(res.headers.get("x-request-id")).toBe(meta.request_id)
  })

  test("honours a client X-Request-Id that is a UUID (lower-cased) and replaces one that is not", async () => {
    const uuid = "6F9619FF-8B86-D011-B42D-00C04FC964FF"
    const honoured = await server.request("/v1/projects", { key: ann.key, headers: { "x-request-id": uuid } })
    expect(honoured.body.meta.request_id).toBe(`req_${uuid.toLowerCase()}`)
    expect(honoured.headers.get("x-request-id")).toBe(`req_${uuid.toLowerCase()}`)
    const replaced = await server.request("/v1/projects", { key: ann.key, headers: { "x-request-id": "not-a-uuid" } })
    expect(replaced.body.meta.request_id).toMatch(/^req_[0-9a-f-]{36}$/)
    expect(replaced.body.meta.request_id).not.toContain("not-a-uuid")
    const failed = await server.request("/v1/projects/proj_nope", { key: ann.key, headers: { "x-request-id": uuid } })
    expect(failed.body.error.request_id).toBe(`req_${uuid.toLowerCase()}`)
  })

  test("validation_failed names every bad field, including unknown and read-only ones", async () => {
    const res = await create(ann, { name: "", visibility: "secret", id: "proj_x", status: "active", extra: 1 })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe("validation_failed")
    expect(res.body.error.status).toBe(400)
    const fields = res.body.error.details.map((d: { field: string }) => d.field).sort()
    expect(fields).toEqual(["extra", "id", "name", "status", "visibility"])
    const visibility = res.body.error.details.find((d: { field: string }) => d.field === "visibility")
    expect(visibility.message).toContain("private")
  })

  test("name is required, at most 100 characters; description at most 2000", async () => {
    const missing = await create(ann, { description: "x" })
    expect(missing.body.error.details).toEqual([{ field: "name", message: "is required" }])
    const long = await create(ann, { name: "x".repeat(101), description: "y".repeat(2001) })
    expect(long.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(["description", "name"])
    const wrongType = await create(ann, { name: 42 })
    expect(wrongType.body.error.details[0].field).toBe("name")
  })

  test("team visibility needs a team the caller belongs to", async () => {
    const noTeam = await create(ann, { name: "T", visibility: "team" })
    expect(noTeam.status).toBe(400)
    expect(noTeam.body.error.details[0].field).toBe("team_id")
    const team = await server.fixtures.team("Bobs", bob.id)
    const notMine = await create(ann, { name: "T", visibility: "team", team_id: team.id })
    expect(notMine.status).toBe(400)
    expect(notMine.body.error.details[0]).toEqual({ field: "team_id", message: "is not a team you belong to" })
  })

  test("malformed JSON, a non-object body, no body and a non-JSON content type", async () => {
    const malformed = await server.request("/v1/projects", {
      method: "POST",
      key: ann.key,
      rawBody: '{"name":',
      headers: { "content-type": "application/json" }
    })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error).toMatchObject({ code: "bad_request", status: 400 })
    for (const raw of ["[1,2]", '"text"', "null", "42"]) {
      const res = await server.request("/v1/projects", {
        method: "POST",
        key: ann.key,
        rawBody: raw,
        headers: { "content-type": "application/json" }
      })
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe("bad_request")
    }
    const empty = await server.request("/v1/projects", { method: "POST", key: ann.key })
    expect(empty.status).toBe(400)
    expect(empty.body.error.code).toBe("bad_request")
    const form = await server.request("/v1/projects", {
      method: "POST",
      key: ann.key,
      rawBody: "name=x",
      headers: { "content-type": "application/x-www-form-urlencoded" }
    })
    expect(form.status).toBe(415)
    expect(form.body.error).toMatchObject({ code: "unsupported_media_type", status: 415 })
    const charset = await server.request("/v1/projects", {
      method: "POST",
      key: ann.key,
      rawBody: JSON.stringify({ name: "with charset" }),
      headers: { "content-type": "application/json; charset=utf-8" }
    })
    expect(charset.status).toBe(201)
  })

  test("a body over 1 MiB is 413 in the envelope, and nothing is written", async () => {
    const before = await server.request("/v1/projects?per_page=1", { key: ann.key })
    const res = await create(ann, { name: "big", description: "x".repeat(1024 * 1024) })
    expect(res.status).toBe(413)
    expect(res.body.error).toMatchObject({ code: "payload_too_large", status: 413 })
    const after = await server.request("/v1/projects?per_page=1", { key: ann.key })
    expect(after.body.meta.total).toBe(before.body.meta.total)
  })
})

describe("GET/PUT/DELETE /v1/projects/:id", () => {
  test("read, partial update (archive and back), delete, then 404", async () => {
    const { body } = await create(ann, { name: "Lifecycle", description: "d", visibility: "public" })
    const id = body.data.id
    const read = await server.request(`/v1/projects/${id}`, { key: ann.key })
    expect(read.status).toBe(200)
    expect(read.body.data).toEqual(body.data)

    const archived = await server.request(`/v1/projects/${id}`, {
      method: "PUT",
      key: ann.key,
      body: { status: "archived" }
    })
    expect(archived.status).toBe(200)
    expect(archived.body.data).toMatchObject({ id, name: "Lifecycle", description: "d", status: "archived" })
    expect(archived.body.data.updated_at >= body.data.updated_at).toBe(true)
    const restored = await server.request(`/v1/projects/${id}`, {
      method: "PUT",
      key: ann.key,
      body: { status: "active", name: "Renamed" }
    })
    expect(restored.body.data).toMatchObject({ status: "active", name: "Renamed" })

    const deleted = await server.request(`/v1/projects/${id}`, { method: "DELETE", key: ann.key })
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe("")
    expect(deleted.headers.get("x-request-id")).toMatch(/^req_/)
    const gone = await server.request(`/v1/projects/${id}`, { key: ann.key })
    expect(gone.status).toBe(404)
    expect(gone.body.error.code).toBe("not_found")
    const again = await server.request(`/v1/projects/${id}`, { method: "DELETE", key: ann.key })
    expect(again.status).toBe(404)
  })

  test("PUT: empty body, unknown field, read-only field, bad status are validation_failed", async () => {
    const { body } = await create(ann, { name: "Strict" })
    const id = body.data.id
    const cases: Array<[unknown, string]> = [
      [{}, ""],
      [{ owner_id: bob.id }, "owner_id"],
      [{ created_at: "2020-01-01T00:00:00.000Z" }, "created_at"],
      [{ status: "deleted" }, "status"],
      [{ visibility: "team" }, "visibility"]
    ]
    for (const [payload, field] of cases) {
      const res = await server.request(`/v1/projects/${id}`, { method: "PUT", key: ann.key, body: payload })
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe("validation_failed")
      expect(res.body.error.details[0].field).toBe(field)
    }
    const unchanged = await server.request(`/v1/projects/${id}`, { key: ann.key })
    expect(unchanged.body.data).toEqual(body.data)
  })

  test("another user's project is 404 on read, update and delete — never 403 — and stays untouched", async () => {
    const { body } = await create(ann, { name: "Private to Ann" })
    const id = body.data.id
    for (const method of ["GET", "PUT", "DELETE"]) {
      const res = await server.request(`/v1/projects/${id}`, {
        method,
        key: bob.key,
        ...(method === "PUT" ? { body: { name: "hijacked" } } : {})
      })
      expect(res.status).toBe(404)
      expect(res.body.error.code).toBe("not_found")
    }
    const still = await server.request(`/v1/projects/${id}`, { key: ann.key })
    expect(still.body.data.name).toBe("Private to Ann")
    const bobsList = await server.request("/v1/projects?per_page=100", { key: bob.key })
    expect(bobsList.body.data.map((p: { id: string }) => p.id)).not.toContain(id)
  })

  test("a malformed id is validation_failed on the path; a well-formed unknown id is 404", async () => {
    const bad = await server.request("/v1/projects/not-an-id", { key: ann.key })
    expect(bad.status).toBe(400)
    expect(bad.body.error.details[0].field).toBe("id")
    const unknown = await server.request("/v1/projects/proj_01jd3xkq8w0000000000000000", { key: ann.key })
    expect(unknown.status).toBe(404)
  })

  test("team projects are shared with team members, private ones are not", async () => {
    const carol = await server.user({ name: "Carol" })
    const dave = await server.user({ name: "Dave" })
    const team = await server.fixtures.team("Shared", carol.id)
    await server.fixtures.addMember(team.id, dave.id)
    const shared = await create(carol, { name: "Shared work", visibility: "team", team_id: team.id })
    expect(shared.status).toBe(201)
    expect(shared.body.data.team_id).toBe(team.id)
    const mine = await create(carol, { name: "Carol only", team_id: team.id, visibility: "private" })
    const daveSees = await server.request("/v1/projects", { key: dave.key })
    const ids = daveSees.body.data.map((p: { id: string }) => p.id)
    expect(ids).toContain(shared.body.data.id)
    expect(ids).not.toContain(mine.body.data.id)
    const daveEdits = await server.request(`/v1/projects/${shared.body.data.id}`, {
      method: "PUT",
      key: dave.key,
      body: { description: "edited by Dave" }
    })
    expect(daveEdits.status).toBe(200)
    const hidden = await server.request(`/v1/projects/${mine.body.data.id}`, { key: dave.key })
    expect(hidden.status).toBe(404)
  })
})
