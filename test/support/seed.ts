/** Seeding many rows at once, for tests and benchmarks that need tables of a given size. */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/** Inserts `rows` into `table` in statements of at most 500 rows (both engines cap a statement's parameters). */
export const insertAll = (
  sql: SqlClient.SqlClient,
  table: string,
  rows: ReadonlyArray<Record<string, string | number | null>>
) =>
  Effect.forEach(
    Array.from({ length: Math.ceil(rows.length / 500) }, (_, i) => rows.slice(i * 500, i * 500 + 500)),
    (chunk) => sql`INSERT INTO ${sql(table)} ${sql.insert(chunk)}`,
    { discard: true }
  )

/** The instant `n` seconds after 2025-01-01, as the tables store it. */
export const iso = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 1000).toISOString()
/** A well-formed id (`<prefix>_` and 26 base32 digits) numbered `n`. */
export const numbered = (prefix: string, n: number) => `${prefix}_${String(n).padStart(26, "0")}`

/** The org `orgId` and a user for each of `userIds` in it (`<id>@example.com`, named by the id), made at `iso(0)`. */
export const insertOrgUsers = (sql: SqlClient.SqlClient, orgId: string, userIds: ReadonlyArray<string>) =>
  Effect.andThen(sql`INSERT INTO orgs ${sql.insert({ id: orgId, name: orgId, created_at: iso(0) })}`, () =>
    insertAll(
      sql,
      "users",
      userIds.map((user) => ({
        id: user,
        org_id: orgId,
        email: `${user}@example.com`,
        name: user,
        avatar_url: null,
        password_hash: null,
        created_at: iso(0),
        updated_at: iso(0)
      }))
    )
  )

/** An active webhook's row for `user_id` (subscribed to `project.created`, not limited or disabled), made at `iso(n)`. */
export const webhookRow = (id: string, userId: string, url: string, n: number) => ({
  id,
  user_id: userId,
  url,
  events: `["project.created"]`,
  secret: "s",
  status: "active",
  created_at: iso(n),
  updated_at: iso(n),
  failed_at: null
})

const range = (count: number) => Array.from({ length: count }, (_, i) => i)

/**
 * What the delivery worker's claim runs against (test/webhooks/claim-plan.test.ts, bench/claim-cost.ts): one user's
 * `webhooks` (none rate-limited or disabled), `delivered` deliveries (the history a claim must not read) and `due`
 * pending ones, due at `delivered + due` seconds after 2025-01-01, spread over the webhooks; ten deliveries an event.
 */
export const seedClaimable = (counts: {
  readonly webhooks: number
  readonly delivered: number
  readonly due: number
}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const total = counts.delivered + counts.due
    yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_claim", name: "Claim", created_at: iso(0) })}`
    yield* insertAll(sql, "users", [
      {
        id: numbered("usr", 1),
        org_id: "org_claim",
        email: "claim@example.com",
        name: "Claim",
        avatar_url: null,
        password_hash: null,
        created_at: iso(0),
        updated_at: iso(0)
      }
    ])
    yield* insertAll(
      sql,
      "webhooks",
      range(counts.webhooks).map((i) =>
        webhookRow(numbered("whk", i), numbered("usr", 1), `https://example.com/${i}`, i)
      )
    )
    yield* insertAll(
      sql,
      "events",
      range(Math.ceil(total / 10)).map((i) => ({
        id: numbered("evt", i),
        type: "project.created",
        payload: "{}",
        trace_context: null,
        created_at: iso(i)
      }))
    )
    yield* insertAll(
      sql,
      "deliveries",
      range(total).map((i) => {
        const delivered = i < counts.delivered
        return {
          id: numbered("dlv", i),
          webhook_id: numbered("whk", i % counts.webhooks),
          event_id: numbered("evt", Math.floor(i / 10)),
          event_type: "project.created",
          status: delivered ? "delivered" : "pending",
          attempt_count: delivered ? 1 : 0,
          manual: 0,
          next_attempt_at: delivered ? null : iso(total),
          last_attempt_at: delivered ? iso(i) : null,
          claimed_until: null,
          claim_token: null,
          created_at: iso(Math.floor(i / 10))
        }
      })
    )
  })
