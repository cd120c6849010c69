// engine-independent: the services over SQLite in memory (inMemory), whichever engine the run is on
/**
 * The Projects service in-process, over SQLite in memory with the real layers: who sees and changes which project
 * (decisions.md: "a user sees and changes the projects they own, and those of their teams (`team` visibility)"),
 * the `team_id` rules, and the outbox rows written with each change — and none for a refused one.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { Principal } from "../../src/Domain/Principal.ts"
import { Projects } from "../../src/Projects/Projects.ts"
import { Teams } from "../../src/Teams/Teams.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { inMemory, principalOf } from "../support/services.ts"

const harness = inMemory(Layer.mergeAll(Projects.Default, Teams.Default, Users.Default))
const { run, fail } = harness

const newUser = (name: string) =>
  run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail(name.toLowerCase()), name })))

const projects = <A, E, R>(f: (service: Projects) => Effect.Effect<A, E, R>) => Effect.flatMap(Projects, f)

const listIds = (who: Principal, status?: "active" | "archived") =>
  run(projects((p) => p.list(who, { page: 1, per_page: 100, sort: "created_at", order: "asc", status }))).then((page) =>
    page.items.map((item) => item.id)
  )

const countRows = (table: "projects" | "events", where = "1 = 1") =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ readonly n: number }>`SELECT CAST(count(*) AS INTEGER) AS n FROM ${sql(table)} WHERE ${sql.unsafe(where)}`
    )
  ).then((rows) => Number(rows[0]?.n))

let owner: Principal // owns the team
let member: Principal // plain member of the team
let admin: Principal // admin of the team
let outsider: Principal // no team
let teamId: string

beforeAll(async () => {
  const [o, m, a, x] = await Promise.all(["Olga", "Max", "Ada", "Xavier"].map(newUser))
  owner = principalOf(o!)
  member = principalOf(m!)
  admin = principalOf(a!)
  outsider = principalOf(x!)
  const team = await run(Effect.flatMap(Teams, (teams) => teams.create({ name: "Crew", ownerId: o!.id })))
  teamId = team.id
  await run(
    Effect.flatMap(Teams, (teams) =>
      Effect.all([
        teams.addMember({ teamId: team.id, userId: m!.id, role: "member" }),
        teams.addMember({ teamId: team.id, userId: a!.id, role: "admin" })
      ])
    )
  )
})
afterAll(() => harness.dispose(), 20_000)

describe("visibility", () => {
  test("a private project is its owner's alone: others get NotFound on get, update and delete, and do not list it", async () => {
    const mine = await run(projects((p) => p.create(owner, { name: "Diary" })))
    expect(mine).toMatchObject({
      visibility: "private",
      status: "active",
      owner_id: owner.userId,
      team_id: null,
      description: ""
    })
    expect(await run(projects((p) => p.get(owner, mine.id)))).toEqual(mine)
    for (const other of [member, admin, outsider]) {
      expect((await fail(projects((p) => p.get(other, mine.id))))._tag).toBe("NotFound")
      expect((await fail(projects((p) => p.update(other, mine.id, { name: "Mine now" }))))._tag).toBe("NotFound")
      expect((await fail(projects((p) => p.remove(other, mine.id))))._tag).toBe("NotFound")
      expect(await listIds(other)).not.toContain(mine.id)
    }
    // Nothing the others tried changed it.
    expect(await run(projects((p) => p.get(owner, mine.id)))).toEqual(mine)
  })

  test("a public project is not shown to other users either (only own and team projects are)", async () => {
    const open = await run(projects((p) => p.create(owner, { name: "Open", visibility: "public" })))
    expect((await fail(projects((p) => p.get(outsider, open.id))))._tag).toBe("NotFound")
    expect(await listIds(outsider)).not.toContain(open.id)
  })

  test("a team project is seen and changed by every member of the team, whatever the role; not by others", async () => {
    const shared = await run(projects((p) => p.create(owner, { name: "Shared", visibility: "team", team_id: teamId })))
    expect(shared.team_id).toBe(teamId)
    for (const who of [member, admin]) {
      expect((await run(projects((p) => p.get(who, shared.id)))).id).toBe(shared.id)
      expect(await listIds(who)).toContain(shared.id)
    }
    const edited = await run(projects((p) => p.update(member, shared.id, { description: "edited by a member" })))
    expect(edited).toMatchObject({ description: "edited by a member", owner_id: owner.userId })
    expect(edited.updated_at >= shared.updated_at).toBe(true)
    expect((await fail(projects((p) => p.get(outsider, shared.id))))._tag).toBe("NotFound")
    expect(await listIds(outsider)).not.toContain(shared.id)
  })

  test("a project created with a team_id but private stays its owner's", async () => {
    const privateInTeam = await run(projects((p) => p.create(owner, { name: "Draft", team_id: teamId })))
    expect(privateInTeam).toMatchObject({ visibility: "private", team_id: teamId })
    expect((await fail(projects((p) => p.get(member, privateInTeam.id))))._tag).toBe("NotFound")
    // Turned to `team`, the members see it.
    await run(projects((p) => p.update(owner, privateInTeam.id, { visibility: "team" })))
    expect((await run(projects((p) => p.get(member, privateInTeam.id)))).visibility).toBe("team")
  })

  test("a member of the team may delete a team project; it is then gone for everyone", async () => {
    const doomed = await run(projects((p) => p.create(owner, { name: "Doomed", visibility: "team", team_id: teamId })))
    await run(projects((p) => p.remove(admin, doomed.id)))
    for (const who of [owner, member, admin]) {
      expect((await fail(projects((p) => p.get(who, doomed.id))))._tag).toBe("NotFound")
    }
    expect((await fail(projects((p) => p.remove(owner, doomed.id))))._tag).toBe("NotFound")
  })
})

describe("team_id rules", () => {
  test("team visibility needs a team_id; a team the caller is not in is refused; nothing is written", async () => {
    const before = await countRows("projects")
    const eventsBefore = await countRows("events")
    const noTeam = await fail(projects((p) => p.create(owner, { name: "Nowhere", visibility: "team" })))
    expect(noTeam).toMatchObject({ _tag: "ValidationFailed", details: [{ field: "team_id" }] })
    const notMine = await fail(
      projects((p) => p.create(outsider, { name: "Intruder", visibility: "team", team_id: teamId }))
    )
    expect(notMine).toMatchObject({ _tag: "ValidationFailed", details: [{ field: "team_id" }] })
    const unknown = await fail(
      projects((p) => p.create(owner, { name: "Ghost", team_id: "team_01jd3xkq8w0000000000000000" }))
    )
    expect(unknown).toMatchObject({ _tag: "ValidationFailed", details: [{ field: "team_id" }] })
    expect(await countRows("projects")).toBe(before)
    expect(await countRows("events")).toBe(eventsBefore)
  })

  test("a project without a team cannot become a team project, and the refused change is not applied", async () => {
    const solo = await run(projects((p) => p.create(owner, { name: "Solo" })))
    const refused = await fail(projects((p) => p.update(owner, solo.id, { visibility: "team", name: "Renamed" })))
    expect(refused).toMatchObject({ _tag: "ValidationFailed", details: [{ field: "visibility" }] })
    expect(await run(projects((p) => p.get(owner, solo.id)))).toEqual(solo)
  })
})

describe("status", () => {
  test("archived and back; the status filter lists each side", async () => {
    const [one, two] = await Promise.all([
      run(projects((p) => p.create(outsider, { name: "one" }))),
      run(projects((p) => p.create(outsider, { name: "two" })))
    ])
    await run(projects((p) => p.update(outsider, two!.id, { status: "archived" })))
    expect(await listIds(outsider, "archived")).toEqual([two!.id])
    expect(await listIds(outsider, "active")).toContain(one!.id)
    expect(await listIds(outsider, "active")).not.toContain(two!.id)
    await run(projects((p) => p.update(outsider, two!.id, { status: "active" })))
    expect(await listIds(outsider, "archived")).toEqual([])
  })
})

describe("events", () => {
  test("create, update and delete each write one event of their type about the project", async () => {
    const project = await run(
      projects((p) => p.create(owner, { name: "Evented", visibility: "team", team_id: teamId }))
    )
    await run(projects((p) => p.update(member, project.id, { name: "Evented twice" })))
    await run(projects((p) => p.remove(owner, project.id)))
    const rows = await run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ readonly type: string; readonly payload: string }>`SELECT type, payload FROM events ORDER BY id`
      )
    )
    const about = rows
      .map((row) => ({ type: row.type, event: JSON.parse(row.payload) }))
      .filter(({ event }) => event.data?.id === project.id)
    expect(about.map(({ type }) => type)).toEqual(["project.created", "project.updated", "project.deleted"])
    expect(about.map(({ event }) => event.type)).toEqual(["project.created", "project.updated", "project.deleted"])
    expect(about[1]!.event.data.name).toBe("Evented twice")
    for (const { event } of about) expect(event.id).toMatch(/^evt_/)
  })

  test("a refused update writes no event", async () => {
    const project = await run(projects((p) => p.create(owner, { name: "Quiet" })))
    const before = await countRows("events")
    await fail(projects((p) => p.update(outsider, project.id, { name: "x" })))
    await fail(projects((p) => p.update(owner, project.id, { visibility: "team" })))
    expect(await countRows("events")).toBe(before)
  })
})
