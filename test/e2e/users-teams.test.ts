import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let ann: TestUser
let bob: TestUser
let carol: TestUser

interface TeamRecord {
  readonly id: string
  readonly name: string
  readonly created_at: string
  readonly updated_at: string
  readonly role: string
}

let annsTeam: TeamRecord // owner: Ann
let bobsTeam: TeamRecord // owner: Bob
let sharedTeam: TeamRecord // owner: Bob, Ann is a member

beforeAll(async () => {
  server = await startInProcess()
  ;[ann, bob, carol] = await Promise.all([
    server.user({ name: "Ann" }),
    server.user({ name: "Bob" }),
    server.user({ name: "Carol" })
  ])
  ;[annsTeam, bobsTeam, sharedTeam] = await Promise.all([
    server.fixtures.team("Ann's team", ann.id),
    server.fixtures.team("Bob's team", bob.id),
    server.fixtures.team("Shared team", bob.id)
  ])
  await server.fixtures.addMember(sharedTeam.id, ann.id)
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const putMe = (user: TestUser, body: unknown) => server.request("/v1/users/me", { method: "PUT", key: user.key, body })

const expectValidation = (res: { status: number; body: any }, field?: string) => {
  expect(res.status).toBe(400)
  expect(res.body.error).toMatchObject({ code: "validation_failed", status: 400 })
  expect(res.body.error.request_id).toMatch(/^req_/)
  if (field !== undefined) {
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual([field])
  }
}

describe("GET /v1/users/me", () => {
  test("the caller's profile in a success envelope", async () => {
    const res = await server.request("/v1/users/me", { key: carol.key })
    expect(res.status).toBe(200)
    const { data, meta } = res.body
    expect(Object.keys(data).sort()).toEqual(["avatar_url", "created_at", "email", "id", "name", "updated_at"])
    expect(data).toMatchObject({ id: carol.id, email: carol.email, name: "Carol", avatar_url: null })
    expect(data.id).toMatch(/^usr_[0-7][0-9a-hjkmnp-tv-z]{25}$/)
    expect(data.created_at).toMatch(TIMESTAMP)
    expect(data.updated_at).toBe(data.created_at)
    expect(meta.request_id).toMatch(/^req_[0-9a-f-]{36}$/)
    expect(res.text).not.toContain("password")
    expect(res.text).not.toContain("org_id")
  })
})

describe("PUT /v1/users/me", () => {
  test("changes name and avatar_url, then clears avatar_url with null", async () => {
    const before = (await server.request("/v1/users/me", { key: ann.key })).body.data
    await Bun.sleep(5)
    const avatar = "https://cdn.example.com/avatars/ann.png"
    const updated = await putMe(ann, { name: "  Ann Lee  ", avatar_url: avatar })
    expect(updated.status).toBe(200)
    expect(updated.body.data).toMatchObject({
      id: ann.id,
      email: ann.email,
      name: "Ann Lee",
      avatar_url: avatar,
      created_at: before.created_at
    })
    expect(updated.body.data.updated_at).toMatch(TIMESTAMP)
    expect(updated.body.data.updated_at > before.updated_at).toBe(true)
    expect(updated.body.meta.request_id).toMatch(/^req_/)

    const read = await server.request("/v1/users/me", { key: ann.key })
    expect(read.body.data).toEqual(updated.body.data)

    const cleared = await putMe(ann, { avatar_url: null })
    expect(cleared.status).toBe(200)
    expect(cleared.body.data).toMatchObject({ name: "Ann Lee", avatar_url: null })

    const http = await putMe(ann, { avatar_url: "http://example.com/a.png" })
    expect(http.status).toBe(200)
    expect(http.body.data.avatar_url).toBe("http://example.com/a.png")
  })

  test("email is read-only", async () => {
    const res = await putMe(bob, { email: "new@example.com" })
    expectValidation(res, "email")
    const withName = await putMe(bob, { name: "Robert", email: "new@example.com" })
    expectValidation(withName, "email")
    const me = await server.request("/v1/users/me", { key: bob.key })
    expect(me.body.data).toMatchObject({ email: bob.email, name: "Bob" })
  })

  test("an empty body is validation_failed", async () => {
    expectValidation(await putMe(bob, {}))
  })

  test("avatar_url must be an absolute http(s) URL or null; name must not be empty", async () => {
    expectValidation(await putMe(bob, { avatar_url: "ftp://x" }), "avatar_url")
    expectValidation(await putMe(bob, { avatar_url: "not a url" }), "avatar_url")
    expectValidation(await putMe(bob, { avatar_url: "/relative/path.png" }), "avatar_url")
    expectValidation(await putMe(bob, { avatar_url: 42 }), "avatar_url")
    expectValidation(await putMe(bob, { name: "" }), "name")
    expectValidation(await putMe(bob, { name: "   " }), "name")
    expectValidation(await putMe(bob, { name: "x".repeat(101) }), "name")
    expectValidation(await putMe(bob, { name: null }), "name")
    expectValidation(await putMe(bob, { id: "usr_01jd3xkq8w0000000000000000" }), "id")
    const me = await server.request("/v1/users/me", { key: bob.key })
    expect(me.body.data).toMatchObject({ name: "Bob", avatar_url: null })
  })
})

describe("GET /v1/teams", () => {
  test("lists only the caller's teams", async () => {
    const anns = await server.request("/v1/teams", { key: ann.key })
    expect(anns.status).toBe(200)
    expect(anns.body.data.map((t: TeamRecord) => t.id).sort()).toEqual([annsTeam.id, sharedTeam.id].sort())
    expect(anns.body.meta).toMatchObject({ total: 2, page: 1, per_page: 20 })
    const shared = anns.body.data.find((t: TeamRecord) => t.id === sharedTeam.id)
    // The team record as the caller sees it: their own role in it (Teams.create answered the owner's).
    expect(shared).toEqual({ ...sharedTeam, role: "member" })
    expect(Object.keys(shared).sort()).toEqual(["created_at", "id", "name", "role", "updated_at"])
    expect(anns.body.data.find((t: TeamRecord) => t.id === annsTeam.id)).toEqual(annsTeam)

    const bobs = await server.request("/v1/teams", { key: bob.key })
    expect(bobs.body.data.map((t: TeamRecord) => t.id).sort()).toEqual([bobsTeam.id, sharedTeam.id].sort())

    const carols = await server.request("/v1/teams", { key: carol.key })
    expect(carols.status).toBe(200)
    expect(carols.body.data).toEqual([])
    expect(carols.body.meta.total).toBe(0)
  })
})

describe("GET /v1/teams/:team_id/members", () => {
  test("members with their profile, role and joined_at; the creator is owner", async () => {
    const res = await server.request(`/v1/teams/${sharedTeam.id}/members`, { key: ann.key })
    expect(res.status).toBe(200)
    expect(res.body.meta).toMatchObject({ total: 2, page: 1 })
    const members = res.body.data as Array<Record<string, unknown>>
    for (const member of members) {
      expect(Object.keys(member).sort()).toEqual(["avatar_url", "email", "joined_at", "name", "role", "user_id"])
      expect(member.joined_at).toMatch(TIMESTAMP)
    }
    const owner = members.find((m) => m.user_id === bob.id)
    expect(owner).toMatchObject({ user_id: bob.id, name: "Bob", email: bob.email, avatar_url: null, role: "owner" })
    expect(owner?.joined_at).toBe(sharedTeam.created_at)
    const member = members.find((m) => m.user_id === ann.id)
    expect(member).toMatchObject({ user_id: ann.id, email: ann.email, role: "member" })

    const asOwner = await server.request(`/v1/teams/${sharedTeam.id}/members`, { key: bob.key })
    expect(asOwner.body.data).toEqual(res.body.data)
  })

  test("a non-member gets 404 for the team", async () => {
    for (const [user, team] of [
      [carol, sharedTeam],
      [ann, bobsTeam],
      [bob, annsTeam]
    ] as const) {
      const res = await server.request(`/v1/teams/${team.id}/members`, { key: user.key })
      expect(res.status).toBe(404)
      expect(res.body.error).toMatchObject({ code: "not_found", status: 404 })
    }
    const unknown = await server.request("/v1/teams/team_01jd3xkq8w0000000000000000/members", { key: ann.key })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.code).toBe("not_found")
  })

  test("a malformed team id is 400 validation_failed on team_id", async () => {
    for (const id of ["nope", "proj_01jd3xkq8w0000000000000000"]) {
      const res = await server.request(`/v1/teams/${id}/members`, { key: ann.key })
      expectValidation(res, "team_id")
    }
  })
})
