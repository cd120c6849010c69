/**
 * The user's name copied onto memberships by migration 0015 (`user_name`, what `GET /v1/teams/:id/members?sort=name`
 * walks), on the engine `DATABASE_URL` selects (SQLite when unset; run again with a PostgreSQL URL). Writes go
 * straight to SQL, so every change the triggers must follow can be made, including ones the API never makes: user
 * renames (one and many in one statement), updates that leave the name alone, members added (one and many to a
 * statement, and with a wrong copy given), removed, handed to another user, users and teams deleted with their
 * cascades; half the time two writes in one transaction. After each round every membership's copy must equal its
 * user's name, and every team's member list (each sort and order, search, pages) must equal the same list read
 * through the join on `users`, as the list was read before 0015. The backfill is checked too.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import type { ListQuery } from "../../src/Domain/Lists.ts"
import { SqlLive } from "../../src/Sql/Client.ts"
import { type MemberSort, TeamsRepo } from "../../src/Teams/Repo.ts"
import { withDatabaseUrl } from "../support/fixtures.ts"
import { checkBackfill, idMaker, type Pick, random, randomWriteOf, writeInRounds } from "../support/randomWrites.ts"
import { freshDatabaseUrl, usingPostgres } from "../support/server.ts"

const engine = usingPostgres() ? "PostgreSQL" : "SQLite"

const next = idMaker()
/** Few distinct names, so sorts meet ties (broken by user id) and searches match several members. */
const NAMES = ["Ada", "ada", "Bob", "bob smith", "Zoë", "a_b", "a%b", "Mallory"]
const TIMES = Array.from({ length: 6 }, (_, i) => new Date(Date.UTC(2025, 0, 1 + i)).toISOString())
const SEARCHES = ["ada", "BOB", "_", "%", "example", "zz"]

/** Memberships whose copy differs from their user's name (or whose user is gone): none, always. */
const mismatches = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return yield* sql`
    SELECT m.team_id, m.user_id, m.user_name, u.name
    FROM team_members m LEFT JOIN users u ON u.id = m.user_id
    WHERE u.id IS NULL OR m.user_name <> u.name`
})

const columnOf: Record<MemberSort, string> = { joined_at: "m.joined_at", name: "u.name" }

/** The list as it was read before 0015: through the join, sorted and searched by the `users` columns. */
const reference = (teamId: string, query: ListQuery<MemberSort>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const conditions = [sql`m.team_id = ${teamId}`]
    if (query.search !== undefined) {
      const pattern = `%${query.search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
      conditions.push(
        sql`(lower(u.name) LIKE lower(${pattern}) ESCAPE '\\' OR lower(u.email) LIKE lower(${pattern}) ESCAPE '\\')`
      )
    }
    const direction = sql.unsafe(query.order === "asc" ? "ASC" : "DESC")
    const from = sql`team_members m JOIN users u ON u.id = m.user_id WHERE ${sql.and(conditions)}`
    const items = yield* sql`
      SELECT u.id AS user_id, u.name, u.email, u.avatar_url, m.role, m.joined_at FROM ${from}
      ORDER BY ${sql(columnOf[query.sort])} ${direction}, m.user_id ${direction}
      LIMIT ${query.per_page} OFFSET ${(query.page - 1) * query.per_page}`
    const [count] = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM ${from}`
    return { items, total: Number(count?.n) }
  })

/** Each sort and order over pages of 3, then search: what `GET /v1/teams/:id/members` takes. */
const queries: ReadonlyArray<ListQuery<MemberSort>> = [
  ...(["name", "joined_at"] as const).flatMap((sort) =>
    (["asc", "desc"] as const).flatMap((order) => [1, 2, 3].map((page) => ({ page, per_page: 3, sort, order })))
  ),
  ...SEARCHES.map((search) => ({ page: 1, per_page: 5, sort: "name" as const, order: "asc" as const, search }))
]

/** Every team's member list, for every query above, against the reference. */
const checkLists = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const repo = yield* TeamsRepo
  const teams = yield* sql<{ id: string }>`SELECT id FROM teams ORDER BY id`
  let listed = 0
  for (const { id } of teams) {
    for (const query of queries) {
      const page = yield* repo.listMembers(id, query)
      const expected = yield* reference(id, query)
      const got: unknown = { team: id, query, items: page.items, total: page.total }
      expect(got).toEqual({ team: id, query, ...expected })
      listed += page.items.length
    }
  }
  return listed
})

