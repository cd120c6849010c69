/**
 * The project list is merged from branches (own projects, then each team's `team` projects of others; issue 14).
 * Every sort, order, page size, status filter and search must give exactly what one sorted `OR` over the user's
 * visible projects would: no duplicate when a project is both the caller's and their team's, nothing missing,
 * nobody else's private project, and the true total.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { listOrder } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let me: TestUser
let other: TestUser
let outsider: TestUser
interface P {
  id: string
  name: string
  status: string
  created_at: string
  updated_at: string
}
const visible: Array<P> = []

const create = async (user: TestUser, body: Record<string, unknown>): Promise<P> => {
  const res = await server.request("/v1/projects", { method: "POST", key: user.key, body })
  expect(res.status).toBe(201)
  return res.body.data
}

beforeAll(async () => {
  server = await startInProcess()
  me = await server.user({ name: "Me" })
  other = await server.user({ name: "Other" })
  outsider = await server.user({ name: "Outsider" })
  const teams: Array<{ id: string }> = []
  for (const name of ["A", "B", "C"]) {
    const team = await server.fixtures.team(name, other.id)
    await server.fixtures.addMember(team.id, me.id, "member")
    teams.push(team)
  }
  const mineInTeam = await server.fixtures.team("Mine", me.id)
  for (let i = 0; i < 7; i++) visible.push(await create(me, { name: `own ${(i * 5) % 7}` }))
  // Mine and shared with my own team: must appear once.
  for (let i = 0; i < 3; i++)
    visible.push(await create(me, { name: `own team ${i}`, visibility: "team", team_id: mineInTeam.id }))
  for (const [t, team] of teams.entries()) {
    for (let i = 0; i < 4; i++)
      visible.push(await create(other, { name: `team ${t} ${(i * 3) % 4}`, visibility: "team", team_id: team.id }))
    await create(other, { name: `private ${t}`, visibility: "private", team_id: team.id }) // not visible
  }
  await create(outsider, { name: "outsider" })
  // Some archived, by their owners.
  for (const p of visible.filter((_, i) => i % 4 === 1)) {
    const owner = p.name.startsWith("own") ? me : other
    const res = await server.request(`/v1/projects/${p.id}`, {
      method: "PUT",
      key: owner.key,
      body: { status: "archived" }
    })
    expect(res.status).toBe(200)
    Object.assign(p, res.body.data)
  }
}, 120_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

const expected = (
  projects: ReadonlyArray<P>,
  sort: "created_at" | "updated_at" | "name",
  order: "asc" | "desc",
  keep: (p: P) => boolean
) =>
  projects
    .filter(keep)
    .sort(listOrder(sort, order))
    .map((p) => p.id)

/** Every sort, order, status filter and search, page by page, against one sorted list of `projects`. */
const mergedLikeOneList = (reader: () => TestUser, projects: ReadonlyArray<P>) => {
  for (const sort of ["created_at", "updated_at", "name"] as const) {
    for (const order of ["asc", "desc"] as const) {
      for (const filter of ["", "&status=archived", "&search=team"]) {
        test(`sort=${sort} order=${order}${filter}: every page as one sorted list would give`, async () => {
          const keep = (p: P) =>
            filter === "&status=archived"
              ? p.status === "archived"
              : filter === "&search=team"
                ? p.name.includes("team")
                : true
          const want = expected(projects, sort, order, keep)
          const got: Array<string> = []
          // Every page, and one past the end (empty).
          for (let page = 1; page <= Math.max(6, Math.ceil(want.length / 5) + 1); page++) {
            const res = await server.request(
              `/v1/projects?sort=${sort}&order=${order}&per_page=5&page=${page}${filter}`,
              { key: reader().key }
            )
            expect(res.status).toBe(200)
            expect(res.body.meta.total).toBe(want.length)
            got.push(...res.body.data.map((p: P) => p.id))
          }
          expect(got).toEqual(want)
        })
      }
    }
  }
}

describe("GET /v1/projects merged from branches", () => {
  mergedLikeOneList(() => me, visible)
})

/**
 * Past 16 teams the team projects are one grouped branch, read team by team (src/Sql/Lists.ts `GroupedBranch`):
 * the same rows as one sorted list too, with the caller's own projects shared with one of those teams once.
 */
describe("GET /v1/projects for a member of many teams (one grouped branch past 16 teams)", () => {
  let many: TestUser
  const seen: Array<P> = []
  beforeAll(async () => {
    many = await server.user({ name: "Many" })
    const teamIds = await Promise.all(
      Array.from({ length: 18 }, async (_, i) => {
        const team = await server.fixtures.team(`Many ${i}`, other.id)
        await server.fixtures.addMember(team.id, many.id, "member")
        return team.id
      })
    )
    for (const [i, teamId] of teamIds.entries()) {
      // Up to 3 a team, so pages of 5 cross teams; one private a team that `many` must not see.
      for (let j = 0; j < (i % 3) + 1; j++)
        seen.push(await create(other, { name: `team ${i} ${(i * 7 + j) % 5}`, visibility: "team", team_id: teamId }))
      if (i % 4 === 0) await create(other, { name: `team private ${i}`, visibility: "private", team_id: teamId })
    }
    for (let i = 0; i < 4; i++) seen.push(await create(many, { name: `mine ${i % 3}` }))
    // Mine and shared with one of those teams: must appear once.
    for (let i = 0; i < 2; i++)
      seen.push(await create(many, { name: `mine team ${i}`, visibility: "team", team_id: teamIds[5] }))
    for (const p of seen.filter((_, i) => i % 3 === 1)) {
      const owner = p.name.startsWith("mine") ? many : other
      const res = await server.request(`/v1/projects/${p.id}`, {
        method: "PUT",
        key: owner.key,
        body: { status: "archived" }
      })
      expect(res.status).toBe(200)
      Object.assign(p, res.body.data)
    }
  }, 300_000)

  mergedLikeOneList(() => many, seen)
})
