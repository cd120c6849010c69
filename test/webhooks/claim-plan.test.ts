/**
 * The worker's claim (src/Webhooks/Repo.ts `claim`) runs every time its runners have room, so it reads neither table
 * whole. With no webhook rate-limited, its `paced` part reads no delivery: it starts from the webhooks with a
 * `rate_limit` (an index of them, `webhooks_rate_limited`) and reads only their deliveries; the webhooks it leaves
 * out (disabled or limited) come from two short partial indexes, not from every webhook. The database is as the
 * service leaves it: on SQLite no `ANALYZE` (the service never runs one, so the planner has no statistics), on
 * PostgreSQL analysed (as autovacuum does). SQLite once planned `paced` the other way round: every delivery ever
 * made, on every claim.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { WebhooksRepo } from "../../src/Webhooks/Repo.ts"
import { seedClaimable } from "../support/seed.ts"
import { usingPostgres } from "../support/server.ts"
import { onSelectedEngine, type ServiceHarness } from "../support/services.ts"
import { captured } from "../support/statements.ts"

/** Delivered deliveries, the history a claim must not read. */
const N = 5_000
const iso = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 1000).toISOString()
const id = (prefix: string, n: number) => `${prefix}_${String(n).padStart(26, "0")}`

let harness: ServiceHarness<WebhooksRepo>

const seed = Effect.gen(function* () {
  yield* seedClaimable({ webhooks: 10, delivered: N - 20, due: 20 })
  if (usingPostgres()) yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql`VACUUM ANALYZE`)
})

beforeAll(async () => {
  harness = await onSelectedEngine(WebhooksRepo.Default)
  await harness.run(seed)
}, 60_000)

afterAll(() => harness.dispose(), 20_000)

/** The statement's plan, a line a step: SQLite's `EXPLAIN QUERY PLAN` details, PostgreSQL's `EXPLAIN` text. */
const planOf = ([text, params]: readonly [string, ReadonlyArray<unknown>]) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    if (usingPostgres()) {
      const rows = yield* sql.unsafe<{ readonly "QUERY PLAN": string }>(`EXPLAIN ${text}`, params)
      return rows.map((row) => row["QUERY PLAN"])
    }
    const rows = yield* sql.unsafe<{ readonly detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)
    return rows.map((row) => row.detail)
  })

/**
 * What a plan reads whole. SQLite: `SCAN d` (or `SCAN deliveries`) whichever index it walks, unless the index holds
 * only what a claim is for (the pending deliveries, the manual ones); `SCAN w` (or `SCAN webhooks`) unless it walks
 * the short index of the disabled or of the rate-limited webhooks. PostgreSQL: a Seq Scan on deliveries (its planner
 * may read the few rows of webhooks whole, and does so rightly).
 */
const wholeReads = (plan: ReadonlyArray<string>) =>
  plan.filter(
    (line) =>
      (/\bSCAN (d|deliveries)\b/.test(line) &&
        !/USING (COVERING )?INDEX (deliveries_due|deliveries_manual|deliveries_webhook_pending)\b/.test(line)) ||
      (/\bSCAN (w|webhooks)\b/.test(line) &&
        !/USING (COVERING )?INDEX webhooks_(disabled|rate_limited)\b/.test(line)) ||
      /Seq Scan on deliveries/.test(line)
  )

/**
 * Claims up to ten due deliveries at `now` (seconds after the seed's start) under `token`, and answers the claim
 * statement's plan and the webhook of each delivery it claimed.
 */
const claimAt = async (now: number, token: string) => {
  const claim = Effect.flatMap(WebhooksRepo, (repo) => repo.claim(10, iso(now), iso(now + 59), token, []))
  const statements = await harness.run(captured(claim))
  const update = statements.find(([text]) => /^\s*WITH\b/.test(text))
  if (update === undefined) throw new Error(`no claim statement among ${JSON.stringify(statements)}`)
  const plan = await harness.run(planOf(update))
  const claimed = await harness.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ readonly webhook_id: string }>`SELECT webhook_id FROM deliveries WHERE claim_token = ${token}`
    )
  )
  return { plan, claimed: claimed.map((row) => row.webhook_id) }
}

test("with no webhook rate-limited, a claim takes the due deliveries and reads neither table whole", async () => {
  const { claimed, plan } = await claimAt(N + 1, "free")
  expect({ whole: wholeReads(plan), plan }).toEqual({ whole: [], plan })
  // Ten of the twenty due.
  expect(claimed).toHaveLength(10)
}, 30_000)

test("with a webhook rate-limited, a claim reads that webhook's deliveries by its index, not every delivery", async () => {
  await harness.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE webhooks SET rate_limit = 1 WHERE id = ${id("whk", 0)}`)
  )
  // After the first test's claims have lapsed.
  const { claimed, plan } = await claimAt(N + 61, "paced")
  expect({ whole: wholeReads(plan), plan }).toEqual({ whole: [], plan })
  // Its one a second: one of its two due deliveries.
  expect(claimed.filter((webhook) => webhook === id("whk", 0))).toHaveLength(1)
}, 30_000)
