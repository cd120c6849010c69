/**
 * The events feed in-process, on the engine `DATABASE_URL` selects (a fresh database; a SQLite file otherwise),
 * with the real service layers: an event's audience is the users its deliveries' webhooks were chosen from
 * (decisions.md, "Events feed") — the owner of a project; for a team project also the team's owners and admins;
 * for member.joined / member.removed also the member — fixed when it was written, whoever has a webhook, and
 * unchanged when memberships change afterwards. Then the list's filters, paging and totals, and 404 for an event
 * outside the caller's audience.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { EventType } from "../../src/Domain/EventTypes.ts"
import { EventId } from "../../src/Domain/Ids.ts"
import type { Principal } from "../../src/Domain/Principal.ts"
import { EventFeed } from "../../src/Events/Feed.ts"
import type { EventListQuery } from "../../src/Events/Repo.ts"
import { Projects } from "../../src/Projects/Projects.ts"
import { Teams } from "../../src/Teams/Teams.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { onSelectedEngine, principalOf, type ServiceHarness } from "../support/services.ts"

type Services = Projects | Teams | Users | EventFeed
let harness: ServiceHarness<Services>

let olga: Principal // owns the team
let ada: Principal // admin of the team
let max: Principal // plain member of the team
let lena: Principal // joins the team, then leaves
let xavi: Principal // in no team
let teamId: string

const newUser = (name: string) =>
  harness.run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail(name.toLowerCase()), name })))

const feedOf = (who: Principal, query: Partial<EventListQuery> = {}) =>
  harness.run(
    Effect.flatMap(EventFeed, (feed) =>
      feed.list(who, { page: 1, per_page: 100, sort: "created_at", order: "desc", ...query })
    )
  )

/** The events of `who`'s feed about `subject` (a project or team id, or a member's user id in `data`). */
const typesAbout = async (who: Principal, subject: string) =>
  (await feedOf(who)).items
    .filter((event) => JSON.stringify(event.data).includes(subject))
    .map((event): string => event.type)
    .reverse()

beforeAll(async () => {
  harness = await onSelectedEngine(Layer.mergeAll(Projects.Default, Teams.Default, Users.Default, EventFeed.Default))
  const [o, a, m, l, x] = await Promise.all(["Olga", "Ada", "Max", "Lena", "Xavi"].map(newUser))
  olga = principalOf(o!)
  ada = principalOf(a!)
  max = principalOf(m!)
  lena = principalOf(l!)
  xavi = principalOf(x!)
  const team = await harness.run(Effect.flatMap(Teams, (teams) => teams.create({ name: "Crew", ownerId: olga.userId })))
  teamId = team.id
  await harness.run(
    Effect.flatMap(Teams, (teams) =>
      Effect.zipRight(
        teams.addMember({ teamId, userId: ada.userId, role: "admin" }),
        teams.addMember({ teamId, userId: max.userId, role: "member" })
      )
    )
  )
}, 60_000)
afterAll(() => harness.dispose(), 20_000)

