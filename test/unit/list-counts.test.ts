/**
 * The list counters of migration 0006, against the rows they count, on the engine `DATABASE_URL` selects (SQLite
 * when unset; run again with a PostgreSQL URL). Writes go straight to SQL, so every kind of change the triggers
 * must follow can be made, including ones the API never makes (a project's owner or team changed, a delivery
 * moved to another webhook, a member moved to another team): inserts (one row and many in one statement),
 * status, visibility, team, owner and key changes, updates of many rows at once, updates that change nothing
 * counted, deletes and foreign-key cascades (a user, a team, a webhook, a project deleted). After each round every
 * counter table must equal a fresh `GROUP BY` of its source rows, with no zero or negative rows left behind. The
 * backfill is checked the same way: rows written before the migration, counted by it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClientLive, SqlLive } from "../../src/Sql/Client.ts"
import { runMigrationsBefore } from "../../src/Sql/Migrations.ts"
import { withDatabaseUrl } from "../support/fixtures.ts"
import { idMaker, type Pick, random, randomWriteOf, writeInRounds } from "../support/randomWrites.ts"
import { freshDatabaseUrl, usingPostgres } from "../support/server.ts"

/** Each counter table, its key columns, and the same keys counted afresh from the source rows. */
const oracles: ReadonlyArray<readonly [table: string, keys: string, fresh: string]> = [
  [
    "counts_projects_owner",
    "owner_id, shared_team, status",
    `SELECT owner_id, CASE WHEN visibility = 'team' AND team_id IS NOT NULL THEN team_id ELSE '' END AS shared_team,
       status, count(*) AS n FROM projects GROUP BY 1, 2, 3`
  ],
  [
    "counts_projects_team",
    "team_id, status",
    `SELECT team_id, status, count(*) AS n FROM projects
     WHERE visibility = 'team' AND team_id IS NOT NULL GROUP BY 1, 2`
  ],
  [
    "counts_api_keys",
    "user_id, state",
    `SELECT user_id, CASE WHEN revoked_at IS NULL THEN 'unrevoked' ELSE 'revoked' END AS state, count(*) AS n
     FROM api_keys GROUP BY 1, 2`
  ],
  ["counts_webhooks", "user_id, status", "SELECT user_id, status, count(*) AS n FROM webhooks GROUP BY 1, 2"],
  ["counts_deliveries", "webhook_id, status", "SELECT webhook_id, status, count(*) AS n FROM deliveries GROUP BY 1, 2"],
  [
    "counts_deployments",
    "project_id, environment, status",
    "SELECT project_id, environment, status, count(*) AS n FROM deployments GROUP BY 1, 2, 3"
  ],
  ["counts_members_team", "team_id", "SELECT team_id, count(*) AS n FROM team_members GROUP BY 1"],
  ["counts_members_user", "user_id", "SELECT user_id, count(*) AS n FROM team_members GROUP BY 1"],
  ["counts_invitations", "team_id, status", "SELECT team_id, status, count(*) AS n FROM invitations GROUP BY 1, 2"]
]

type Row = Record<string, unknown>
const canonical = (rows: ReadonlyArray<Row>) =>
  rows.map((row) => JSON.stringify(Object.entries(row).map(([k, v]) => [k, k === "n" ? Number(v) : v]))).sort()

/** Every counter table against its fresh count; the tables' own rows must all be positive. */
const checkAll = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const [table, keys, fresh] of oracles) {
    const counted = yield* sql.unsafe<Row>(
      `SELECT ${keys}, CAST(sum(n) AS INTEGER) AS n FROM ${table} GROUP BY ${keys}`
    )
    const expected = yield* sql.unsafe<Row>(`SELECT ${keys}, CAST(n AS INTEGER) AS n FROM (${fresh}) f`)
    expect({ table, rows: canonical(counted) }).toEqual({ table, rows: canonical(expected) })
    const bad = yield* sql.unsafe<Row>(`SELECT * FROM ${table} WHERE n <= 0`)
    expect({ table, bad }).toEqual({ table, bad: [] })
  }
})

const T = "2025-01-01T00:00:00.000Z"
/** Well-formed ids (`<prefix>_` and 26 base32 digits). */
const next = idMaker()

