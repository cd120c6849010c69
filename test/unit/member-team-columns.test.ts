/**
 * The team columns copied onto memberships by migration 0007 (`team_name`, `team_created_at`, `team_updated_at`,
 * what `GET /v1/teams` sorts, searches and bounds by), on the engine `DATABASE_URL` selects (SQLite when unset; run
 * again with a PostgreSQL URL). Writes go straight to SQL, so every change the triggers must follow can be made,
 * including ones the API never makes: renames and `updated_at` bumps (one team and many in one statement), the
 * no-op update that locks a team, a changed `created_at`, teams created with their owner, members added (one and
 * many to a statement, and with wrong copies given), removed, moved to another team, teams and users deleted with
 * their cascades; half the time two writes in one transaction. After each round every membership's copies must
 * equal its team's columns, and every user's team list (each sort and order, search, creation bounds, pages) must
 * equal the same list read through the join on `teams`, as the list was read before 0007. The backfill is checked
 * too: memberships written before the migration get their team's values from it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import type { ListQuery } from "../../src/Domain/Lists.ts"
import { SqlLive } from "../../src/Sql/Client.ts"
import { type TeamSort, TeamsRepo } from "../../src/Teams/Repo.ts"
import { withDatabaseUrl } from "../support/fixtures.ts"
import { checkBackfill, idMaker, type Pick, random, randomWriteOf, writeInRounds } from "../support/randomWrites.ts"
import { freshDatabaseUrl, usingPostgres } from "../support/server.ts"

const engine = usingPostgres() ? "PostgreSQL" : "SQLite"

/** Always the first: for rows whose values the test sets itself. */
const first: Pick = (xs) => xs[0]!

/** Well-formed ids (`<prefix>_` and 26 base32 digits). */
const next = idMaker()
/** Few distinct values, so sorts meet ties (broken by id) and searches match several teams. */
const NAMES = ["Alpha", "alpha", "Beta", "beta team", "Team 1", "team 10", "TEAM 2", "a_b", "a%b", "Zeta"]
const TIMES = Array.from({ length: 6 }, (_, i) => new Date(Date.UTC(2025, 0, 1 + i)).toISOString())
const SEARCHES = ["alpha", "team 1", "TEAM", "_", "%", "zz"]

/** Memberships whose copies differ from their team's columns (or whose team is gone): none, always. */
const mismatches = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return yield* sql`
    SELECT m.team_id, m.user_id, m.team_name, m.team_created_at, m.team_updated_at,
      t.name, t.created_at, t.updated_at
    FROM team_members m LEFT JOIN teams t ON t.id = m.team_id
    WHERE t.id IS NULL OR m.team_name <> t.name OR m.team_created_at <> t.created_at
      OR m.team_updated_at <> t.updated_at`
})

const columnOf: Record<TeamSort, string> = { created_at: "t.created_at", updated_at: "t.updated_at", name: "t.name" }

/** The list as it was read before 0007: through the join, sorted and filtered by the `teams` columns. */
const reference = (userId: string, query: ListQuery<TeamSort>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const conditions = [sql`m.user_id = ${userId}`]
    if (query.search !== undefined) {
      const pattern = `%${query.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
      conditions.push(sql`lower(t.name) LIKE lower(${pattern}) ESCAPE '\\'`)
    }
    if (query.created_after !== undefined) conditions.push(sql`t.created_at > ${query.created_after}`)
    if (query.created_before !== undefined) conditions.push(sql`t.created_at < ${query.created_before}`)
    const direction = sql.unsafe(query.order === "asc" ? "ASC" : "DESC")
    const from = sql`teams t JOIN team_members m ON m.team_id = t.id WHERE ${sql.and(conditions)}`
    const items = yield* sql`
      SELECT t.id, t.name, t.created_at, t.updated_at, m.role FROM ${from}
      ORDER BY ${sql(columnOf[query.sort])} ${direction}, t.id ${direction}
      LIMIT ${query.per_page} OFFSET ${(query.page - 1) * query.per_page}`
    const [count] = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM ${from}`
    return { items, total: Number(count?.n) }
  })