describe("an event's audience", () => {
  test("a private project's events: its owner only", async () => {
    const project = await harness.run(Effect.flatMap(Projects, (p) => p.create(olga, { name: "Solo" })))
    await harness.run(Effect.flatMap(Projects, (p) => p.update(olga, project.id, { description: "changed" })))
    expect(await typesAbout(olga, project.id)).toEqual(["project.created", "project.updated"])
    for (const other of [ada, max, lena, xavi]) expect(await typesAbout(other, project.id)).toEqual([])
  })

  test("a team project's events: its owner and the team's owners and admins, not its plain members", async () => {
    const project = await harness.run(
      Effect.flatMap(Projects, (p) => p.create(max, { name: "Shared", team_id: teamId, visibility: "team" }))
    )
    await harness.run(Effect.flatMap(Projects, (p) => p.remove(max, project.id)))
    const both = ["project.created", "project.deleted"]
    expect(await typesAbout(max, project.id)).toEqual(both) // the owner
    expect(await typesAbout(olga, project.id)).toEqual(both) // team owner
    expect(await typesAbout(ada, project.id)).toEqual(both) // team admin
    expect(await typesAbout(lena, project.id)).toEqual([])
    expect(await typesAbout(xavi, project.id)).toEqual([])
  })

  test("member.joined and member.removed: the team's owners and admins and the member; the audience stays after they leave", async () => {
    await harness.run(
      Effect.flatMap(Teams, (teams) => teams.addMember({ teamId, userId: lena.userId, role: "member" }))
    )
    const project = await harness.run(
      Effect.flatMap(Projects, (p) => p.create(olga, { name: "Before Lena left", team_id: teamId, visibility: "team" }))
    )
    await harness.run(Effect.flatMap(Teams, (teams) => teams.removeMember(lena, teamId, lena.userId)))
    const joinedAndRemoved = ["member.joined", "member.removed"]
    expect(await typesAbout(lena, lena.userId)).toEqual(joinedAndRemoved)
    expect(await typesAbout(olga, lena.userId)).toEqual(joinedAndRemoved)
    expect(await typesAbout(ada, lena.userId)).toEqual(joinedAndRemoved)
    expect(await typesAbout(max, lena.userId)).toEqual([])
    expect(await typesAbout(xavi, lena.userId)).toEqual([])
    // Lena, a plain member, was never in the team project's audience; Ada was, and stays so after being demoted.
    expect(await typesAbout(lena, project.id)).toEqual([])
    await harness.run(Effect.flatMap(Teams, (teams) => teams.setRole(olga, teamId, ada.userId, "member")))
    expect(await typesAbout(ada, project.id)).toEqual(["project.created"])
    await harness.run(Effect.flatMap(Projects, (p) => p.update(olga, project.id, { description: "after" })))
    expect(await typesAbout(ada, project.id)).toEqual(["project.created"])
    expect(await typesAbout(olga, project.id)).toEqual(["project.created", "project.updated"])
    // Ada's removal from the team does not take the old events out of her feed either.
    await harness.run(Effect.flatMap(Teams, (teams) => teams.removeMember(olga, teamId, ada.userId)))
    expect(await typesAbout(ada, project.id)).toEqual(["project.created"])
  })

  test("each user is in an event's audience once, however they are reached (owner and team owner)", async () => {
    const project = await harness.run(
      Effect.flatMap(Projects, (p) => p.create(olga, { name: "Own team project", team_id: teamId, visibility: "team" }))
    )
    expect(await typesAbout(olga, project.id)).toEqual(["project.created"])
  })
})

