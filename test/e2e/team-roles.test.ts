/**
 * Who may do what to a team's projects, over HTTP (the rules themselves: test/projects/team-roles.service.test.ts):
 * a team `member` gets `403 forbidden` in the envelope, naming the role needed, for DELETE and for a PUT of status
 * or visibility; nothing changes; deployments and renames stay theirs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { callOn, expectError, expectValidation, joinTeam, serverWithUsers } from "../support/api.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let olive: TestUser // team owner, and the project's creator
let adam: TestUser // admin
let mia: TestUser // member

beforeAll(async () => {
  ;({
    server,
    users: [olive, adam, mia]
  } = await serverWithUsers(["Olive", "Adam", "Mia"]))
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

const call = callOn(() => server)

describe("a team member on a team project", () => {
  test("DELETE and PUT status/visibility are 403 forbidden naming the role; rename and deploy work", async () => {
    const team = (await call(olive, "POST", "/v1/teams", { name: "Crew" })).body.data
    await joinTeam(server, team.id, adam, "admin", olive)
    await joinTeam(server, team.id, mia, "member", olive)
    const created = await call(olive, "POST", "/v1/projects", { name: "Site", visibility: "team", team_id: team.id })
    expect(created.status).toBe(201)
    const project = created.body.data
    const path = `/v1/projects/${project.id}`

    expectError(
      await call(mia, "DELETE", path),
      403,
      "forbidden",
      "deleting a team project needs the team role admin or owner"
    )
    expectError(
      await call(mia, "PUT", path, { status: "archived" }),
      403,
      "forbidden",
      "archiving a team project needs the team role admin or owner"
    )
    expectError(
      await call(mia, "PUT", path, { name: "Mixed", visibility: "private" }),
      403,
      "forbidden",
      "changing a team project's visibility needs the team role admin or owner"
    )
    const unchanged = await call(mia, "GET", path)
    expect(unchanged.status).toBe(200)
    expect(unchanged.body.data).toEqual(project)

    const renamed = await call(mia, "PUT", path, { name: "Site 2", description: "by Mia" })
    expect(renamed.status).toBe(200)
    expect(renamed.body.data).toMatchObject({ name: "Site 2", description: "by Mia", owner_id: olive.id })
    const deployed = await call(mia, "POST", `${path}/deployments`, { ref: "main" })
    expect(deployed.status).toBe(201)
    const finished = await call(mia, "PUT", `${path}/deployments/${deployed.body.data.id}`, { status: "failed" })
    expect(finished.status).toBe(200)

    // An admin may archive and delete.
    expect((await call(adam, "PUT", path, { status: "archived" })).status).toBe(200)
    expect((await call(adam, "DELETE", path)).status).toBe(204)
    expect((await call(olive, "GET", path)).status).toBe(404)
  }, 30_000)
})

describe("a project's owner who is no longer in its team", () => {
  test("cannot share it into that team (400 validation_failed on team_id, as at create); may still unshare", async () => {
    const team = (await call(olive, "POST", "/v1/teams", { name: "Former crew" })).body.data
    await joinTeam(server, team.id, mia, "member", olive)
    const kept = (await call(mia, "POST", "/v1/projects", { name: "Kept", team_id: team.id })).body.data
    const shared = (await call(mia, "POST", "/v1/projects", { name: "Shared", team_id: team.id, visibility: "team" }))
      .body.data
    expect((await call(olive, "DELETE", `/v1/teams/${team.id}/members/${mia.id}`)).status).toBe(204)

    const refused = await call(mia, "PUT", `/v1/projects/${kept.id}`, { name: "Spam", visibility: "team" })
    expectValidation(refused, "team_id")
    expect(refused.body.error.message).toBe("team_id is not a team you belong to")
    expect((await call(mia, "GET", `/v1/projects/${kept.id}`)).body.data).toEqual(kept)
    expect((await call(olive, "GET", `/v1/projects/${kept.id}`)).status).toBe(404)

    // Taking a project out of the team shares nothing, and stays hers to do.
    const unshared = await call(mia, "PUT", `/v1/projects/${shared.id}`, { visibility: "private" })
    expect(unshared.status).toBe(200)
    expect((await call(olive, "GET", `/v1/projects/${shared.id}`)).status).toBe(404)
    expectValidation(await call(mia, "PUT", `/v1/projects/${shared.id}`, { visibility: "team" }), "team_id")
  }, 30_000)
})
