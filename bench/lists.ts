/**
 * List cost against data size: two users, one who can see 1,000 projects and one 100,000 (half their
 * own, half `team` projects of two teams they belong to, among other users' rows), two members of 20 teams who see
 * the team projects of those two teams (500 and 50,000), and the same sizes of API keys,
 * webhooks, deliveries of one webhook, deployments of one project, invitations of one team, members of one team
 * and teams of one user. Times each repository's list (page 1, page 10, page 100 of 20; the median of `--repeat`
 * runs, in ms) on a fresh database, and beside them: the totals alone (from the counters of migration 0006, and
 * the range count a search or date bound still needs), a search, and the former `OR` query for projects.
 *
 *   taskset -c 0 bun bench/lists.ts [--repeat 15] [--only 'teams|API keys']   (SQLite, a temp file; `--only`:
 *                                                the rows whose label holds one of the `|`-separated texts)
 *   DATABASE_URL=postgres://… taskset -c 0 bun bench/lists.ts   (PostgreSQL: a fresh, empty database)
 */

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Layer } from "effect"
import { ApiKeysRepo } from "../src/ApiKeys/Repo.js"
import { DeploymentsRepo } from "../src/Deployments/Repo.js"
import { WebhookId } from "../src/Domain/Ids.js"
import { ProjectsRepo } from "../src/Projects/Repo.js"
import { SqlLive } from "../src/Sql/Client.js"
import { InvitationsRepo, TeamsRepo } from "../src/Teams/Repo.js"
import { UsersRepo } from "../src/Users/Repo.js"
import { WebhooksRepo } from "../src/Webhooks/Repo.js"
import { numbered as id, insertAll as insertRows, iso, webhookRow } from "../test/support/seed.ts"
import { arg } from "./args.ts"

const REPEAT = arg("repeat", 15)
const dir = mkdtempSync(join(tmpdir(), "lists-"))
process.env.DATABASE_URL ??= `sqlite:${join(dir, "lists.sqlite")}`
const engine = process.env.DATABASE_URL.startsWith("postgres") ? "PostgreSQL" : "SQLite"

const who: Record<string, number> = {
  small: 1,
  large: 2,
  other1: 3,
  other2: 4,
  wideSmall: 5,
  wideLarge: 6,
  s1: 1,
  s2: 2,
  l1: 3,
  l2: 4
}
const user = (u: string) => id("usr", who[u]!)
const team = (t: string) => id("team", who[t]!)

