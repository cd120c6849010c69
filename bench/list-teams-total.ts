/**
 * What the projects list reads before its page (src/Projects/Repo.ts): the user's teams and the counters' total.
 * Three shapes through the service's SQL client, on a fresh migrated database, for a user in no team (1,000 own
 * projects) and a user in three teams: the teams, then the total (two statements, as before 2026-11-30); the teams
 * joined onto one row that holds the total; the teams with what each adds to the total and a last row with the
 * user's own (`UNION ALL`, the list's). Prints µs a read (wall time, one connection, nothing else running) for each
 * shape in alternating rounds (A B C, C B A, …) and the medians.
 *   taskset -c 0 bun bench/list-teams-total.ts [--reads 20000] [--rounds 4]
 *   DATABASE_URL=postgres://… taskset -c 0 bun bench/list-teams-total.ts
 */
import { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Layer } from "effect"
import { SqlLive } from "../src/Sql/Client.ts"
import { withSettings } from "../test/support/fixtures.ts"
import { removeLeftovers } from "../test/support/leftovers.ts"
import { numbered as id, insertAll, insertOrgUsers, iso } from "../test/support/seed.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"
import { arg } from "./args.ts"
import { median } from "./stats.ts"

const READS = arg("reads", 20_000)
const ROUNDS = arg("rounds", 4)

const databaseUrl = await freshDatabaseUrl()
const alone = id("usr", 1)
const member = id("usr", 2)
const teams = [1, 2, 3].map((n) => id("team", n))

const program = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* insertOrgUsers(sql, "org_bench", [alone, member])
  yield* insertAll(
    sql,
    "teams",
    teams.map((team) => ({ id: team, org_id: "org_bench", name: team, created_at: iso(0) }))
  )
  yield* insertAll(
    sql,
    "team_members",
    teams.map((team) => ({ team_id: team, user_id: member, role: "member", joined_at: iso(0) }))
  )
  const project = (n: number, owner: string, team: string | null) => ({
    id: id("proj", n),
    owner_id: owner,
    team_id: team,
    name: `project ${n}`,
    description: "",
    visibility: team === null ? "private" : "team",
    status: "active",
    created_at: iso(n),
    updated_at: iso(n)
  })
  yield* insertAll(
    sql,
    "projects",
    Array.from({ length: 2_000 }, (_, n) =>
      n < 1_000 ? project(n, alone, null) : project(n, member, n % 2 === 0 ? (teams[n % 3] ?? null) : null)
    )
  )

  const sum = (table: string, where: Fragment) => sql`COALESCE((SELECT sum(n) FROM ${sql(table)} WHERE ${where}), 0)`
  const shapes = (user: string): Record<string, Effect.Effect<unknown, unknown>> => ({
    "teams, then the total": Effect.flatMap(
      sql<{ team_id: string }>`SELECT team_id FROM team_members WHERE user_id = ${user}`,
      (rows) => {
        const ids = rows.map((row) => row.team_id)
        const own = sum("counts_projects_owner", sql`owner_id = ${user}`)
        return ids.length === 0
          ? sql`SELECT CAST(${own} AS INTEGER) AS total`
          : sql`SELECT CAST(${own} + ${sum("counts_projects_team", sql`team_id IN ${sql.in(ids)}`)} - ${sum(
              "counts_projects_owner",
              sql`owner_id = ${user} AND shared_team IN ${sql.in(ids)}`
            )} AS INTEGER) AS total`
      }
    ),
    "teams joined onto one row": sql`SELECT m.team_id,
        CAST(${sum("counts_projects_owner", sql`owner_id = ${user}`)} AS INTEGER) AS own,
        CAST(${sum("counts_projects_team", sql`team_id = m.team_id`)} AS INTEGER) AS team,
        CAST(${sum("counts_projects_owner", sql`owner_id = ${user} AND shared_team = m.team_id`)} AS INTEGER) AS shared
      FROM (SELECT 1 AS one) x LEFT JOIN team_members m ON m.user_id = ${user}`,
    "teams UNION ALL the own": sql`SELECT m.team_id, CAST(${sum("counts_projects_team", sql`team_id = m.team_id`)} - ${sum(
      "counts_projects_owner",
      sql`owner_id = ${user} AND shared_team = m.team_id`
    )} AS INTEGER) AS n FROM team_members m WHERE m.user_id = ${user}
      UNION ALL SELECT NULL, CAST(${sum("counts_projects_owner", sql`owner_id = ${user}`)} AS INTEGER)`
  })

  for (const [who, user] of [
    ["a user in no team", alone],
    ["a user in three teams", member]
  ] as const) {
    const contenders = Object.entries(shapes(user))
    const samples = new Map<string, Array<number>>(contenders.map(([name]) => [name, []]))
    for (const [, read] of contenders) yield* read // warm: each prepared once
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? contenders : [...contenders].reverse()
      for (const [name, read] of order) {
        const started = performance.now()
        for (let i = 0; i < READS; i++) yield* read
        samples.get(name)?.push(((performance.now() - started) * 1000) / READS)
      }
    }
    console.log(`${who} (${READS} reads × ${ROUNDS} rounds):`)
    for (const [name, xs] of samples)
      console.log(`  ${name}: ${median(xs).toFixed(1)} µs a read (rounds ${xs.map((x) => x.toFixed(1)).join(", ")})`)
  }
})

await Effect.runPromise(
  program.pipe(
    Effect.withTracerEnabled(false),
    Effect.provide(SqlLive.pipe(Layer.provide(withSettings({ DATABASE_URL: databaseUrl }))))
  )
)
await removeLeftovers()
