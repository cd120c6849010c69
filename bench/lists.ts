/**
 * List cost against data size (issue 14): two users, one who can see 1,000 projects and one 100,000 (half their
 * own, half `team` projects of two teams they belong to, among other users' rows), and the same sizes of API keys,
 * webhooks and deliveries of one webhook. Times each repository's list (page 1, page 10, page 100 of 20; the
 * median of `--repeat` runs, in ms) on a fresh database, and the former `OR` query for projects beside it.
 *
 *   taskset -c 0 bun bench/lists.ts [--repeat 15]           (SQLite, a temp file)
 *   DATABASE_URL=postgres://… taskset -c 0 bun bench/lists.ts   (PostgreSQL: a fresh, empty database)
 */

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { ApiKeysRepo } from "../src/ApiKeys/Repo.js"
import { WebhookId } from "../src/Domain/Ids.js"
import { ProjectsRepo } from "../src/Projects/Repo.js"
import { SqlLive } from "../src/Sql/Client.js"
import { WebhooksRepo } from "../src/Webhooks/Repo.js"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}
const REPEAT = arg("repeat", 15)
const dir = mkdtempSync(join(tmpdir(), "lists-"))
process.env.DATABASE_URL ??= `sqlite:${join(dir, "lists.sqlite")}`
const engine = process.env.DATABASE_URL.startsWith("postgres") ? "PostgreSQL" : "SQLite"

const iso = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 1000).toISOString()
/** A well-formed id (`<prefix>_` and 26 base32 digits) numbered `n`. */
const id = (prefix: string, n: number) => `${prefix}_${String(n).padStart(26, "0")}`
const who: Record<string, number> = { small: 1, large: 2, other1: 3, other2: 4, s1: 1, s2: 2, l1: 3, l2: 4 }
const user = (u: string) => id("usr", who[u]!)
const team = (t: string) => id("team", who[t]!)

const program = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const insertAll = (table: string, rows: ReadonlyArray<Record<string, string | number | null>>) =>
    Effect.forEach(
      Array.from({ length: Math.ceil(rows.length / 500) }, (_, i) => rows.slice(i * 500, i * 500 + 500)),
      (chunk) => sql`INSERT INTO ${sql(table)} ${sql.insert(chunk)}`,
      { discard: true }
    )

  // Users: small (1k visible), large (100k visible), and others whose rows surround theirs.
  yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_bench", name: "Bench", created_at: iso(0) })}`
  const users = ["small", "large", "other1", "other2"]
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
    Array.from({ length: count }, (_, i) => ({
      id: id("whk", who[u]! * 1_000_000 + i),
      user_id: user(u),
      url: `https://example.com/${u}/${i}`,
      events: `["project.created"]`,
      secret: "s",
      status: "active",
      created_at: iso(i),
      updated_at: iso(i),
      failed_at: null
    }))
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
  // PostgreSQL: VACUUM too, so index-only scans need not visit the heap (autovacuum would, in time).
  yield* engine === "PostgreSQL" ? sql`VACUUM ANALYZE` : sql`ANALYZE`

  const projects = yield* ProjectsRepo
  const apiKeys = yield* ApiKeysRepo
  const webhooks = yield* WebhooksRepo
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

  /** The total alone, as the project list counts it (own, plus each team's `team` projects of others). */
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

  const cases: Array<
    [string, (size: "small" | "large", page: number) => Effect.Effect<unknown, unknown, SqlClient.SqlClient>]
  > = [
    ["projects, created_at", (u, page) => projects.list(user(u), query(page))],
    ["projects, its total alone (count)", (u) => countOnly(u)],
    ["projects, name", (u, page) => projects.list(user(u), query(page, "name"))],
    ["projects, status=archived", (u, page) => projects.list(user(u), { ...query(page), status: "archived" })],
    ["projects, former OR query", (u, page) => orQuery(user(u), page)],
    ["API keys, created_at", (u, page) => apiKeys.list(user(u), query(page), now)],
    ["API keys, name", (u, page) => apiKeys.list(user(u), query(page, "name"), now)],
    ["webhooks, created_at", (u, page) => webhooks.list(user(u), { ...query(page), sort: "created_at" })],
    [
      "deliveries of one webhook",
      (u, page) =>
        webhooks.listDeliveries(WebhookId.make(id("whk", who[u]! * 1_000_000)), { ...query(page), sort: "created_at" })
    ]
  ]
  console.log(
    `${engine}; median of ${REPEAT} runs, ms; load average ${(yield* Effect.promise(() => Bun.file("/proc/loadavg").text())).split(" ").slice(0, 3).join(" ")}`
  )
  console.log("| list | 1k: page 1 | 100k: page 1 | ratio | 100k: page 10 | 100k: page 100 |")
  console.log("|---|---|---|---|---|---|")
  for (const [label, run] of cases) {
    const small = yield* time(run("small", 1))
    const large = yield* time(run("large", 1))
    const p10 = yield* time(run("large", 10))
    const p100 = yield* time(run("large", 100))
    console.log(
      `| ${label} | ${small.toFixed(2)} | ${large.toFixed(2)} | ${(large / small).toFixed(2)}× | ${p10.toFixed(2)} | ${p100.toFixed(2)} |`
    )
  }
})

const layer = Layer.mergeAll(ProjectsRepo.Default, ApiKeysRepo.Default, WebhooksRepo.Default).pipe(
  Layer.provideMerge(SqlLive)
)
await Effect.runPromise(Effect.provide(program, layer)).finally(() =>
  process.env.BENCH_KEEP ? undefined : rmSync(dir, { recursive: true, force: true })
)
