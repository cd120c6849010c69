/**
 * Who may do what to a team's projects (decisions.md "Who may do what to a team's projects"), every row of the table,
 * through the Projects and Deployments services over a fresh database of the engine `DATABASE_URL` selects: the
 * project's `owner_id`, team owners and admins may do everything; a team `member` may read, rename, describe and
 * deploy, not archive, unarchive, change the visibility or delete (403 naming the role needed; nothing changes, no
 * event; a request mixing allowed and refused changes is refused whole).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { Deployments } from "../../src/Deployments/Deployments.ts"
import type { Principal } from "../../src/Domain/Principal.ts"
import type { Project, ProjectPatch } from "../../src/Domain/Project.ts"
import { Projects } from "../../src/Projects/Projects.ts"
import { Teams } from "../../src/Teams/Teams.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { onSelectedEngine, principalOf, type ServiceHarness } from "../support/services.ts"

const layers = Layer.mergeAll(Projects.Default, Deployments.Default, Teams.Default, Users.Default)
let harness: ServiceHarness<Layer.Layer.Success<typeof layers>>

const run: ServiceHarness<Layer.Layer.Success<typeof layers>>["run"] = (effect) => harness.run(effect)
const fail: ServiceHarness<Layer.Layer.Success<typeof layers>>["fail"] = (effect) => harness.fail(effect)

const projects = <A, E, R>(f: (service: Projects) => Effect.Effect<A, E, R>) => Effect.flatMap(Projects, f)
const deployments = <A, E, R>(f: (service: Deployments) => Effect.Effect<A, E, R>) => Effect.flatMap(Deployments, f)

const eventCount = () =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ readonly n: number }>`SELECT CAST(count(*) AS INTEGER) AS n FROM events`
    )
  ).then((rows) => Number(rows[0]?.n))

/** The creator (a plain member of the team), the team's owner, an admin, another plain member. */
let creator: Principal
let teamOwner: Principal
let admin: Principal
let member: Principal
let teamId: string

beforeAll(async () => {
  harness = await onSelectedEngine(layers)
  const newUser = (name: string) =>
    run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail(name.toLowerCase()), name })))
  const [c, o, a, m] = await Promise.all(["Cleo", "Otto", "Ada", "Mia"].map(newUser))
  creator = principalOf(c!)
  teamOwner = principalOf(o!)
  admin = principalOf(a!)
  member = principalOf(m!)
  const team = await run(Effect.flatMap(Teams, (teams) => teams.create({ name: "Crew", ownerId: o!.id })))
  teamId = team.id
  await run(
    Effect.flatMap(Teams, (teams) =>
      Effect.all([
        teams.addMember({ teamId, userId: c!.id, role: "member" }),
        teams.addMember({ teamId, userId: a!.id, role: "admin" }),
        teams.addMember({ teamId, userId: m!.id, role: "member" })
      ])
    )
  )
}, 60_000)
afterAll(() => harness?.dispose(), 20_000)

/** A fresh team project made by the creator (a plain member of the team). */
const teamProject = (name = "Shared") =>
  run(projects((p) => p.create(creator, { name, visibility: "team", team_id: teamId })))

const who = () =>
  [
    ["the project's owner_id (a plain member)", creator],
    ["a team owner", teamOwner],
    ["a team admin", admin],
    ["a team member", member]
  ] as const

describe("rows every role may do", () => {
  test("read it, its deployments and list it", async () => {
    const project = await teamProject()
    const started = await run(
      deployments((d) => d.create(creator, project.id, { ref: "main", environment: "production", description: "" }))
    )
    for (const [, principal] of who()) {
      expect((await run(projects((p) => p.get(principal, project.id)))).id).toBe(project.id)
      const listed = await run(
        deployments((d) => d.list(principal, project.id, { page: 1, per_page: 10, sort: "created_at", order: "desc" }))
      )
      expect(listed.items.map((item) => item.id)).toContain(started.id)
      expect((await run(deployments((d) => d.get(principal, project.id, started.id)))).id).toBe(started.id)
    }
  })

  test("PUT name and description", async () => {
    const project = await teamProject()
    for (const [label, principal] of who()) {
      const renamed = await run(
        projects((p) => p.update(principal, project.id, { name: `By ${label}`, description: label }))
      )
      expect(renamed).toMatchObject({ name: `By ${label}`, description: label, owner_id: creator.userId })
    }
  })

  test("start and finish deployments", async () => {
    const project = await teamProject()
    for (const [, principal] of who()) {
      const started = await run(
        deployments((d) => d.create(principal, project.id, { ref: "v1", environment: "production", description: "" }))
      )
      expect(started.status).toBe("running")
      const finished = await run(
        deployments((d) => d.finish(principal, project.id, started.id, { status: "succeeded" }))
      )
      expect(finished.status).toBe("succeeded")
    }
  })
})