const insertUsers = (ids: ReadonlyArray<string>, pick: Pick) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql`INSERT INTO users ${sql.insert(
        ids.map((id) => ({
          id,
          org_id: "org_names",
          email: `${id}@example.com`,
          name: pick(NAMES),
          avatar_url: null,
          password_hash: null,
          created_at: TIMES[0]!,
          updated_at: TIMES[0]!
        }))
      )}`
  )
const team = () => ({
  id: next("team"),
  org_id: "org_names",
  name: "team",
  created_at: TIMES[0]!,
  updated_at: TIMES[0]!
})
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
    yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_names", name: "Names", created_at: TIMES[0]! })}`
    const users = Array.from({ length: 12 }, () => next("usr"))
    yield* insertUsers(users, pick)
    const teams = Array.from({ length: 5 }, team)
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
    if (users.length < 4 || teams.length < 2) {
      return [
        "new users and teams",
        () =>
          Effect.zipRight(
            insertUsers([next("usr"), next("usr"), next("usr")], pick),
            sql`INSERT INTO teams ${sql.insert([team(), team()])}`
          )
      ] as const
    }
    const user = pick(users)
    const teamId = pick(teams)
    const writes: ReadonlyArray<readonly [string, () => Effect.Effect<unknown, unknown, SqlClient.SqlClient>]> = [
      ["rename", () => sql`UPDATE users SET name = ${pick(NAMES)} WHERE id = ${user}`],
      ["rename many at once", () => sql`UPDATE users SET name = ${pick(NAMES)} WHERE name = ${pick(NAMES)}`],
      ["update leaving the name", () => sql`UPDATE users SET updated_at = ${pick(TIMES)} WHERE id = ${user}`],
      ["rename to the same name", () => sql`UPDATE users SET name = name WHERE id = ${user}`],
      [
        "add member",
        () => sql`INSERT INTO team_members ${sql.insert(member(teamId, user, pick))} ON CONFLICT DO NOTHING`
      ],
      [
        "add members, many to a statement",
        () =>
          sql`INSERT INTO team_members ${sql.insert(
            [...new Set([user, pick(users), pick(users)])].map((u) => member(teamId, u, pick))
          )} ON CONFLICT DO NOTHING`
      ],
      [
        "add member with a wrong copy given",
        () =>
          sql`INSERT INTO team_members ${sql.insert({ ...member(teamId, user, pick), user_name: "bogus" })}
            ON CONFLICT DO NOTHING`
      ],
      ["remove member", () => sql`DELETE FROM team_members WHERE team_id = ${teamId} AND user_id = ${user}`],
      [
        "membership handed to another user",
        () => {
          const to = pick(users)
          return sql`UPDATE team_members SET user_id = ${to} WHERE team_id = ${teamId} AND user_id = ${user}
            AND NOT EXISTS (SELECT 1 FROM team_members o WHERE o.team_id = ${teamId} AND o.user_id = ${to})`
        }
      ],
      ["role change", () => sql`UPDATE team_members SET role = ${pick(["admin", "member"])} WHERE user_id = ${user}`],
      ["delete user (cascades memberships)", () => sql`DELETE FROM users WHERE id = ${user}`],
      ["delete team (cascades members)", () => sql`DELETE FROM teams WHERE id = ${teamId}`],
      ["new user", () => insertUsers([next("usr")], pick)],
      ["new team", () => sql`INSERT INTO teams ${sql.insert(team())}`]
    ]
    return pick(writes)
  })

const randomWrite = randomWriteOf(chooseWrite)

