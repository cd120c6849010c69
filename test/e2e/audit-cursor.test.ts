/**
 * The audit logs' cursor (`GET /v1/teams/:team_id/audit-log?after=`, `GET /v1/users/me/audit-log?after=`): walking
 * either log with `after` while several writers add records sees every record exactly once, oldest first; the
 * filters; `Link: rel="next"` while a page is full; 404 for a record outside that log, 410 `cursor_expired` for one
 * retention removed, 400 for a malformed id and for numbered-paging parameters beside it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let ann: TestUser
let bob: TestUser
let teamId = ""
let firstTeamRecord = ""

interface Rec {
  readonly id: string
  readonly action: string
  readonly actor: { readonly type: string; readonly id?: string }
  readonly team_id: string | null
}

const get = (user: TestUser, path: string) => server.request(path, { key: user.key })

/** Every record of a log, numbered pages, newest first. */
const numbered = async (user: TestUser, path: string): Promise<Array<Rec>> => {
  const out: Array<Rec> = []
  for (let page = 1; ; page++) {
    const res = await get(user, `${path}${path.includes("?") ? "&" : "?"}per_page=100&page=${page}`)
    expect(res.status).toBe(200)
    out.push(...res.body.data)
    if (res.body.data.length < 100) return out
  }
}

/** One cursor page after `after`. */
const pageAfter = async (user: TestUser, path: string, after: string, extra = "") => {
  const res = await get(user, `${path}?after=${after}&per_page=5${extra}`)
  expect(res.status).toBe(200)
  return res
}

beforeAll(async () => {
  server = await startInProcess()
  ann = await server.user({ name: "Ann", scopes: "read,write,team:manage" })
  bob = await server.user({ name: "Bob", scopes: "read,write,team:manage" })
  const team = await server.request("/v1/teams", { method: "POST", key: ann.key, body: { name: "Crew" } })
  expect(team.status).toBe(201)
  teamId = team.body.data.id
  const log = await numbered(ann, `/v1/teams/${teamId}/audit-log`)
  expect(log.map((record) => record.action)).toEqual(["team.created"])
  firstTeamRecord = log[0]!.id
}, 60_000)
afterAll(() => server?.stop(), 20_000)

describe("walking the audit logs with after while records are written", () => {
  test("each log's walk sees every record exactly once, oldest first", async () => {
    const write = async (n: number) => {
      for (let i = 0; i < 8; i++) {
        const renamed = await server.request(`/v1/teams/${teamId}`, {
          method: "PUT",
          key: ann.key,
          body: { name: `Crew ${n}-${i}` }
        })
        expect(renamed.status).toBe(200)
        const project = await server.request("/v1/projects", {
          method: "POST",
          key: ann.key,
          body: { name: `P ${n}-${i}` }
        })
        expect(project.status).toBe(201)
        // Bob's records are in neither of Ann's logs.
        await server.request("/v1/projects", { method: "POST", key: bob.key, body: { name: `B ${n}-${i}` } })
      }
    }
    const targets = new Map<string, number>()
    const walk = async (path: string, start: string) => {
      const seen: Array<string> = [start]
      // Until the writers are done and the walk holds as many records as the numbered listing then shows (on
      // PostgreSQL the last ones are shown once every transaction below them has ended).
      const deadline = Date.now() + 40_000
      while (Date.now() < deadline && (targets.get(path) === undefined || seen.length < targets.get(path)!)) {
        const res = await pageAfter(ann, path, seen[seen.length - 1]!)
        const ids = res.body.data.map((record: Rec) => record.id)
        seen.push(...ids)
        if (ids.length === 0) await Bun.sleep(20)
      }
      return seen
    }
    const teamPath = `/v1/teams/${teamId}/audit-log`
    const myPath = "/v1/users/me/audit-log"
    const walkers = [walk(teamPath, firstTeamRecord), walk(myPath, firstTeamRecord)]
    await Promise.all([write(0), write(1), write(2)])
    const teamAll = (await numbered(ann, teamPath)).map((record) => record.id)
    const allOfAnn = (await numbered(ann, myPath)).map((record) => record.id)
    // Ann's records from the team's creation on (the numbered listing is newest first).
    const myAll = allOfAnn.slice(0, allOfAnn.indexOf(firstTeamRecord) + 1)
    expect(teamAll).toHaveLength(1 + 24)
    expect(myAll).toHaveLength(1 + 48)
    targets.set(teamPath, teamAll.length)
    targets.set(myPath, myAll.length)
    const [settledTeam = [], myWalk = []] = await Promise.all(walkers)
    // Nothing more, and every record exactly once.
    expect((await get(ann, `${teamPath}?after=${settledTeam[settledTeam.length - 1]}`)).body.data).toEqual([])
    expect((await get(ann, `${myPath}?after=${myWalk[myWalk.length - 1]}`)).body.data).toEqual([])
    expect(new Set(settledTeam).size).toBe(settledTeam.length)
    expect([...settledTeam].sort()).toEqual([...teamAll].sort())
    expect(new Set(myWalk).size).toBe(myWalk.length)
    expect([...myWalk].sort()).toEqual([...myAll].sort())
    // In order: a second walk from the start, once settled, is the same sequence.
    const again: Array<string> = [firstTeamRecord]
    for (;;) {
      const res = await pageAfter(ann, teamPath, again[again.length - 1]!)
      if (res.body.data.length === 0) break
      again.push(...res.body.data.map((record: Rec) => record.id))
    }
    expect(again).toEqual(settledTeam)
  }, 60_000)
})

