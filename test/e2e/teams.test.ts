/**
 * Teams and members over HTTP: create, read, rename, delete; roles and what each may do; the last owner; scopes.
 * Members join through invitations (the API's own way), so each test builds the team it needs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { callOn, expectError, expectValidation, joinTeam, serverWithUsers } from "../support/api.ts"
import { TIMESTAMP } from "../support/helpers.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let olive: TestUser // owner of most teams
let adam: TestUser // admin
let mia: TestUser // member
let omar: TestUser // never a member
let reader: TestUser // read only
let writer: TestUser // read,write (no team:manage)
let manager: TestUser // team:manage only

const TEAM_ID = /^team_[0-7][0-9a-hjkmnp-tv-z]{25}$/
const UNKNOWN_TEAM = "team_01jd3xkq8w0000000000000000"

beforeAll(async () => {
  ;({
    server,
    users: [olive, adam, mia, omar, reader, writer, manager]
  } = await serverWithUsers([
    "Olive",
    "Adam",
    "Mia",
    "Omar",
    ["Reader", "read"],
    ["Writer", "read,write"],
    ["Manager", "team:manage"]
  ]))
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

const call = callOn(() => server)

/** `user` joins `teamId` with `role`, invited by `by` (the team's owner unless given). */
const join = (teamId: string, user: TestUser, role: string, by: TestUser = olive) =>
  joinTeam(server, teamId, user, role, by)

/** A team owned by Olive, with Adam as admin and Mia as member. */
const makeTeam = async (name = "Team") => {
  const res = await call(olive, "POST", "/v1/teams", { name })
  expect(res.status).toBe(201)
  const team = res.body.data as { id: string; name: string; created_at: string; updated_at: string; role: string }
  await join(team.id, adam, "admin")
  await join(team.id, mia, "member")
  return team
}

const roleOf = async (teamId: string, user: TestUser) => {
  const res = await call(user, "GET", `/v1/teams/${teamId}`)
  return res.status === 200 ? res.body.data.role : res.status
}

const membersOf = async (teamId: string, as: TestUser = olive) => {
  const res = await call(as, "GET", `/v1/teams/${teamId}/members?per_page=100`)
  expect(res.status).toBe(200)
  return Object.fromEntries(res.body.data.map((m: { user_id: string; role: string }) => [m.user_id, m.role]))
}

describe("POST /v1/teams", () => {
  test("201 with the team; the caller is its owner and only member", async () => {
    const res = await call(olive, "POST", "/v1/teams", { name: "  Platform  " })
    expect(res.status).toBe(201)
    const team = res.body.data
    expect(Object.keys(team).sort()).toEqual(["created_at", "id", "name", "role", "updated_at"])
    expect(team.id).toMatch(TEAM_ID)
    expect(team).toMatchObject({ name: "Platform", role: "owner" })
    expect(team.created_at).toMatch(TIMESTAMP)
    expect(team.updated_at).toBe(team.created_at)
    expect(res.body.meta.request_id).toMatch(/^req_/)
    expect(await membersOf(team.id)).toEqual({ [olive.id]: "owner" })
    const read = await call(olive, "GET", `/v1/teams/${team.id}`)
    expect(read.body.data).toEqual(team)
    const listed = await call(olive, "GET", "/v1/teams?per_page=100")
    expect(listed.body.data).toContainEqual(team)
  })

  test("a bad name or body is validation_failed", async () => {
    expectValidation(await call(olive, "POST", "/v1/teams", {}), "name")
    expectValidation(await call(olive, "POST", "/v1/teams", { name: "   " }), "name")
    expectValidation(await call(olive, "POST", "/v1/teams", { name: "x".repeat(101) }), "name")
    expectValidation(await call(olive, "POST", "/v1/teams", { name: 7 }), "name")
    expectValidation(await call(olive, "POST", "/v1/teams", { name: "ok", role: "owner" }), "role")
  })

  test("creating a team needs team:manage (read,write is not enough)", async () => {
    expectError(await call(writer, "POST", "/v1/teams", { name: "No" }), 403, "forbidden", "team:manage")
    expectError(await call(reader, "POST", "/v1/teams", { name: "No" }), 403, "forbidden", "team:manage")
    const ok = await call(manager, "POST", "/v1/teams", { name: "Managed" })
    expect(ok.status).toBe(201)
    expect(ok.body.data.role).toBe("owner")
  })
})