/** Rows of every counted table, inserted as one statement per table (so many rows per statement). */
const seed = (users: ReadonlyArray<string>, teams: ReadonlyArray<string>, pick: <A>(xs: ReadonlyArray<A>) => A) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_counts", name: "Counts", created_at: T })}`.pipe(
      Effect.catchAll(() => Effect.void)
    )
    yield* sql`INSERT INTO users ${sql.insert(
      users.map((id) => ({
        id,
        org_id: "org_counts",
        email: `${id}@example.com`,
        name: id,
        avatar_url: null,
        password_hash: null,
        created_at: T,
        updated_at: T
      }))
    )}`
    yield* sql`INSERT INTO teams ${sql.insert(teams.map((id) => ({ id, org_id: "org_counts", name: id, created_at: T })))}`
    const members = teams.flatMap((team) =>
      users.filter((_, i) => (i + team.length) % 2 === 0).map((user) => ({ team, user }))
    )
    yield* sql`INSERT INTO team_members ${sql.insert(
      members.map(({ team, user }) => ({ team_id: team, user_id: user, role: "member", joined_at: T }))
    )}`
    const projects = Array.from({ length: 40 }, () => project(pick(users), pick([null, ...teams]), pick))
    yield* sql`INSERT INTO projects ${sql.insert(projects)}`
    yield* sql`INSERT INTO api_keys ${sql.insert(Array.from({ length: 20 }, () => apiKey(pick(users), pick)))}`
    const hooks = Array.from({ length: 8 }, () => webhook(pick(users), pick))
    yield* sql`INSERT INTO webhooks ${sql.insert(hooks)}`
    yield* sql`INSERT INTO events ${sql.insert({ id: "evt_counts", type: "project.created", payload: "{}", trace_context: null, created_at: T })}`.pipe(
      Effect.catchAll(() => Effect.void)
    )
    yield* sql`INSERT INTO deliveries ${sql.insert(Array.from({ length: 30 }, () => delivery(pick(hooks).id, pick)))}`
    yield* sql`INSERT INTO deployments ${sql.insert(
      Array.from({ length: 20 }, () => deployment(pick(projects).id, pick(users), pick))
    )}`
    yield* sql`INSERT INTO invitations ${sql.insert(Array.from({ length: 15 }, () => invitation(pick(teams), pick(users), pick)))}`
    return { projects: projects.map((p) => p.id), hooks: hooks.map((h) => h.id) }
  })

const project = (owner: string, team: string | null, pick: Pick) => ({
  id: next("proj"),
  owner_id: owner,
  team_id: team,
  name: "p",
  description: "",
  visibility: pick(["private", "team", "public"]),
  status: pick(["active", "archived"]),
  created_at: T,
  updated_at: T
})
const apiKey = (user: string, pick: Pick) => {
  const id = next("key")
  return {
    id,
    user_id: user,
    name: "k",
    scopes: "[]",
    prefix: id,
    key_hash: id,
    created_at: T,
    expires_at: null,
    last_used_at: null,
    revoked_at: pick([null, T])
  }
}
const webhook = (user: string, pick: Pick) => {
  const id = next("whk")
  return {
    id,
    user_id: user,
    url: `https://example.com/${id}`,
    events: "[]",
    secret: "s",
    status: pick(["active", "failed"]),
    created_at: T,
    updated_at: T,
    failed_at: null
  }
}
const delivery = (hook: string, pick: Pick) => ({
  id: next("dlv"),
  webhook_id: hook,
  event_id: "evt_counts",
  event_type: "project.created",
  status: pick(["pending", "delivered", "failed"]),
  attempt_count: 0,
  manual: 0,
  next_attempt_at: null,
  last_attempt_at: null,
  claimed_until: null,
  claim_token: null,
  created_at: T
})
const deployment = (projectId: string, user: string, pick: Pick) => ({
  id: next("dpl"),
  project_id: projectId,
  environment: pick(["production", "staging"]),
  ref: "main",
  description: "",
  status: pick(["running", "succeeded", "failed"]),
  created_by: user,
  created_at: T,
  updated_at: T,
  finished_at: null
})
const invitation = (team: string, user: string, pick: Pick) => ({
  id: next("inv"),
  team_id: team,
  email: `${next("e")}@example.com`,
  role: "member",
  status: pick(["pending", "accepted", "declined", "revoked", "expired"]),
  invited_by: user,
  created_at: T,
  expires_at: T,
  answered_at: null
})