describe("the cursor's rules", () => {
  test("Link rel=next while the page is full, none after a short page; per_page 1-100", async () => {
    const path = `/v1/teams/${teamId}/audit-log`
    const first = await get(ann, `${path}?after=${firstTeamRecord}&per_page=2`)
    expect(first.status).toBe(200)
    expect(first.body.data).toHaveLength(2)
    expect(first.body.meta.per_page).toBe(2)
    const link = first.headers.get("link") ?? ""
    expect(link).toContain('rel="next"')
    expect(link).toContain(`after=${first.body.data[1].id}`)
    const rest = await get(ann, `${path}?after=${firstTeamRecord}&per_page=100`)
    expect(rest.headers.get("link")).toBeNull()
    expect((await get(ann, `${path}?after=${firstTeamRecord}&per_page=0`)).status).toBe(400)
    expect((await get(ann, `${path}?after=${firstTeamRecord}&per_page=101`)).status).toBe(400)
  })

  test("the action and actor_id filters still apply", async () => {
    const renamed = await get(ann, `/v1/users/me/audit-log?after=${firstTeamRecord}&per_page=100&action=team.renamed`)
    expect(renamed.status).toBe(200)
    expect(renamed.body.data.length).toBeGreaterThan(0)
    expect(renamed.body.data.every((record: Rec) => record.action === "team.renamed")).toBe(true)
    const byBob = await get(ann, `/v1/teams/${teamId}/audit-log?after=${firstTeamRecord}&actor_id=${bob.id}`)
    expect(byBob.status).toBe(200)
    expect(byBob.body.data).toEqual([])
    const byAnn = await get(
      ann,
      `/v1/teams/${teamId}/audit-log?after=${firstTeamRecord}&per_page=100&actor_id=${ann.id}`
    )
    expect(byAnn.body.data.every((record: Rec) => record.actor.id === ann.id)).toBe(true)
  })

  test("a record outside the log is 404; a malformed id and numbered paging beside after are 400", async () => {
    const bobs = await numbered(bob, "/v1/users/me/audit-log")
    const bobRecord = bobs[0]!.id
    const mine = await get(ann, `/v1/users/me/audit-log?after=${bobRecord}`)
    expect(mine.status).toBe(404)
    // Ann's personal project record is hers, but not the team's.
    const annOwn = (await numbered(ann, "/v1/users/me/audit-log?action=project.created"))[0]!.id
    expect((await get(ann, `/v1/teams/${teamId}/audit-log?after=${annOwn}`)).status).toBe(404)
    // Bob is not in the team: 404 as every team read.
    expect((await get(bob, `/v1/teams/${teamId}/audit-log?after=${firstTeamRecord}`)).status).toBe(404)
    expect((await get(ann, "/v1/users/me/audit-log?after=evt_nope")).status).toBe(400)
    const beside = await get(ann, `/v1/users/me/audit-log?after=${annOwn}&page=2&created_after=2020-01-01T00:00:00Z`)
    expect(beside.status).toBe(400)
    expect(beside.body.error.details).toEqual([
      { field: "page", message: "is not allowed with after" },
      { field: "created_after", message: "is not allowed with after" }
    ])
  })

  test("a record retention removed is 410 cursor_expired; a made-up id newer than any removed stays 404", async () => {
    const carl = await server.user({ name: "Carl" })
    await server.request("/v1/projects", { method: "POST", key: carl.key, body: { name: "old" } })
    await server.request("/v1/projects", { method: "POST", key: carl.key, body: { name: "new" } })
    const [newer, older] = await numbered(carl, "/v1/users/me/audit-log?action=project.created")
    const old = new Date(Date.now() - 400 * 86_400_000).toISOString()
    await server.fixtures.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql`UPDATE audit_log SET created_at = ${old} WHERE id = ${older!.id}`
      )
    )
    const pruned = await server.cli("prune")
    expect(pruned.audit).toBeGreaterThanOrEqual(1)
    const gone = await get(carl, `/v1/users/me/audit-log?after=${older!.id}`)
    expect(gone.status).toBe(410)
    expect(gone.body.error.code).toBe("cursor_expired")
    expect((await get(carl, `/v1/users/me/audit-log?after=${newer!.id}`)).status).toBe(200)
    const never = `${newer!.id.slice(0, 14)}zzzzzzzzzzzzzzzz`
    expect((await get(carl, `/v1/users/me/audit-log?after=${never}`)).status).toBe(404)
  })
})

test("the OpenAPI document declares after and 410 on both audit logs", async () => {
  const res = await server.request("/v1/openapi.json")
  for (const path of ["/v1/teams/{team_id}/audit-log", "/v1/users/me/audit-log"]) {
    const op = res.body.paths[path].get
    expect(op.parameters.map((parameter: { name: string }) => parameter.name)).toContain("after")
    expect(Object.keys(op.responses)).toContain("410")
  }
})