describe("rows a team member may not do", () => {
  const allowed = () => [creator, teamOwner, admin] as const

  const refusedWhole = async (patch: ProjectPatch, role: string) => {
    const project = await teamProject()
    const events = await eventCount()
    const refused = await fail(projects((p) => p.update(member, project.id, patch)))
    expect(refused).toMatchObject({ _tag: "Forbidden" })
    expect((refused as { message: string }).message).toBe(role)
    // Nothing changed, nothing announced.
    expect(await run(projects((p) => p.get(creator, project.id)))).toEqual(project)
    expect(await eventCount()).toBe(events)
    return project
  }

  test("PUT status: archive (and unarchive) is refused to a member, with the role needed named", async () => {
    await refusedWhole({ status: "archived" }, "archiving a team project needs the team role admin or owner")
    const archived = await teamProject()
    await run(projects((p) => p.update(teamOwner, archived.id, { status: "archived" })))
    const refused = await fail(projects((p) => p.update(member, archived.id, { status: "active" })))
    expect(refused).toMatchObject({
      _tag: "Forbidden",
      message: "unarchiving a team project needs the team role admin or owner"
    })
    expect((await run(projects((p) => p.get(member, archived.id)))).status).toBe("archived")
  })

  test("PUT visibility is refused to a member", async () => {
    await refusedWhole(
      { visibility: "private" },
      "changing a team project's visibility needs the team role admin or owner"
    )
  })

  test("a request mixing an allowed and a refused change is refused whole", async () => {
    const project = await refusedWhole(
      { name: "Renamed too", status: "archived" },
      "archiving a team project needs the team role admin or owner"
    )
    expect((await run(projects((p) => p.get(member, project.id)))).name).toBe(project.name)
  })

  test("a PUT that sends the current status or visibility unchanged is no such change, and is allowed", async () => {
    const project = await teamProject()
    const same = await run(
      projects((p) => p.update(member, project.id, { status: "active", visibility: "team", name: "Same" }))
    )
    expect(same).toMatchObject({ status: "active", visibility: "team", name: "Same" })
  })

  test("DELETE is refused to a member; the project and its deployments stay", async () => {
    const project = await teamProject()
    const started = await run(
      deployments((d) => d.create(creator, project.id, { ref: "main", environment: "production", description: "" }))
    )
    const events = await eventCount()
    const refused = await fail(projects((p) => p.remove(member, project.id)))
    expect(refused).toMatchObject({
      _tag: "Forbidden",
      message: "deleting a team project needs the team role admin or owner"
    })
    expect(await run(projects((p) => p.get(creator, project.id)))).toEqual(project)
    expect((await run(deployments((d) => d.get(creator, project.id, started.id)))).id).toBe(started.id)
    expect(await eventCount()).toBe(events)
  })

  test("the project's owner_id, team owners and admins may archive, unarchive, change visibility and delete", async () => {
    for (const principal of allowed()) {
      const project: Project = await teamProject()
      const archived = await run(projects((p) => p.update(principal, project.id, { status: "archived" })))
      expect(archived.status).toBe("archived")
      const back = await run(projects((p) => p.update(principal, project.id, { status: "active" })))
      expect(back.status).toBe("active")
      const hidden = await run(projects((p) => p.update(principal, project.id, { visibility: "private" })))
      expect(hidden.visibility).toBe("private")
      const shared = await run(projects((p) => p.update(creator, project.id, { visibility: "team" })))
      expect(shared.visibility).toBe("team")
      await run(projects((p) => p.remove(principal, project.id)))
      expect((await fail(projects((p) => p.get(creator, project.id))))._tag).toBe("NotFound")
    }
  })

  test("a member who leaves the team loses the project (404), as before", async () => {
    const project = await teamProject()
    const outsider = principalOf(
      await run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("xena"), name: "Xena" })))
    )
    expect((await fail(projects((p) => p.remove(outsider, project.id))))._tag).toBe("NotFound")
    expect((await fail(projects((p) => p.update(outsider, project.id, { status: "archived" }))))._tag).toBe("NotFound")
  })
})