/** One random write of any kind, chosen against the rows there now. */
const chooseWrite = (rand: () => number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const pick: Pick = (xs) => xs[Math.floor(rand() * xs.length)]!
    const ids = (table: string, column = "id") =>
      Effect.map(sql.unsafe<{ id: string }>(`SELECT ${column} AS id FROM ${table} ORDER BY 1`), (rows) =>
        rows.map((r) => r.id)
      )
    const users = yield* ids("users")
    const teams = yield* ids("teams")
    const projects = yield* ids("projects")
    const hooks = yield* ids("webhooks")
    if (users.length < 3 || teams.length < 2) return ["skipped (too few users or teams)", () => Effect.void] as const
    const user = pick(users)
    const team = pick(teams)
    const writes: ReadonlyArray<readonly [string, () => Effect.Effect<unknown, unknown, SqlClient.SqlClient>]> = [
      [
        "insert projects",
        () => sql`INSERT INTO projects ${sql.insert([project(user, team, pick), project(pick(users), null, pick)])}`
      ],
      [
        "project status",
        () => sql`UPDATE projects SET status = ${pick(["active", "archived"])} WHERE id = ${pick(projects)}`
      ],
      [
        "project visibility",
        () => sql`UPDATE projects SET visibility = ${pick(["private", "team", "public"])} WHERE id = ${pick(projects)}`
      ],
      ["project team", () => sql`UPDATE projects SET team_id = ${pick([null, team])} WHERE id = ${pick(projects)}`],
      ["project owner", () => sql`UPDATE projects SET owner_id = ${user} WHERE id = ${pick(projects)}`],
      [
        "project name only",
        () => sql`UPDATE projects SET name = 'renamed', updated_at = ${T} WHERE owner_id = ${user}`
      ],
      [
        "archive all of a user",
        () => sql`UPDATE projects SET status = 'archived', visibility = 'team' WHERE owner_id = ${user}`
      ],
      ["delete project (cascades deployments)", () => sql`DELETE FROM projects WHERE id = ${pick(projects)}`],
      ["delete team (projects' team set null, members, invitations)", () => sql`DELETE FROM teams WHERE id = ${team}`],
      [
        "new team",
        () => sql`INSERT INTO teams ${sql.insert({ id: next("team"), org_id: "org_counts", name: "t", created_at: T })}`
      ],
      ["delete user (cascades everything)", () => sql`DELETE FROM users WHERE id = ${user}`],
      [
        "new user",
        () =>
          sql`INSERT INTO users ${sql.insert({
            id: next("usr"),
            org_id: "org_counts",
            email: `${next("m")}@example.com`,
            name: "u",
            avatar_url: null,
            password_hash: null,
            created_at: T,
            updated_at: T
          })}`
      ],
      ["insert keys", () => sql`INSERT INTO api_keys ${sql.insert([apiKey(user, pick), apiKey(user, pick)])}`],
      ["revoke/unrevoke keys", () => sql`UPDATE api_keys SET revoked_at = ${pick([null, T])} WHERE user_id = ${user}`],
      ["touch keys", () => sql`UPDATE api_keys SET last_used_at = ${T} WHERE user_id = ${user}`],
      ["delete key", () => sql`DELETE FROM api_keys WHERE user_id = ${user}`],
      ["insert webhook", () => sql`INSERT INTO webhooks ${sql.insert(webhook(user, pick))}`],
      ["webhook status", () => sql`UPDATE webhooks SET status = ${pick(["active", "failed"])} WHERE user_id = ${user}`],
      ["delete webhook (cascades deliveries)", () => sql`DELETE FROM webhooks WHERE id = ${pick([...hooks, "none"])}`],
      ...(hooks.length === 0
        ? []
        : ([
            [
              "fan out deliveries",
              () => sql`INSERT INTO deliveries ${sql.insert(hooks.map((h) => delivery(h, pick)))}`
            ],
            [
              "settle deliveries",
              () =>
                sql`UPDATE deliveries SET status = ${pick(["pending", "delivered", "failed"])}, attempt_count = attempt_count + 1
                  WHERE webhook_id = ${pick(hooks)}`
            ],
            [
              "claim deliveries (nothing counted)",
              () => sql`UPDATE deliveries SET claimed_until = ${T}, claim_token = 't'`
            ],
            [
              "move a delivery",
              () =>
                sql`UPDATE deliveries SET webhook_id = ${pick(hooks)} WHERE id IN (SELECT id FROM deliveries WHERE webhook_id = ${pick(hooks)} LIMIT 2)`
            ]
          ] as const)),
      ...(projects.length === 0
        ? []
        : ([
            [
              "insert deployments",
              () =>
                sql`INSERT INTO deployments ${sql.insert([deployment(pick(projects), user, pick), deployment(pick(projects), user, pick)])}`
            ],
            [
              "finish deployments",
              () =>
                sql`UPDATE deployments SET status = ${pick(["succeeded", "failed"])}, environment = ${pick(["production", "staging"])} WHERE created_by = ${user}`
            ],
            [
              "move a deployment",
              () => sql`UPDATE deployments SET project_id = ${pick(projects)} WHERE created_by = ${user}`
            ]
          ] as const)),
      [
        "add member",
        () =>
          sql`INSERT INTO team_members ${sql.insert({ team_id: team, user_id: user, role: "member", joined_at: T })}
            ON CONFLICT DO NOTHING`
      ],
      ["remove member", () => sql`DELETE FROM team_members WHERE team_id = ${team} AND user_id = ${pick(users)}`],
      ["role change (nothing counted)", () => sql`UPDATE team_members SET role = 'admin' WHERE team_id = ${team}`],
      [
        "member moved to another team",
        () => {
          const to = pick(teams)
          return sql`UPDATE team_members SET team_id = ${to} WHERE team_id = ${team} AND user_id = ${user}
            AND NOT EXISTS (SELECT 1 FROM team_members o WHERE o.team_id = ${to} AND o.user_id = ${user})`
        }
      ],
      [
        "invite",
        () => sql`INSERT INTO invitations ${sql.insert([invitation(team, user, pick), invitation(team, user, pick)])}`
      ],
      [
        "answer invitations",
        () =>
          sql`UPDATE invitations SET status = ${pick(["accepted", "declined", "revoked", "expired"])} WHERE team_id = ${team}`
      ],
      ["move invitations", () => sql`UPDATE invitations SET team_id = ${pick(teams)} WHERE invited_by = ${user}`]
    ]
    return pick(writes)
  })