/** Each sort and order over pages of 4, then search and the creation bounds: what `GET /v1/teams` takes. */
const queries: ReadonlyArray<ListQuery<TeamSort>> = [
  ...(["created_at", "updated_at", "name"] as const).flatMap((sort) =>
    (["asc", "desc"] as const).flatMap((order) => [1, 2, 3].map((page) => ({ page, per_page: 4, sort, order })))
  ),
  ...SEARCHES.map((search) => ({ page: 1, per_page: 5, sort: "name" as const, order: "asc" as const, search })),
  { page: 1, per_page: 5, sort: "created_at", order: "desc", created_after: TIMES[2] },
  { page: 2, per_page: 2, sort: "updated_at", order: "asc", created_before: TIMES[4] },
  {
    page: 1,
    per_page: 10,
    sort: "name",
    order: "desc",
    search: "a",
    created_after: TIMES[0],
    created_before: TIMES[5]
  }
]

/** Every user's list, for every query above, against the reference. */
const checkLists = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const repo = yield* TeamsRepo
  const users = yield* sql<{ id: string }>`SELECT id FROM users ORDER BY id`
  let listed = 0
  for (const { id } of users) {
    for (const query of queries) {
      const page = yield* repo.listFor(id, query)
      const expected = yield* reference(id, query)
      const got: unknown = { user: id, query, items: page.items, total: page.total }
      expect(got).toEqual({ user: id, query, ...expected })
      listed += page.items.length
    }
  }
  return listed
})

const insertUsers = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`INSERT INTO users ${sql.insert(
        ids.map((id) => ({
          id,
          org_id: "org_copies",
          email: `${id}@example.com`,
          name: id,
          avatar_url: null,
          password_hash: null,
          created_at: TIMES[0]!,
          updated_at: TIMES[0]!
        }))
      )}`
  )
const team = (pick: Pick) => {
  const created = pick(TIMES)
  return { id: next("team"), org_id: "org_copies", name: pick(NAMES), created_at: created, updated_at: created }
}
const member = (teamId: string, userId: string, pick: Pick) => ({
  team_id: teamId,
  user_id: userId,
  role: pick(["owner", "admin", "member"]),
  joined_at: pick(TIMES)
})

/** Users and teams, every user in about half the teams; many rows to a statement. */
const seed = (pick: Pick) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_copies", name: "Copies", created_at: TIMES[0]! })}`
    const users = Array.from({ length: 5 }, () => next("usr"))
    yield* insertUsers(users)
    const teams = Array.from({ length: 12 }, () => team(pick))
    yield* sql`INSERT INTO teams ${sql.insert(teams)}`
    const members = teams.flatMap((t, i) => users.filter((_, j) => (i + j) % 2 === 0).map((u) => member(t.id, u, pick)))
    yield* sql`INSERT INTO team_members ${sql.insert(members)}`
  })

