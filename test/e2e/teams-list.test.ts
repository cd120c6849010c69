/**
 * `GET /v1/teams` after writes through every path that adds a member or changes what the list sorts by: a team
 * created over HTTP (its owner added) and with the CLI's `teams create`, a member added with the CLI's
 * `teams add-member` and one through an accepted invitation, a rename, a member removed and a team deleted. The
 * list reads the team columns copied onto memberships (migration 0007); each user's list, for every sort and
 * order (walked page by page), search and creation bound, must equal what the teams' own records say (read one by
 * one with `GET /v1/teams/:team_id`), and the copies in the database must equal the teams.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClientLive } from "../../src/Sql/Client.ts"
import { callOn, joinTeam, serverWithUsers } from "../support/api.ts"
import { withDatabaseUrl } from "../support/fixtures.ts"
import { listOrder } from "../support/helpers.ts"
import type { Server, TestUser } from "../support/server.ts"

interface Team {
  readonly id: string
  readonly name: string
  readonly created_at: string
  readonly updated_at: string
  readonly role: string
}

let server: Server
let olive: TestUser
let adam: TestUser
let mia: TestUser

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

const ok = async (user: TestUser, method: string, path: string, body?: unknown) => {
  const res = await call(user, method, path, body)
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`)
  return res.body
}

/** Every page of `query` (per_page 2), in order; the total each page reports must be the same. */
const walk = async (user: TestUser, query: string): Promise<{ items: Array<Team>; total: number }> => {
  const items: Array<Team> = []
  const totals = new Set<number>()
  for (let page = 1; page <= 20; page++) {
    const body = await ok(user, "GET", `/v1/teams?per_page=2&page=${page}${query}`)
    totals.add(body.meta.total)
    if (body.data.length === 0) break
    items.push(...body.data)
  }
  expect(totals.size).toBe(1)
  return { items, total: [...totals][0]! }
}

/** What the list must answer, from the teams' own records: filtered, sorted with the id as tie-break. */
const expected = (
  teams: ReadonlyArray<Team>,
  sort: "created_at" | "updated_at" | "name",
  order: "asc" | "desc",
  keep: (team: Team) => boolean = () => true
) => teams.filter(keep).sort(listOrder(sort, order))

/** `user`'s teams as each one reads alone (`GET /v1/teams/:team_id`), given the ids they should be in. */
const recordsOf = (user: TestUser, ids: ReadonlyArray<string>) =>
  Promise.all(ids.map(async (id) => (await ok(user, "GET", `/v1/teams/${id}`)).data as Team))

/** The memberships whose copied team columns differ from the team's, read from the server's database. */
const staleCopies = async () => {
  const runtime = ManagedRuntime.make(SqlClientLive.pipe(Layer.provide(withDatabaseUrl(server.databaseUrl))))
  try {
    return await runtime.runPromise(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`SELECT m.team_id, m.user_id FROM team_members m JOIN teams t ON t.id = m.team_id
          WHERE m.team_name <> t.name OR m.team_created_at <> t.created_at OR m.team_updated_at <> t.updated_at`
      )
    )
  } finally {
    await runtime.dispose()
  }
}

describe("GET /v1/teams after every kind of membership and team write", () => {
  test("each user's list, every sort, order, search and bound, equals the teams' own records", async () => {
    // Olive creates four over HTTP (she is their owner); Mia one with the CLI.
    const made: Array<Team> = []
    for (const name of ["Kiwi", "Apple", "Mango", "Fig"])
      made.push((await ok(olive, "POST", "/v1/teams", { name })).data)
    const [kiwi, apple, mango, fig] = made.map((team) => team.id) as [string, string, string, string]
    const banana = (await server.cli<{ id: string }>("teams", "create", "--name", "Banana", "--owner", mia.id)).id
    // Mia joins Kiwi by the CLI, Adam joins Mango and Banana through invitations, and Fig through the CLI.
    await server.cli("teams", "add-member", "--team", kiwi, "--user", mia.id, "--role", "admin")
    await joinTeam(server, mango, adam, "member", olive)
    await joinTeam(server, banana, adam, "admin", mia)
    await server.cli("teams", "add-member", "--team", fig, "--user", adam.id)
    await joinTeam(server, apple, mia, "member", olive)
    // Renames: Apple by its owner (it sorts last by name now), Banana by its admin.
    await ok(olive, "PUT", `/v1/teams/${apple}`, { name: "Zucchini" })
    await ok(adam, "PUT", `/v1/teams/${banana}`, { name: "Blueberry" })
    // Fig is deleted; Mia leaves Kiwi.
    await ok(olive, "DELETE", `/v1/teams/${fig}`)
    await ok(mia, "DELETE", `/v1/teams/${kiwi}/members/${mia.id}`)

    const membership: ReadonlyArray<readonly [TestUser, ReadonlyArray<string>]> = [
      [olive, [kiwi, apple, mango]],
      [adam, [mango, banana]],
      [mia, [banana, apple]]
    ]
    for (const [user, ids] of membership) {
      const teams = await recordsOf(user, ids)
      for (const sort of ["created_at", "updated_at", "name"] as const) {
        for (const order of ["asc", "desc"] as const) {
          const want = expected(teams, sort, order)
          expect({ user: user.name, sort, order, ...(await walk(user, `&sort=${sort}&order=${order}`)) }).toEqual({
            user: user.name,
            sort,
            order,
            items: want,
            total: want.length
          })
        }
      }
      for (const search of ["zucch", "APPLE", "an", "e"]) {
        const want = expected(teams, "name", "asc", (t) => t.name.toLowerCase().includes(search.toLowerCase()))
        expect({ user: user.name, search, ...(await walk(user, `&sort=name&order=asc&search=${search}`)) }).toEqual({
          user: user.name,
          search,
          items: want,
          total: want.length
        })
      }
      const middle = teams.map((t) => t.created_at).sort()[1]!
      for (const [bound, keep] of [
        ["created_after", (t: Team) => t.created_at > middle],
        ["created_before", (t: Team) => t.created_at < middle]
      ] as const) {
        const want = expected(teams, "created_at", "desc", keep)
        expect({ user: user.name, bound, ...(await walk(user, `&${bound}=${middle}`)) }).toEqual({
          user: user.name,
          bound,
          items: want,
          total: want.length
        })
      }
    }
    // The renamed teams read with their new names in every member's list; the old names find nothing.
    expect((await walk(mia, "&search=apple")).items).toEqual([])
    expect((await walk(adam, "&search=blueberry")).items.map((t) => t.id)).toEqual([banana])
    expect(await staleCopies()).toEqual([])
  }, 60_000)
})