describe("GET /v1/teams and /v1/teams/:team_id", () => {
  test("each member sees the team with their own role; a non-member gets 404", async () => {
    const team = await makeTeam("Readable")
    expect(await roleOf(team.id, olive)).toBe("owner")
    expect(await roleOf(team.id, adam)).toBe("admin")
    expect(await roleOf(team.id, mia)).toBe("member")
    const asMia = await call(mia, "GET", `/v1/teams/${team.id}`)
    expect(asMia.body.data).toEqual({ ...team, role: "member" })
    expectError(await call(omar, "GET", `/v1/teams/${team.id}`), 404, "not_found")
    expectError(await call(omar, "GET", `/v1/teams/${UNKNOWN_TEAM}`), 404, "not_found")
    expectValidation(await call(olive, "GET", "/v1/teams/nope"), "team_id")

    const listed = await call(mia, "GET", "/v1/teams?per_page=100")
    expect(listed.body.data.find((t: { id: string }) => t.id === team.id)).toEqual({ ...team, role: "member" })
    const omars = await call(omar, "GET", "/v1/teams?per_page=100")
    expect(omars.body.data.map((t: { id: string }) => t.id)).not.toContain(team.id)
  })

  test("GET takes read or team:manage; write alone is not enough", async () => {
    const owned = (await call(manager, "POST", "/v1/teams", { name: "Scoped" })).body.data
    const list = await call(manager, "GET", "/v1/teams")
    expect(list.status).toBe(200)
    expect(list.body.data.map((t: { id: string }) => t.id)).toContain(owned.id)
    expect((await call(manager, "GET", `/v1/teams/${owned.id}`)).status).toBe(200)
    expect((await call(reader, "GET", "/v1/teams")).status).toBe(200)
    const writeOnly = await server.user({ scopes: "write" })
    expectError(await call(writeOnly, "GET", "/v1/teams"), 403, "forbidden")
  })

  test("teams sort by updated_at too", async () => {
    const res = await call(olive, "GET", "/v1/teams?sort=updated_at&order=asc&per_page=100")
    expect(res.status).toBe(200)
    const stamps = res.body.data.map((t: { updated_at: string }) => t.updated_at)
    expect(stamps).toEqual([...stamps].sort())
  })
})

describe("PUT /v1/teams/:team_id", () => {
  test("owners and admins rename; a member gets 403 naming the roles; a non-member 404", async () => {
    const team = await makeTeam("Before")
    await Bun.sleep(2)
    const byOwner = await call(olive, "PUT", `/v1/teams/${team.id}`, { name: "After" })
    expect(byOwner.status).toBe(200)
    expect(byOwner.body.data).toMatchObject({ id: team.id, name: "After", role: "owner", created_at: team.created_at })
    expect(byOwner.body.data.updated_at > team.updated_at).toBe(true)
    const byAdmin = await call(adam, "PUT", `/v1/teams/${team.id}`, { name: "By admin" })
    expect(byAdmin.status).toBe(200)
    expect(byAdmin.body.data).toMatchObject({ name: "By admin", role: "admin" })
    expectError(await call(mia, "PUT", `/v1/teams/${team.id}`, { name: "Mine" }), 403, "forbidden", "owner or admin")
    expectError(await call(omar, "PUT", `/v1/teams/${team.id}`, { name: "Mine" }), 404, "not_found")
    expect((await call(mia, "GET", `/v1/teams/${team.id}`)).body.data.name).toBe("By admin")
    expectValidation(await call(olive, "PUT", `/v1/teams/${team.id}`, { name: "" }), "name")
    expectValidation(await call(olive, "PUT", `/v1/teams/${team.id}`, {}), "name")
    expectError(await call(writer, "PUT", `/v1/teams/${team.id}`, { name: "x" }), 403, "forbidden", "team:manage")
  })
})

describe("DELETE /v1/teams/:team_id", () => {
  test("owners only; 409 while a project belongs to the team; then 204 and gone for everyone", async () => {
    const team = await makeTeam("Doomed")
    expectError(await call(adam, "DELETE", `/v1/teams/${team.id}`), 403, "forbidden", "owner")
    expectError(await call(mia, "DELETE", `/v1/teams/${team.id}`), 403, "forbidden", "owner")
    expectError(await call(omar, "DELETE", `/v1/teams/${team.id}`), 404, "not_found")

    // A private project that merely names the team still belongs to it.
    const project = await call(mia, "POST", "/v1/projects", { name: "Blocker", team_id: team.id })
    expect(project.status).toBe(201)
    const blocked = await call(olive, "DELETE", `/v1/teams/${team.id}`)
    expectError(blocked, 409, "conflict", "1 project")
    expect(await roleOf(team.id, olive)).toBe("owner")

    expect((await call(mia, "DELETE", `/v1/projects/${project.body.data.id}`)).status).toBe(204)
    const deleted = await call(olive, "DELETE", `/v1/teams/${team.id}`)
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe("")
    for (const user of [olive, adam, mia]) {
      expectError(await call(user, "GET", `/v1/teams/${team.id}`), 404, "not_found")
      expectError(await call(user, "GET", `/v1/teams/${team.id}/members`), 404, "not_found")
      expectError(await call(user, "GET", `/v1/teams/${team.id}/invitations`), 404, "not_found")
    }
    expectError(await call(olive, "DELETE", `/v1/teams/${team.id}`), 404, "not_found")
  })
})

