/**
 * An invitation's status as read is its stored status, except that a pending one past its expiry reads as
 * `expired`. The lists filter by it with conditions on the stored columns (src/Teams/Repo.ts `statusBranches`) and
 * a team's totals come from counters moved by the lapsed ones: for every status filter, order and page, a team's
 * list and an address's list must give exactly the rows a reading of the status from the columns would, with the
 * true total, from the counters and from a row count (a creation bound) alike. On the engine `DATABASE_URL` selects.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type InvitationStatus, invitationStatuses } from "../../src/Domain/Invitation.ts"
import type { ListQuery } from "../../src/Domain/Lists.ts"
import { InvitationsRepo } from "../../src/Teams/Repo.ts"
import { insertAll } from "../support/seed.ts"
import { usingPostgres } from "../support/server.ts"
import { onSelectedEngine, type ServiceHarness } from "../support/services.ts"

const iso = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 60_000).toISOString()
const id = (prefix: string, n: number) => `${prefix}_${String(n).padStart(26, "0")}`
const TEAM = id("team", 1)
const OTHER_TEAM = id("team", 2)
const OWNER = id("usr", 1)
const ADDRESS = "someone@example.com"
/** The reading time: invitations expiring at or before it have lapsed. */
const NOW = iso(1_000)

interface Row {
  readonly id: string
  readonly team_id: string
  readonly email: string
  readonly status: string
  readonly created_at: string
  readonly expires_at: string
}

/** Every stored status, pending ones lapsed or open, some created at the same time (ties broken by id). */
const rows: ReadonlyArray<Row> = Array.from({ length: 60 }, (_, i) => ({
  id: id("inv", i + 1),
  team_id: i % 7 === 3 ? OTHER_TEAM : TEAM,
  // One pending invitation per team and address at a time (a unique index): the address's are each from a team.
  email: i % 5 === 0 ? ADDRESS : `invitee${i}@example.com`,
  status: ["pending", "accepted", "pending", "declined", "revoked", "expired", "pending"][i % 7] ?? "pending",
  created_at: iso(Math.floor(i / 3)),
  expires_at: i % 3 === 0 ? iso(1_000) : i % 3 === 1 ? iso(500) : iso(2_000)
})).map((row, i) => (row.email === ADDRESS ? { ...row, team_id: id("team", 10 + i) } : row))

const asRead = (row: Row) => (row.status === "pending" && row.expires_at <= NOW ? "expired" : row.status)

const expected = (
  keep: (row: Row) => boolean,
  status: InvitationStatus | undefined,
  query: ListQuery<"created_at">
) => {
  const matching = rows
    .filter((row) => keep(row) && (status === undefined || asRead(row) === status))
    .sort((a, b) =>
      a.created_at === b.created_at ? a.id.localeCompare(b.id) : a.created_at.localeCompare(b.created_at)
    )
  const ordered = query.order === "asc" ? matching : [...matching].reverse()
  const start = (query.page - 1) * query.per_page
  return {
    ids: ordered.slice(start, start + query.per_page).map((row) => [row.id, asRead(row)]),
    total: matching.length
  }
}

let harness: ServiceHarness<InvitationsRepo>

beforeAll(async () => {
  harness = await onSelectedEngine(InvitationsRepo.Default)
  await harness.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_status", name: "Status", created_at: iso(0) })}`
      yield* insertAll(sql, "users", [
        {
          id: OWNER,
          org_id: "org_status",
          email: "owner@example.com",
          name: "Owner",
          avatar_url: null,
          password_hash: null,
          created_at: iso(0),
          updated_at: iso(0)
        }
      ])
      const teams = [...new Set(rows.map((row) => row.team_id))]
      yield* insertAll(
        sql,
        "teams",
        teams.map((team) => ({ id: team, org_id: "org_status", name: team, created_at: iso(0), updated_at: iso(0) }))
      )
      yield* insertAll(
        sql,
        "invitations",
        rows.map((row) => ({ ...row, role: "member", invited_by: OWNER, answered_at: null }))
      )
    })
  )
}, 60_000)
afterAll(() => harness.dispose(), 20_000)

const statuses: ReadonlyArray<InvitationStatus | undefined> = [undefined, ...invitationStatuses]
const queries: ReadonlyArray<ListQuery<"created_at">> = (["asc", "desc"] as const).flatMap((order) =>
  [1, 2, 3].map((page) => ({ page, per_page: 4, sort: "created_at" as const, order }))
)

describe(`invitations by status as read (${usingPostgres() ? "PostgreSQL" : "SQLite"})`, () => {
  test("the seed has lapsed and open pending invitations, and stored expired ones, in the team and to the address", () => {
    for (const keep of [(row: Row) => row.team_id === TEAM, (row: Row) => row.email === ADDRESS]) {
      const mine = rows.filter(keep)
      expect(mine.some((row) => row.status === "pending" && asRead(row) === "expired")).toBe(true)
      expect(mine.some((row) => asRead(row) === "pending")).toBe(true)
      expect(mine.some((row) => row.status === "expired")).toBe(true)
    }
  })

  for (const status of statuses) {
    test(`a team's list, status=${status ?? "none"}: the rows, order and total as read`, async () => {
      for (const query of queries) {
        for (const bounded of [false, true]) {
          const page = await harness.run(
            Effect.flatMap(InvitationsRepo, (repo) =>
              repo.listForTeam(
                TEAM,
                { ...query, status, ...(bounded ? { created_after: "2000-01-01T00:00:00.000Z" } : {}) },
                NOW
              )
            )
          )
          const got: unknown = {
            query,
            bounded,
            ids: page.items.map((item) => [item.id, item.status]),
            total: page.total
          }
          expect(got).toEqual({ query, bounded, ...expected((row) => row.team_id === TEAM, status, query) })
        }
      }
    })

    test(`an address's list, status=${status ?? "all"}: the rows, order and total as read`, async () => {
      for (const query of queries) {
        const page = await harness.run(
          Effect.flatMap(InvitationsRepo, (repo) => repo.listAddressedTo(ADDRESS, status ?? "all", query, NOW))
        )
        const got: unknown = { query, ids: page.items.map((item) => [item.id, item.status]), total: page.total }
        expect(got).toEqual({ query, ...expected((row) => row.email === ADDRESS, status, query) })
      }
    })
  }
})