/** One random write of any kind, chosen against the rows there now. */
const chooseWrite = (rand: () => number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const pick: Pick = (xs) => xs[Math.floor(rand() * xs.length)]!
    const ids = (table: string) =>
      Effect.map(sql.unsafe<{ id: string }>(`SELECT id FROM ${table} ORDER BY 1`), (rows) => rows.map((r) => r.id))
    const users = yield* ids("users")
    const teams = yield* ids("teams")
    if (users.length < 3 || teams.length < 3) {
      return [
        "new users and teams",
        () =>
          Effect.zipRight(
            insertUsers([next("usr"), next("usr")]),
            sql`INSERT INTO teams ${sql.insert([team(pick), team(pick)])}`
          )
      ] as const
    }
    const user = pick(users)
    const teamId = pick(teams)
    const writes: ReadonlyArray<readonly [string, () => Effect.Effect<unknown, unknown, SqlClient.SqlClient>]> = [
      ["rename", () => sql`UPDATE teams SET name = ${pick(NAMES)}, updated_at = ${pick(TIMES)} WHERE id = ${teamId}`],
      ["touch updated_at", () => sql`UPDATE teams SET updated_at = ${pick(TIMES)} WHERE id = ${teamId}`],
      ["lock (no-op update)", () => sql`UPDATE teams SET updated_at = updated_at WHERE id = ${teamId}`],
      ["change created_at", () => sql`UPDATE teams SET created_at = ${pick(TIMES)} WHERE id = ${teamId}`],
      [
        "rename many at once",
        () => sql`UPDATE teams SET name = ${pick(NAMES)}, updated_at = ${pick(TIMES)} WHERE name = ${pick(NAMES)}`
      ],
      [
        "new team with its owner",
        () => {
          const made = team(pick)
          return Effect.zipRight(
            sql`INSERT INTO teams ${sql.insert(made)}`,
            sql`INSERT INTO team_members ${sql.insert({ ...member(made.id, user, pick), role: "owner" })}`
          )
        }
      ],
      ["new team, no members", () => sql`INSERT INTO teams ${sql.insert(team(pick))}`],
      [
        "add member",
        () => sql`INSERT INTO team_members ${sql.insert(member(teamId, user, pick))} ON CONFLICT DO NOTHING`
      ],
      [
        "add members, many to a statement",
        () =>
          sql`INSERT INTO team_members ${sql.insert(
            [...new Set([teamId, pick(teams), pick(teams)])].map((t) => member(t, user, pick))
          )} ON CONFLICT DO NOTHING`
      ],
      [
        "add member with wrong copies given",
        () =>
          sql`INSERT INTO team_members ${sql.insert({
            ...member(teamId, user, pick),
            team_name: "bogus",
            team_created_at: "1999",
            team_updated_at: ""
          })} ON CONFLICT DO NOTHING`
      ],
      ["remove member", () => sql`DELETE FROM team_members WHERE team_id = ${teamId} AND user_id = ${user}`],
      [
        "member moved to another team",
        () => {
          const to = pick(teams)
          return sql`UPDATE team_members SET team_id = ${to} WHERE team_id = ${teamId} AND user_id = ${user}
            AND NOT EXISTS (SELECT 1 FROM team_members o WHERE o.team_id = ${to} AND o.user_id = ${user})`
        }
      ],
      ["role change", () => sql`UPDATE team_members SET role = ${pick(["admin", "member"])} WHERE team_id = ${teamId}`],
      ["delete team (cascades members)", () => sql`DELETE FROM teams WHERE id = ${teamId}`],
      ["delete user (cascades memberships)", () => sql`DELETE FROM users WHERE id = ${user}`],
      ["new user", () => insertUsers([next("usr")])]
    ]
    return pick(writes)
  })

/** One random write, or (half the time) two in one transaction; answers what it did, for the failure message. */
const randomWrite = randomWriteOf(chooseWrite)