describe("PUT /v1/teams/:team_id/members/:user_id", () => {
  test("an owner sets any role; the member record comes back", async () => {
    const team = await makeTeam()
    const promoted = await call(olive, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, { role: "admin" })
    expect(promoted.status).toBe(200)
    expect(Object.keys(promoted.body.data).sort()).toEqual([
      "avatar_url",
      "email",
      "joined_at",
      "name",
      "role",
      "user_id"
    ])
    expect(promoted.body.data).toMatchObject({ user_id: mia.id, email: mia.email, name: "Mia", role: "admin" })
    const owner = await call(olive, "PUT", `/v1/teams/${team.id}/members/${adam.id}`, { role: "owner" })
    expect(owner.body.data.role).toBe("owner")
    const demoted = await call(olive, "PUT", `/v1/teams/${team.id}/members/${adam.id}`, { role: "member" })
    expect(demoted.body.data.role).toBe("member")
    expect(await membersOf(team.id)).toEqual({ [olive.id]: "owner", [adam.id]: "member", [mia.id]: "admin" })
  })

  test("an admin moves people between member and admin only; owners are out of reach (403 naming owner)", async () => {
    const team = await makeTeam()
    const up = await call(adam, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, { role: "admin" })
    expect(up.status).toBe(200)
    const down = await call(adam, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, { role: "member" })
    expect(down.body.data.role).toBe("member")
    expectError(
      await call(adam, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, { role: "owner" }),
      403,
      "forbidden",
      "owner role"
    )
    expectError(
      await call(adam, "PUT", `/v1/teams/${team.id}/members/${adam.id}`, { role: "owner" }),
      403,
      "forbidden",
      "owner role"
    )
    expectError(
      await call(adam, "PUT", `/v1/teams/${team.id}/members/${olive.id}`, { role: "admin" }),
      403,
      "forbidden",
      "owner role"
    )
    // An admin may step down themself.
    const self = await call(adam, "PUT", `/v1/teams/${team.id}/members/${adam.id}`, { role: "member" })
    expect(self.body.data.role).toBe("member")
    expect(await membersOf(team.id)).toEqual({ [olive.id]: "owner", [adam.id]: "member", [mia.id]: "member" })
  })

  test("a member gets 403 naming owner or admin; a non-member 404; an unknown member 404", async () => {
    const team = await makeTeam()
    const res = await call(mia, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, { role: "admin" })
    expectError(res, 403, "forbidden", "owner or admin")
    expect(res.body.error.message).toContain("you are a member")
    expectError(await call(omar, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, { role: "member" }), 404, "not_found")
    expectError(
      await call(olive, "PUT", `/v1/teams/${team.id}/members/${omar.id}`, { role: "admin" }),
      404,
      "not_found",
      omar.id
    )
    expectValidation(await call(olive, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, { role: "boss" }), "role")
    expectValidation(await call(olive, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, {}), "role")
    expectValidation(await call(olive, "PUT", `/v1/teams/${team.id}/members/nope`, { role: "admin" }), "user_id")
    expectError(
      await call(writer, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, { role: "admin" }),
      403,
      "forbidden",
      "team:manage"
    )
    expect(await membersOf(team.id)).toEqual({ [olive.id]: "owner", [adam.id]: "admin", [mia.id]: "member" })
  })

  test("the last owner cannot be demoted (409); with a second owner they can", async () => {
    const team = await makeTeam()
    expectError(
      await call(olive, "PUT", `/v1/teams/${team.id}/members/${olive.id}`, { role: "admin" }),
      409,
      "conflict",
      "owner"
    )
    expect(await roleOf(team.id, olive)).toBe("owner")
    await call(olive, "PUT", `/v1/teams/${team.id}/members/${adam.id}`, { role: "owner" })
    const stepped = await call(olive, "PUT", `/v1/teams/${team.id}/members/${olive.id}`, { role: "member" })
    expect(stepped.status).toBe(200)
    expect(stepped.body.data.role).toBe("member")
    // Now Adam is the last owner; Olive, a member, can no longer change roles.
    expectError(await call(adam, "PUT", `/v1/teams/${team.id}/members/${adam.id}`, { role: "admin" }), 409, "conflict")
    expectError(
      await call(olive, "PUT", `/v1/teams/${team.id}/members/${olive.id}`, { role: "owner" }),
      403,
      "forbidden"
    )
  })
})

