/**
 * Migration 0016's table of stored-pending invitations (team and expiry), the source of a team's lapsed count
 * (src/Teams/Repo.ts) and of the retention sweep's batches: whatever writes the invitations (inserts of any status,
 * answers, expiries, deletes of an invitation or of its team), it holds exactly the stored-pending ones; and the
 * migration fills it from invitations already there. On the engine `DATABASE_URL` selects.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { checkBackfill } from "../support/randomWrites.ts"
import { usingPostgres } from "../support/server.ts"
import { onSelectedEngine, type ServiceHarness } from "../support/services.ts"

const engine = usingPostgres() ? "PostgreSQL" : "SQLite"
const iso = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 60_000).toISOString()
const id = (prefix: string, n: number) => `${prefix}_${String(n).padStart(26, "0")}`
const STATUSES = ["pending", "accepted", "declined", "revoked", "expired"] as const

/** An org, a user and two teams, and `count` invitations of each team with every status in turn. */
const seed = (count: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_exp", name: "Exp", created_at: iso(0) })}`
    yield* sql`INSERT INTO users ${sql.insert({ id: id("usr", 1), org_id: "org_exp", email: "exp@example.com", name: "Exp", avatar_url: null, password_hash: null, created_at: iso(0), updated_at: iso(0) })}`
    for (const team of [1, 2]) {
      yield* sql`INSERT INTO teams ${sql.insert({ id: id("team", team), org_id: "org_exp", name: `team ${team}`, created_at: iso(0), updated_at: iso(0) })}`
      yield* sql`INSERT INTO invitations ${sql.insert(
        Array.from({ length: count }, (_, i) => ({
          id: id("inv", team * 1000 + i),
          team_id: id("team", team),
          email: `invitee${i}@example.com`,
          role: "member",
          status: STATUSES[i % STATUSES.length] ?? "pending",
          invited_by: id("usr", 1),
          created_at: iso(i),
          expires_at: iso(i + (i % 3 === 0 ? -10_000 : 10_000)),
          answered_at: null
        }))
      )}`
    }
  })

/** The table against the invitations stored as pending: both as sorted `id team expiry` lines. */
const compare = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const kept = yield* sql<{ line: string }>`
    SELECT invitation_id || ' ' || team_id || ' ' || expires_at AS line FROM invitation_expiries ORDER BY 1`
  const pending = yield* sql<{ line: string }>`
    SELECT id || ' ' || team_id || ' ' || expires_at AS line FROM invitations WHERE status = 'pending' ORDER BY 1`
  return { kept: kept.map((row) => row.line), pending: pending.map((row) => row.line) }
})

describe(`invitation_expiries (${engine})`, () => {
  let harness: ServiceHarness<never>
  beforeAll(async () => {
    harness = await onSelectedEngine(Layer.empty)
    await harness.run(seed(20))
  }, 60_000)
  afterAll(() => harness.dispose(), 20_000)

  const expectInStep = async () => {
    const { kept, pending } = await harness.run(compare)
    expect(kept).toEqual(pending)
    return kept.length
  }

  test("holds each invitation written pending, and no other", async () => {
    expect(await expectInStep()).toBe(8)
  })

  test("loses an invitation when it is answered, revoked or marked expired, or deleted, and only then", async () => {
    const sql = (f: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
      harness.run(Effect.flatMap(SqlClient.SqlClient, f))
    await sql(
      (sql) => sql`UPDATE invitations SET status = 'accepted', answered_at = ${iso(1)} WHERE id = ${id("inv", 1000)}`
    )
    await sql(
      (sql) => sql`UPDATE invitations SET status = 'declined', answered_at = ${iso(1)} WHERE id = ${id("inv", 1005)}`
    )
    await sql((sql) => sql`UPDATE invitations SET status = 'revoked' WHERE id = ${id("inv", 2000)}`)
    await sql((sql) => sql`UPDATE invitations SET status = 'expired' WHERE id = ${id("inv", 2005)}`)
    // An update that leaves an invitation pending keeps it.
    await sql((sql) => sql`UPDATE invitations SET role = 'admin' WHERE id = ${id("inv", 1010)}`)
    await sql((sql) => sql`DELETE FROM invitations WHERE id = ${id("inv", 1015)}`)
    expect(await expectInStep()).toBe(3)
    await sql((sql) => sql`DELETE FROM teams WHERE id = ${id("team", 2)}`)
    expect(await expectInStep()).toBe(1)
    await sql(
      (sql) =>
        sql`INSERT INTO invitations ${sql.insert({ id: id("inv", 9000), team_id: id("team", 1), email: "new@example.com", role: "member", status: "pending", invited_by: id("usr", 1), created_at: iso(5), expires_at: iso(20_000), answered_at: null })}`
    )
    expect(await expectInStep()).toBe(2)
  })
})

describe(`invitation_expiries filled from invitations already there (${engine})`, () => {
  test("migration 0016 copies each pending invitation's team and expiry", async () => {
    await checkBackfill({
      migration: "0016_invitation_expiries",
      seed: () => seed(20),
      services: Layer.empty,
      check: Effect.gen(function* () {
        const { kept, pending } = yield* compare
        expect(kept).toHaveLength(8)
        expect(kept).toEqual(pending)
      })
    })
  }, 60_000)
})