describe(`team columns on memberships (${engine})`, () => {
  let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient | TeamsRepo, never>
  beforeAll(async () => {
    runtime = ManagedRuntime.make(
      TeamsRepo.Default.pipe(Layer.provideMerge(SqlLive), Layer.provide(withDatabaseUrl(await freshDatabaseUrl())))
    )
    const rand = random(11)
    await runtime.runPromise(seed((xs) => xs[Math.floor(rand() * xs.length)]!))
  }, 60_000)
  afterAll(async () => {
    await runtime?.dispose()
  }, 20_000)

  test("memberships inserted many to a statement get their team's columns; the list reads as through the join", async () => {
    expect(await runtime.runPromise(mismatches)).toEqual([])
    expect(await runtime.runPromise(checkLists)).toBeGreaterThan(0)
  })

  test("every kind of write, 300 of them, keeps the copies equal to the teams and the list equal to the join's", async () => {
    const rand = random(42)
    const done = await writeInRounds(
      30,
      () => runtime.runPromise(randomWrite(rand)),
      async (round) => {
        expect(await runtime.runPromise(mismatches)).toEqual([])
        if (round % 5 === 4) await runtime.runPromise(checkLists)
      }
    )
    for (const kind of ["rename", "change created_at", "add member with wrong copies", "moved", "delete team"])
      expect(done.some((label) => label.includes(kind))).toBe(true)
  }, 120_000)

  test("renames racing member inserts (one transaction each, still open when the other commits) leave every copy right", async () => {
    const program = Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const users = Array.from({ length: 12 }, () => next("usr"))
      yield* insertUsers(users)
      const raced = team(first)
      yield* sql`INSERT INTO teams ${sql.insert(raced)}`
      // Each insert's transaction stays open past a rename that starts after it (PostgreSQL: the rename must wait
      // for it, or the insert must see the rename; a copy read before a rename committed would be stale).
      yield* Effect.forEach(
        users,
        (userId, i) =>
          Effect.all(
            [
              sql.withTransaction(
                Effect.zipRight(
                  sql`INSERT INTO team_members ${sql.insert({ ...member(raced.id, userId, first), role: "member" })}`,
                  Effect.sleep("30 millis")
                )
              ),
              Effect.zipRight(
                Effect.sleep("10 millis"),
                sql`UPDATE teams SET name = ${`raced ${i}`}, updated_at = ${TIMES[i % TIMES.length]!} WHERE id = ${raced.id}`
              )
            ],
            { concurrency: 2 }
          ),
        { concurrency: 4, discard: true }
      )
      const [count] = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM team_members WHERE team_id = ${raced.id}`
      expect(Number(count?.n)).toBe(users.length)
      expect(yield* mismatches).toEqual([])
    })
    await runtime.runPromise(program)
  }, 60_000)

  test("a rename reaches every member's list: sorted, searched and bounded by the new values", async () => {
    const program = Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* TeamsRepo
      const [a, b] = [next("usr"), next("usr")]
      yield* insertUsers([a, b])
      const made = { ...team(first), name: "Quokka", created_at: TIMES[1]!, updated_at: TIMES[1]! }
      const other = { ...team(first), name: "Platypus", created_at: TIMES[3]!, updated_at: TIMES[3]! }
      yield* sql`INSERT INTO teams ${sql.insert([made, other])}`
      yield* sql`INSERT INTO team_members ${sql.insert([
        { team_id: made.id, user_id: a, role: "owner", joined_at: TIMES[1]! },
        { team_id: made.id, user_id: b, role: "member", joined_at: TIMES[1]! },
        { team_id: other.id, user_id: a, role: "owner", joined_at: TIMES[3]! },
        { team_id: other.id, user_id: b, role: "member", joined_at: TIMES[3]! }
      ])}`
      const list = (userId: string, query: Partial<ListQuery<TeamSort>>) =>
        Effect.map(
          repo.listFor(userId, { page: 1, per_page: 10, sort: "created_at", order: "desc", ...query }),
          (page) => page.items.map((item) => item.name)
        )
      expect(yield* list(b, { sort: "name", order: "asc" })).toEqual(["Platypus", "Quokka"])
      yield* sql`UPDATE teams SET name = 'Aardvark', updated_at = ${TIMES[5]!}, created_at = ${TIMES[4]!} WHERE id = ${made.id}`
      for (const userId of [a, b]) {
        expect(yield* list(userId, { sort: "name", order: "asc" })).toEqual(["Aardvark", "Platypus"])
        expect(yield* list(userId, { sort: "updated_at", order: "desc" })).toEqual(["Aardvark", "Platypus"])
        expect(yield* list(userId, {})).toEqual(["Aardvark", "Platypus"])
        expect(yield* list(userId, { search: "aardv" })).toEqual(["Aardvark"])
        expect(yield* list(userId, { search: "quokka" })).toEqual([])
        expect(yield* list(userId, { created_after: TIMES[3]! })).toEqual(["Aardvark"])
      }
      yield* sql`DELETE FROM teams WHERE id = ${made.id}`
      expect(yield* list(b, {})).toEqual(["Platypus"])
      expect(yield* mismatches).toEqual([])
    })
    await runtime.runPromise(program)
  })
})

describe(`team columns filled from memberships already there (${engine})`, () => {
  test("migration 0007 copies each membership's team columns", async () => {
    await checkBackfill({
      migration: "0007_member_team_columns",
      seed,
      services: TeamsRepo.Default,
      check: Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM team_members WHERE team_name <> ''`
        expect(Number(row?.n)).toBe(30)
        expect(yield* mismatches).toEqual([])
        expect(yield* checkLists).toBeGreaterThan(0)
      })
    })
  }, 60_000)
})