/** One random write, or (half the time) two in one transaction; answers what it did, for the failure message. */
const randomWrite = randomWriteOf(chooseWrite)

describe(`list counters (${usingPostgres() ? "PostgreSQL" : "SQLite"})`, () => {
  let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient, never>
  beforeAll(async () => {
    runtime = ManagedRuntime.make(SqlLive.pipe(Layer.provide(withDatabaseUrl(await freshDatabaseUrl()))))
    await runtime.runPromise(
      seed(
        Array.from({ length: 6 }, () => next("usr")),
        Array.from({ length: 4 }, () => next("team")),
        (() => {
          const rand = random(7)
          return (xs) => xs[Math.floor(rand() * xs.length)]!
        })()
      )
    )
  }, 60_000)
  afterAll(async () => {
    await runtime?.dispose()
  }, 20_000)

  test("rows inserted many to a statement are counted", async () => {
    await runtime.runPromise(checkAll)
  })

  test("every kind of write, 300 of them, keeps every counter equal to a fresh count", async () => {
    const rand = random(42)
    const done = await writeInRounds(
      30,
      () => runtime.runPromise(randomWrite(rand)),
      () => runtime.runPromise(checkAll)
    )
    // The sequence did reach the kinds of write that matter most.
    for (const kind of ["project owner", "project team", "delete team", "delete user", "move a delivery"])
      expect(done.some((label) => label.includes(kind))).toBe(true)
  }, 120_000)

  test("concurrent writers of the same keys (one transaction each) leave the counters right", async () => {
    const owner = next("usr")
    const team = next("team")
    const ids = Array.from({ length: 40 }, () => next("proj"))
    await runtime.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO users ${sql.insert({
          id: owner,
          org_id: "org_counts",
          email: `${owner}@example.com`,
          name: "o",
          avatar_url: null,
          password_hash: null,
          created_at: T,
          updated_at: T
        })}`
        yield* sql`INSERT INTO teams ${sql.insert({ id: team, org_id: "org_counts", name: "t", created_at: T })}`
        const pick: Pick = (xs) => xs[0]!
        // Each project: created, archived, moved into the team as `team`, moved out, deleted or kept: all at once.
        yield* Effect.forEach(
          ids,
          (id, i) =>
            Effect.gen(function* () {
              yield* sql.withTransaction(
                Effect.zipRight(
                  sql`INSERT INTO projects ${sql.insert({ ...project(owner, team, pick), id, visibility: "team" })}`,
                  sql`UPDATE projects SET status = 'archived' WHERE id = ${id}`
                )
              )
              yield* sql`UPDATE projects SET team_id = NULL WHERE id = ${id}`
              yield* sql`UPDATE projects SET team_id = ${team}, status = 'active' WHERE id = ${id}`
              if (i % 3 === 0) yield* sql`DELETE FROM projects WHERE id = ${id}`
            }),
          { concurrency: 8, discard: true }
        )
        yield* checkAll
        const [row] = yield* sql<{
          n: unknown
        }>`SELECT CAST(sum(n) AS INTEGER) AS n FROM counts_projects_team WHERE team_id = ${team}`
        expect(Number(row?.n)).toBe(ids.length - Math.ceil(ids.length / 3))
      })
    )
  }, 60_000)
})

describe(`list counters filled from rows already there (${usingPostgres() ? "PostgreSQL" : "SQLite"})`, () => {
  test("migration 0006 counts what was written before it", async () => {
    const databaseUrl = await freshDatabaseUrl()
    const before = runMigrationsBefore("0006_list_counts")
    const rand = random(3)
    const pick: Pick = (xs) => xs[Math.floor(rand() * xs.length)]!
    const old = ManagedRuntime.make(SqlClientLive.pipe(Layer.provide(withDatabaseUrl(databaseUrl))))
    await old.runPromise(
      Effect.gen(function* () {
        yield* before
        yield* seed(
          Array.from({ length: 5 }, () => next("usr")),
          Array.from({ length: 3 }, () => next("team")),
          pick
        )
        const sql = yield* SqlClient.SqlClient
        const tables = yield* sql<{
          n: unknown
        }>`SELECT count(*) AS n FROM ${sql(usingPostgres() ? "pg_tables" : "sqlite_master")}
          WHERE ${sql(usingPostgres() ? "tablename" : "name")} = 'counts_projects_owner'`
        expect(Number(tables[0]?.n)).toBe(0)
      })
    )
    await old.dispose()
    const migrated = ManagedRuntime.make(SqlLive.pipe(Layer.provide(withDatabaseUrl(databaseUrl))))
    await migrated.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ n: unknown }>`SELECT CAST(sum(n) AS INTEGER) AS n FROM counts_projects_owner`
        expect(Number(row?.n)).toBe(40)
        yield* checkAll
      })
    )
    await migrated.dispose()
  }, 60_000)

  test("migration 0008 re-spreads the delivery counters by event: later moves and deletes count out of the same rows", async () => {
    const databaseUrl = await freshDatabaseUrl()
    const rand = random(8)
    const pick: Pick = (xs) => xs[Math.floor(rand() * xs.length)]!
    const old = ManagedRuntime.make(SqlClientLive.pipe(Layer.provide(withDatabaseUrl(databaseUrl))))
    await old.runPromise(
      Effect.gen(function* () {
        yield* runMigrationsBefore("0008_delivery_count_shards")
        yield* seed(
          Array.from({ length: 4 }, () => next("usr")),
          Array.from({ length: 2 }, () => next("team")),
          pick
        )
      })
    )
    await old.dispose()
    const migrated = ManagedRuntime.make(SqlLive.pipe(Layer.provide(withDatabaseUrl(databaseUrl))))
    await migrated.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* checkAll
        // Counted in under the old spread, counted out under the new one: a counter left as it was would go
        // negative in one shard and stay positive in another (checkAll refuses rows at or under zero).
        yield* sql`UPDATE deliveries SET status = 'delivered' WHERE status = 'pending'`
        yield* sql`DELETE FROM deliveries WHERE status = 'failed'`
        yield* checkAll
        const [row] = yield* sql<{ n: unknown }>`SELECT CAST(count(*) AS INTEGER) AS n FROM deliveries`
        expect(Number(row?.n)).toBeGreaterThan(0)
      })
    )
    await migrated.dispose()
  }, 60_000)
})