const program = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const insertAll = (table: string, rows: ReadonlyArray<Record<string, string | number | null>>) =>
    insertRows(sql, table, rows)

  // Users: small (1k visible), large (100k visible), and others whose rows surround theirs.
  yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_bench", name: "Bench", created_at: iso(0) })}`
  // wideSmall and wideLarge: members of 20 teams, who see the team projects of s1 and s2 (500) or l1 and l2
  // (50,000) among the empty projects lists of 18 more teams.
  const users = ["small", "large", "other1", "other2", "wideSmall", "wideLarge"]
  yield* insertAll(
    "users",
    users.map((u) => ({
      id: user(u),
      org_id: "org_bench",
      email: `${u}@example.com`,
      name: u,
      avatar_url: null,
      password_hash: null,
      created_at: iso(0),
      updated_at: iso(0)
    }))
  )
  const teams = ["s1", "s2", "l1", "l2"]
  yield* insertAll(
    "teams",
    teams.map((t) => ({ id: team(t), org_id: "org_bench", name: t, created_at: iso(0) }))
  )
  const memberships = [
    ["s1", "small"],
    ["s2", "small"],
    ["l1", "large"],
    ["l2", "large"],
    ["s1", "other1"],
    ["s2", "other1"],
    ["l1", "other2"],
    ["l2", "other2"]
  ] as const
  yield* insertAll(
    "team_members",
    memberships.map(([t, u]) => ({
      team_id: team(t),
      user_id: user(u),
      role: "member",
      joined_at: iso(0)
    }))
  )

  let seq = 0
  const project = (owner: string, t: string | null, visibility: string) => {
    const n = ++seq
    return {
      id: id("proj", n),
      owner_id: user(owner),
      team_id: t === null ? null : team(t),
      name: `project ${(n * 7919) % 100_003}`,
      description: "",
      visibility,
      status: n % 10 === 0 ? "archived" : "active",
      created_at: iso(n),
      updated_at: iso(n)
    }
  }
  const seedProjects = (owner: string, [t1, t2]: readonly [string, string], total: number, other: string) => {
    const rows = []
    for (let i = 0; i < total / 2; i++) rows.push(project(owner, null, "private"))
    for (let i = 0; i < total / 4; i++) rows.push(project(other, t1, "team"), project(other, t2, "team"))
    // Rows the user must not see: others' private projects in the same teams.
    for (let i = 0; i < total / 10; i++) rows.push(project(other, t1, "private"))
    return insertAll("projects", rows)
  }
  yield* seedProjects("small", ["s1", "s2"], 1_000, "other1")
  yield* seedProjects("large", ["l1", "l2"], 100_000, "other2")

  const keys = (u: string, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      id: id("key", who[u]! * 1_000_000 + i),
      user_id: user(u),
      name: `key ${(i * 7919) % 100_003}`,
      scopes: `["read"]`,
      prefix: `pcs_${u}${i}`,
      key_hash: `${u}-${i}`,
      created_at: iso(i),
      expires_at: null,
      last_used_at: null,
      revoked_at: null
    }))
  yield* insertAll("api_keys", [...keys("small", 1_000), ...keys("large", 100_000)])
  const hooks = (u: string, count: number) =>
    Array.from({ length: count }, (_, i) =>
      webhookRow(id("whk", who[u]! * 1_000_000 + i), user(u), `https://example.com/${u}/${i}`, i)
    )
  yield* insertAll("webhooks", [...hooks("small", 1_000), ...hooks("large", 100_000)])
  yield* insertAll("events", [
    { id: id("evt", 1), type: "project.created", payload: "{}", trace_context: null, created_at: iso(0) }
  ])
  const deliveries = (u: string, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      id: id("dlv", who[u]! * 1_000_000 + i),
      webhook_id: id("whk", who[u]! * 1_000_000),
      event_id: id("evt", 1),
      event_type: "project.created",
      status: "delivered",
      attempt_count: 1,
      manual: 0,
      next_attempt_at: null,
      last_attempt_at: iso(i),
      claimed_until: null,
      claim_token: null,
      created_at: iso(i)
    }))
  yield* insertAll("deliveries", [...deliveries("small", 1_000), ...deliveries("large", 100_000)])

  // Deployments of the first project of each user; invitations of their first team.
  const firstProject = (u: "small" | "large") => id("proj", u === "small" ? 1 : 1_101)
  const deployments = (u: "small" | "large", count: number) =>
    Array.from({ length: count }, (_, i) => ({
      id: id("dpl", who[u]! * 1_000_000 + i),
      project_id: firstProject(u),
      environment: i % 3 === 0 ? "staging" : "production",
      ref: "main",
      description: "",
      status: i % 10 === 0 ? "failed" : "succeeded",
      created_by: user(u),
      created_at: iso(i),
      updated_at: iso(i),
      finished_at: iso(i)
    }))
  yield* insertAll("deployments", [...deployments("small", 1_000), ...deployments("large", 100_000)])
  const invitations = (u: "small" | "large", t: string, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      id: id("inv", who[u]! * 1_000_000 + i),
      team_id: team(t),
      email: `${u}${i}@example.com`,
      role: "member",
      status: i % 4 === 0 ? "pending" : "accepted",
      invited_by: user(u),
      created_at: iso(i),
      expires_at: iso(20_000_000),
      answered_at: null
    }))
  yield* insertAll("invitations", [...invitations("small", "s1", 1_000), ...invitations("large", "l1", 100_000)])

  // Members of one team, and teams of one user: 1,000 and 100,000 of each (their own users and teams).
  const bulkUsers = Array.from({ length: 101_000 }, (_, i) => id("usr", 1_000 + i))
  yield* insertAll(
    "users",
    bulkUsers.map((u, i) => ({
      id: u,
      org_id: "org_bench",
      email: `member${i}@example.com`,
      name: `member ${(i * 7919) % 100_003}`,
      avatar_url: null,
      password_hash: null,
      created_at: iso(0),
      updated_at: iso(0)
    }))
  )
  const bulkTeams = Array.from({ length: 101_000 }, (_, i) => id("team", 1_000 + i))
  yield* insertAll(
    "teams",
    bulkTeams.map((t, i) => ({
      id: t,
      org_id: "org_bench",
      name: `team ${(i * 7919) % 100_003}`,
      created_at: iso(i),
      updated_at: iso(101_000 + ((i * 104_729) % 101_000))
    }))
  )
  const crowd = { small: id("team", 10), large: id("team", 11) }
  const joiner = { small: bulkUsers[0]!, large: bulkUsers[1]! }
  yield* insertAll(
    "teams",
    [crowd.small, crowd.large].map((t) => ({ id: t, org_id: "org_bench", name: "crowd", created_at: iso(0) }))
  )
  yield* insertAll("team_members", [
    ...bulkUsers
      .slice(0, 1_000)
      .map((u, i) => ({ team_id: crowd.small, user_id: u, role: "member", joined_at: iso(i) })),
    ...bulkUsers.slice(1_000).map((u, i) => ({ team_id: crowd.large, user_id: u, role: "member", joined_at: iso(i) })),
    ...bulkTeams
      .slice(0, 18)
      .flatMap((t) =>
        ["wideSmall", "wideLarge"].map((u) => ({ team_id: t, user_id: user(u), role: "member", joined_at: iso(0) }))
      ),
    ...[
      ["s1", "wideSmall"],
      ["s2", "wideSmall"],
      ["l1", "wideLarge"],
      ["l2", "wideLarge"]
    ].map(([t, u]) => ({ team_id: team(t!), user_id: user(u!), role: "member", joined_at: iso(0) })),
    // The joiners: in 1,000 and 100,000 teams.
    ...bulkTeams
      .slice(0, 1_000)
      .map((t, i) => ({ team_id: t, user_id: joiner.small, role: "member", joined_at: iso(i) })),
    ...bulkTeams.slice(1_000).map((t, i) => ({ team_id: t, user_id: joiner.large, role: "member", joined_at: iso(i) }))
  ])
  // PostgreSQL: VACUUM too, so index-only scans need not visit the heap (autovacuum would, in time).
  yield* engine === "PostgreSQL" ? sql`VACUUM ANALYZE` : sql`ANALYZE`

  const projects = yield* ProjectsRepo
  const apiKeys = yield* ApiKeysRepo
  const webhooks = yield* WebhooksRepo
  const teamsRepo = yield* TeamsRepo
  const usersRepo = yield* UsersRepo
  const invitationsRepo = yield* InvitationsRepo
  const deploymentsRepo = yield* DeploymentsRepo
  const now = iso(10_000_000)
  const query = (page: number, sort: "created_at" | "name" = "created_at") => ({
    page,
    per_page: 20,
    sort,
    order: "desc" as const
  })

  /** The former query: the visibility `OR`, read whole and sorted. */
  const orQuery = (userId: string, page: number) =>
    Effect.all([
      sql`SELECT CAST(count(*) AS INTEGER) AS total FROM projects p WHERE (p.owner_id = ${userId} OR (p.visibility = 'team' AND p.team_id IN (SELECT team_id FROM team_members WHERE user_id = ${userId})))`,
      sql`SELECT p.* FROM projects p WHERE (p.owner_id = ${userId} OR (p.visibility = 'team' AND p.team_id IN (SELECT team_id FROM team_members WHERE user_id = ${userId})))
          ORDER BY p.created_at DESC, p.id DESC LIMIT 20 OFFSET ${(page - 1) * 20}`
    ])

  /** The total alone from the counters: own + teams' − own shared with them (the list reads these with the teams). */
  const counterOnly = (u: "small" | "large") => {
    const [t1, t2] = (u === "small" ? ["s1", "s2"] : ["l1", "l2"]).map(team)
    const sum = (table: string, where: Fragment) => sql`COALESCE((SELECT sum(n) FROM ${sql(table)} WHERE ${where}), 0)`
    return sql`SELECT CAST(${sum("counts_projects_owner", sql`owner_id = ${user(u)}`)} + ${sum(
      "counts_projects_team",
      sql`team_id IN (${t1!}, ${t2!})`
    )} - ${sum("counts_projects_owner", sql`owner_id = ${user(u)} AND shared_team IN (${t1!}, ${t2!})`)} AS INTEGER) AS total`
  }

  /** The total alone as a range count, what a search or a date bound still costs (own, plus each team's others'). */
  const countOnly = (u: "small" | "large") => {
    const [t1, t2] = u === "small" ? ["s1", "s2"] : ["l1", "l2"]
    const team = (t: string) =>
      sql`(SELECT count(*) FROM projects p WHERE p.visibility = 'team' AND p.team_id = ${id("team", who[t]!)} AND p.owner_id <> ${user(u)})`
    return sql`SELECT CAST((SELECT count(*) FROM projects p WHERE p.owner_id = ${user(u)}) + ${team(t1!)} + ${team(t2!)} AS INTEGER) AS total`
  }

  const time = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function* () {
      yield* effect // warm
      const samples: Array<number> = []
      for (let i = 0; i < REPEAT; i++) {
        const started = performance.now()
        yield* effect
        samples.push(performance.now() - started)
      }
      samples.sort((a, b) => a - b)
      return samples[Math.floor(samples.length / 2)]!
    })

  let renames = 0
  type Case = [string, (size: "small" | "large", page: number) => Effect.Effect<unknown, unknown, SqlClient.SqlClient>]
  const cases: Array<Case> = [
    ["projects, created_at", (u, page) => projects.list(user(u), query(page))],
    ["projects: its total alone, counters", (u) => counterOnly(u)],
    ["projects: its total alone, range count", (u) => countOnly(u)],
    [
      "projects, search=project (range count)",
      (u, page) => projects.list(user(u), { ...query(page), search: "project" })
    ],
    ["projects, name", (u, page) => projects.list(user(u), query(page, "name"))],
    ["projects, updated_at", (u, page) => projects.list(user(u), { ...query(page), sort: "updated_at" })],
    ["projects, created_at asc", (u, page) => projects.list(user(u), { ...query(page), order: "asc" })],
    ["projects, status=active", (u, page) => projects.list(user(u), { ...query(page), status: "active" })],
    ["projects, status=archived", (u, page) => projects.list(user(u), { ...query(page), status: "archived" })],
    [
      "projects, name, status=archived",
      (u, page) => projects.list(user(u), { ...query(page, "name"), status: "archived" })
    ],
    [
      "projects, updated_at asc, status=active",
      (u, page) => projects.list(user(u), { ...query(page), sort: "updated_at", order: "asc", status: "active" })
    ],
    ["projects, former OR query", (u, page) => orQuery(user(u), page)],
    [
      "projects, a member of 20 teams (500 / 50k visible)",
      (u, page) => projects.list(user(u === "small" ? "wideSmall" : "wideLarge"), query(page))
    ],
    [
      "projects, a member of 20 teams, name, status=archived",
      (u, page) =>
        projects.list(user(u === "small" ? "wideSmall" : "wideLarge"), { ...query(page, "name"), status: "archived" })
    ],
    ["API keys, created_at", (u, page) => apiKeys.list(user(u), query(page), now)],
    ["API keys, name", (u, page) => apiKeys.list(user(u), query(page, "name"), now)],
    ["API keys, status=active", (u, page) => apiKeys.list(user(u), { ...query(page), status: "active" }, now)],
    ["API keys, status=revoked", (u, page) => apiKeys.list(user(u), { ...query(page), status: "revoked" }, now)],
    ["webhooks, created_at", (u, page) => webhooks.list(user(u), { ...query(page), sort: "created_at" })],
    [
      "deliveries of one webhook",
      (u, page) =>
        webhooks.listDeliveries(WebhookId.make(id("whk", who[u]! * 1_000_000)), { ...query(page), sort: "created_at" })
    ],
    [
      "deliveries, status=delivered",
      (u, page) =>
        webhooks.listDeliveries(WebhookId.make(id("whk", who[u]! * 1_000_000)), {
          ...query(page),
          sort: "created_at",
          status: "delivered"
        })
    ],
    [
      "deployments of one project",
      (u, page) => deploymentsRepo.list(firstProject(u), { ...query(page), sort: "created_at" })
    ],
    ...([undefined, "pending", "expired", "accepted"] as const).map(
      (status): Case => [
        `invitations of one team${status === undefined ? "" : `, status=${status}`}`,
        (u, page) =>
          invitationsRepo.listForTeam(
            team(u === "small" ? "s1" : "l1"),
            { ...query(page), sort: "created_at", status },
            now
          )
      ]
    ),
    ["members of one team, name", (u, page) => teamsRepo.listMembers(crowd[u], { ...query(page), sort: "name" })],
    [
      "members of one team, joined_at",
      (u, page) => teamsRepo.listMembers(crowd[u], { ...query(page), sort: "joined_at" })
    ],
    ["teams of one user, created_at", (u, page) => teamsRepo.listFor(joiner[u], query(page))],
    ["teams of one user, name", (u, page) => teamsRepo.listFor(joiner[u], query(page, "name"))],
    [
      "teams of one user, updated_at asc",
      (u, page) => teamsRepo.listFor(joiner[u], { ...query(page), sort: "updated_at", order: "asc" })
    ],
    [
      "teams of one user, search=team 1 (range count)",
      (u, page) => teamsRepo.listFor(joiner[u], { ...query(page), search: "team 1" })
    ],
    [
      "teams of one user, created_after (range count)",
      (u, page) => teamsRepo.listFor(joiner[u], { ...query(page), created_after: iso(500) })
    ],
    // A write, for what the copies of migration 0007 cost: renaming a team of 1,000 / 100,000 members (the page
    // columns only repeat it).
    [
      "teams: rename a team of 1k / 100k members (write)",
      (u) => Effect.suspend(() => teamsRepo.rename({ teamId: crowd[u], name: `crowd ${++renames}`, at: iso(renames) }))
    ],
    // And of migration 0015's: renaming a user in 1,000 / 100,000 teams (their memberships carry the name).
    [
      "users: rename a user in 1k / 100k teams (write)",
      (u) => Effect.suspend(() => usersRepo.update(joiner[u], { name: `joiner ${++renames}` }, iso(renames)))
    ]
  ]
  const only = process.argv.indexOf("--only")
  const wanted = only >= 0 ? (process.argv[only + 1] ?? "").split("|") : [""]
  const selected = cases.filter(([label]) => wanted.some((part) => label.includes(part)))
  console.log(
    `${engine}; median of ${REPEAT} runs, ms; load average ${(yield* Effect.promise(() => Bun.file("/proc/loadavg").text())).split(" ").slice(0, 3).join(" ")}`
  )
  console.log("| list | 1k: page 1 | 100k: page 1 | ratio | 100k: page 10 | 100k: page 100 |")
  console.log("|---|---|---|---|---|---|")
  // The first list timed would otherwise pay for the code's first runs (the JIT): its 1k figure came out above its
  // 100k one, and above its own page 10. So the first one selected runs unmeasured first.
  for (let i = 0; i < 200; i++) yield* selected[0]?.[1]("small", 1) ?? Effect.void
  for (const [label, run] of selected) {
    const small = yield* time(run("small", 1))
    const large = yield* time(run("large", 1))
    const p10 = yield* time(run("large", 10))
    const p100 = yield* time(run("large", 100))
    console.log(
      `| ${label} | ${small.toFixed(2)} | ${large.toFixed(2)} | ${(large / small).toFixed(2)}× | ${p10.toFixed(2)} | ${p100.toFixed(2)} |`
    )
  }
})

const layer = Layer.mergeAll(
  ProjectsRepo.Default,
  ApiKeysRepo.Default,
  WebhooksRepo.Default,
  TeamsRepo.Default,
  UsersRepo.Default,
  InvitationsRepo.Default,
  DeploymentsRepo.Default
).pipe(Layer.provideMerge(SqlLive))
await Effect.runPromise(Effect.provide(program, layer)).finally(() =>
  process.env.BENCH_KEEP ? undefined : rmSync(dir, { recursive: true, force: true })
)