describe("the list", () => {
  let pat: Principal
  const created: Array<{ readonly id: string; readonly type: EventType; readonly created_at: string }> = []

  beforeAll(async () => {
    const user = await newUser("Pat")
    pat = principalOf(user)
    for (let i = 0; i < 7; i++) {
      const project = await harness.run(Effect.flatMap(Projects, (p) => p.create(pat, { name: `P${i}` })))
      if (i % 3 === 0) await harness.run(Effect.flatMap(Projects, (p) => p.update(pat, project.id, { name: `Q${i}` })))
      if (i % 3 === 1) await harness.run(Effect.flatMap(Projects, (p) => p.remove(pat, project.id)))
    }
    const all = await feedOf(pat)
    created.push(...all.items.map((e) => ({ id: e.id, type: e.type, created_at: e.created_at })))
  })

  test("newest first, with the exact total", async () => {
    // 7 creates, 3 updates (i = 0, 3, 6), 2 deletes (i = 1, 4)
    expect(created).toHaveLength(12)
    const page = await feedOf(pat)
    expect(page.total).toBe(12)
    const keys = created.map((e) => `${e.created_at} ${e.id}`)
    expect(keys).toEqual([...keys].sort().reverse())
  })

  test("type: one type, or several", async () => {
    const updated = await feedOf(pat, { types: ["project.updated"] })
    expect(updated.total).toBe(3)
    expect(updated.items.map((e): string => e.id)).toEqual(
      created.filter((e) => e.type === "project.updated").map((e) => e.id)
    )
    const two = await feedOf(pat, { types: ["project.deleted", "project.updated"] })
    expect(two.total).toBe(5)
    expect(two.items.map((e): string => e.id)).toEqual(
      created.filter((e) => e.type !== "project.created").map((e) => e.id)
    )
    const none = await feedOf(pat, { types: ["deployment.failed"] })
    expect(none).toMatchObject({ total: 0, items: [] })
  })

  test("pages do not overlap or skip, with the type filter too", async () => {
    const seen: Array<string> = []
    for (let page = 1; page <= 5; page++) {
      const got = await feedOf(pat, { page, per_page: 5 })
      expect(got.total).toBe(12)
      seen.push(...got.items.map((e): string => e.id))
    }
    expect(seen).toEqual(created.map((e) => e.id))
    const typed: Array<string> = []
    for (let page = 1; page <= 3; page++) {
      const got = await feedOf(pat, { page, per_page: 2, types: ["project.created", "project.updated"] })
      expect(got.total).toBe(10)
      typed.push(...got.items.map((e): string => e.id))
    }
    expect(typed).toEqual(
      created
        .filter((e) => e.type !== "project.deleted")
        .map((e) => e.id)
        .slice(0, 6)
    )
  })

  test("created_after and created_before bound the creation time (exclusive)", async () => {
    const oldestFirst = [...created].reverse()
    const pivot = oldestFirst[5]!
    const after = await feedOf(pat, { created_after: pivot.created_at })
    expect(after.items.map((e): string => e.id)).toEqual(
      created.filter((e) => e.created_at > pivot.created_at).map((e) => e.id)
    )
    expect(after.total).toBe(after.items.length)
    const before = await feedOf(pat, { created_before: pivot.created_at, types: ["project.created"] })
    expect(before.items.map((e): string => e.id)).toEqual(
      created.filter((e) => e.created_at < pivot.created_at && e.type === "project.created").map((e) => e.id)
    )
    expect(before.total).toBe(before.items.length)
  })
})

describe("one event", () => {
  test("its audience reads it as listed; anyone else, or an id that does not exist, gets 404", async () => {
    const project = await harness.run(Effect.flatMap(Projects, (p) => p.create(xavi, { name: "Mine alone" })))
    const [listed] = (await feedOf(xavi, { types: ["project.created"] })).items
    expect(listed?.data).toMatchObject({ id: project.id })
    const id = EventId.make(listed!.id)
    const got = await harness.run(Effect.flatMap(EventFeed, (feed) => feed.get(xavi, id)))
    expect(got).toEqual(listed!)
    for (const other of [olga, max]) {
      const error = await harness.fail(Effect.flatMap(EventFeed, (feed) => feed.get(other, id)))
      expect(error).toMatchObject({ _tag: "NotFound", message: `No event with id ${id}` })
    }
    const missing = EventId.make("evt_01jd3xkq8w0000000000000000")
    const error = await harness.fail(Effect.flatMap(EventFeed, (feed) => feed.get(xavi, missing)))
    expect(error).toMatchObject({ _tag: "NotFound" })
  })

  test("the event row and its audience rows are written together, and retention's delete of an event takes its audience", async () => {
    const project = await harness.run(Effect.flatMap(Projects, (p) => p.create(xavi, { name: "To be swept" })))
    const [event] = (await feedOf(xavi)).items.filter((e) => JSON.stringify(e.data).includes(project.id))
    const count = () =>
      harness.run(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{
              readonly n: number
            }>`SELECT CAST(count(*) AS INTEGER) AS n FROM event_audience WHERE event_id = ${event!.id}`
        )
      )
    expect(Number((await count())[0]?.n)).toBe(1)
    await harness.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM events WHERE id = ${event!.id}`))
    expect(Number((await count())[0]?.n)).toBe(0)
  })
})