describe("DELETE /v1/teams/:team_id/members/:user_id", () => {
  test("an owner removes anyone; the removed user no longer sees the team", async () => {
    const team = await makeTeam()
    const res = await call(olive, "DELETE", `/v1/teams/${team.id}/members/${adam.id}`)
    expect(res.status).toBe(204)
    expect(res.text).toBe("")
    expectError(await call(adam, "GET", `/v1/teams/${team.id}`), 404, "not_found")
    expect(await membersOf(team.id)).toEqual({ [olive.id]: "owner", [mia.id]: "member" })
    expectError(await call(olive, "DELETE", `/v1/teams/${team.id}/members/${adam.id}`), 404, "not_found")
  })

  test("an admin removes members and admins but not an owner (403 naming owner)", async () => {
    const team = await makeTeam()
    expectError(await call(adam, "DELETE", `/v1/teams/${team.id}/members/${olive.id}`), 403, "forbidden", "owner role")
    expect((await call(adam, "DELETE", `/v1/teams/${team.id}/members/${mia.id}`)).status).toBe(204)
    expect(await membersOf(team.id)).toEqual({ [olive.id]: "owner", [adam.id]: "admin" })
  })

  test("a member may remove only themself (leaving); others get 403, non-members 404", async () => {
    const team = await makeTeam()
    expectError(
      await call(mia, "DELETE", `/v1/teams/${team.id}/members/${adam.id}`),
      403,
      "forbidden",
      "owner or admin"
    )
    expectError(await call(omar, "DELETE", `/v1/teams/${team.id}/members/${mia.id}`), 404, "not_found")
    expectError(await call(omar, "DELETE", `/v1/teams/${team.id}/members/${omar.id}`), 404, "not_found")
    expect((await call(mia, "DELETE", `/v1/teams/${team.id}/members/${mia.id}`)).status).toBe(204)
    expectError(await call(mia, "GET", `/v1/teams/${team.id}`), 404, "not_found")
    expect((await call(adam, "DELETE", `/v1/teams/${team.id}/members/${adam.id}`)).status).toBe(204)
    expect(await membersOf(team.id)).toEqual({ [olive.id]: "owner" })
  })

  test("the last owner cannot leave (409); after handing over ownership they can", async () => {
    const team = await makeTeam()
    expectError(await call(olive, "DELETE", `/v1/teams/${team.id}/members/${olive.id}`), 409, "conflict", "owner")
    expect(await roleOf(team.id, olive)).toBe("owner")
    await call(olive, "PUT", `/v1/teams/${team.id}/members/${adam.id}`, { role: "owner" })
    expect((await call(olive, "DELETE", `/v1/teams/${team.id}/members/${olive.id}`)).status).toBe(204)
    expect(await membersOf(team.id, adam)).toEqual({ [adam.id]: "owner", [mia.id]: "member" })
    // One owner may remove another while another remains.
    await call(adam, "PUT", `/v1/teams/${team.id}/members/${mia.id}`, { role: "owner" })
    expect((await call(mia, "DELETE", `/v1/teams/${team.id}/members/${adam.id}`)).status).toBe(204)
    expect(await membersOf(team.id, mia)).toEqual({ [mia.id]: "owner" })
  })

  test("leaving needs team:manage", async () => {
    const team = await makeTeam()
    const res = await server.request(`/v1/teams/${team.id}/members/${writer.id}`, { method: "DELETE", key: writer.key })
    expectError(res, 403, "forbidden", "team:manage")
  })
})

describe("OpenAPI", () => {
  test("every team, member and invitation endpoint is documented with the errors it answers", async () => {
    const doc = (await server.request("/v1/openapi.json")).body
    const op = (path: string, method: string) => doc.paths[path]?.[method]
    for (const [path, method] of [
      ["/v1/teams", "get"],
      ["/v1/teams", "post"],
      ["/v1/teams/{team_id}", "get"],
      ["/v1/teams/{team_id}", "put"],
      ["/v1/teams/{team_id}", "delete"],
      ["/v1/teams/{team_id}/members", "get"],
      ["/v1/teams/{team_id}/members/{user_id}", "put"],
      ["/v1/teams/{team_id}/members/{user_id}", "delete"],
      ["/v1/teams/{team_id}/invitations", "get"],
      ["/v1/teams/{team_id}/invitations", "post"],
      ["/v1/teams/{team_id}/invitations/{invitation_id}", "delete"],
      ["/v1/invitations", "get"],
      ["/v1/invitations/{invitation_id}/accept", "post"],
      ["/v1/invitations/{invitation_id}/decline", "post"]
    ] as const) {
      expect(op(path, method)).toBeDefined()
    }
    expect(Object.keys(op("/v1/teams/{team_id}", "delete").responses)).toEqual(
      expect.arrayContaining(["204", "403", "404", "409"])
    )
    expect(Object.keys(op("/v1/teams", "post").responses)).toContain("201")
    expect(doc.components.schemas.Team.required).toEqual(
      expect.arrayContaining(["id", "name", "created_at", "updated_at", "role"])
    )
    expect(doc.components.schemas.Invitation).toBeDefined()
  })
})