describe(`user names on memberships (${engine})`, () => {
  let runtime: ManagedRuntime.ManagedRuntime<SqlClient.SqlClient | TeamsRepo, never>
  beforeAll(async () => {
    runtime = ManagedRuntime.make(
      TeamsRepo.Default.pipe(Layer.provideMerge(SqlLive), Layer.provide(withDatabaseUrl(await freshDatabaseUrl())))
    )
    const rand = random(13)
    await runtime.runPromise(seed((xs) => xs[Math.floor(rand() * xs.length)]!))
  }, 60_000)
  afterAll(async () => {
    await runtime?.dispose()
  }, 20_000)

  test("memberships inserted many to a statement get their user's name; the list reads as through the join", async () => {
    expect(await runtime.runPromise(mismatches)).toEqual([])
    expect(await runtime.runPromise(checkLists)).toBeGreaterThan(0)
  })

  test("every kind of write, 300 of them, keeps the copies equal to the names and the list equal to the join's", async () => {
    const rand = random(7)
    const done = await writeInRounds(
      30,
      () => runtime.runPromise(randomWrite(rand)),
      async (round) => {
        expect(await runtime.runPromise(mismatches)).toEqual([])
        if (round % 5 === 4) await runtime.runPromise(checkLists)
      }
    )
    for (const kind of ["rename", "wrong copy", "handed to another user", "delete user"])
      expect(done.some((label) => label.includes(kind))).toBe(true)
  }, 120_000)

  test("renames racing member inserts (one transaction each, still open when the other commits) leave every copy right", async () => {
    const program = Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const renamed = next("usr")
      yield* insertUsers([renamed], (xs) => xs[0]!)
      const teams = Array.from({ length: 12 }, team)
      yield* sql`INSERT INTO teams ${sql.insert(teams)}`
      // Each insert's transaction stays open past a rename that starts after it (PostgreSQL: the rename must wait
      // for it, or the insert must see the rename; a copy read before a rename committed would be stale).
      yield* Effect.forEach(
        teams,
        (t, i) =>
          Effect.all(
            [
              sql.withTransaction(
                Effect.zipRight(
                  sql`INSERT INTO team_members ${sql.insert(member(t.id, renamed, (xs) => xs[0]!))}`,
                  Effect.sleep("30 millis")
                )
              ),
              Effect.zipRight(
                Effect.sleep("10 millis"),
                sql`UPDATE users SET name = ${`raced ${i}`} WHERE id = ${renamed}`
              )
            ],
            { concurrency: 2 }
          ),
        { concurrency: 4, discard: true }
      )
      const [count] = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM team_members WHERE user_id = ${renamed}`
      expect(Number(count?.n)).toBe(teams.length)
      expect(yield* mismatches).toEqual([])
    })
    await runtime.runPromise(program)
  }, 60_000)

  test("a rename reaches every team's list, sorted and searched by the new name", async () => {
    const program = Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* TeamsRepo
      const [a, b] = [next("usr"), next("usr")]
      yield* insertUsers([a, b], (xs) => xs[0]!)
      yield* sql`UPDATE users SET name = 'Quokka' WHERE id = ${a}`
      yield* sql`UPDATE users SET name = 'Platypus' WHERE id = ${b}`
      const teams = [team(), team()]
      yield* sql`INSERT INTO teams ${sql.insert(teams)}`
      yield* sql`INSERT INTO team_members ${sql.insert(
        teams.flatMap((t) => [a, b].map((u) => ({ team_id: t.id, user_id: u, role: "member", joined_at: TIMES[1]! })))
      )}`
      const list = (teamId: string, query: Partial<ListQuery<MemberSort>>) =>
        Effect.map(repo.listMembers(teamId, { page: 1, per_page: 10, sort: "name", order: "asc", ...query }), (page) =>
          page.items.map((item) => item.name)
        )
      expect(yield* list(teams[0]!.id, {})).toEqual(["Platypus", "Quokka"])
      yield* sql`UPDATE users SET name = 'Aardvark' WHERE id = ${a}`
      for (const t of teams) {
        expect(yield* list(t.id, {})).toEqual(["Aardvark", "Platypus"])
        expect(yield* list(t.id, { order: "desc" })).toEqual(["Platypus", "Aardvark"])
        expect(yield* list(t.id, { search: "aardv" })).toEqual(["Aardvark"])
        expect(yield* list(t.id, { search: "quokka" })).toEqual([])
      }
      expect(yield* mismatches).toEqual([])
    })
    await runtime.runPromise(program)
  })
})

describe(`user names filled from memberships already there (${engine})`, () => {
  test("migration 0015 copies each membership's user name", async () => {
    await checkBackfill({
      migration: "0015_list_plans",
      seed,
      services: TeamsRepo.Default,
      check: Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM team_members WHERE user_name <> ''`
        expect(Number(row?.n)).toBe(30)
        expect(yield* mismatches).toEqual([])
        expect(yield* checkLists).toBeGreaterThan(0)
      })
    })
  }, 60_000)
})
