/**
 * What the worker's claim costs SQLite with no webhook rate-limited: the claim as it is (src/Webhooks/Repo.ts
 * `claimIds`: its `paced` part, and the limited webhooks left out of the others) against the claim as it was before
 * `rate_limit` (4968236), on one database as the service leaves it (its migrations, no `ANALYZE`), in one process,
 * alternated block by block. A steadier yardstick than deliveries a second end to end (bench/deliveries.ts), where
 * this machine's noise is larger than the 5 % issue 44 allows: the two statements differ in their SQL alone, so this
 * measures that difference, and bench/README.md sets it against a delivery's whole CPU.
 *
 * Each claim runs in a transaction rolled back after it, so every run claims the same due deliveries. Prints the
 * median µs a claim of each statement and the spread of the blocks' medians, for a claim of 64 deliveries (a full
 * batch) and of 1 (a claim at a low rate).
 *
 *   taskset -c 0 bun bench/claim-cost.ts [--history 50000] [--blocks 30] [--per-block 200]
 */
import { Database } from "bun:sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { SqlLive } from "../src/Sql/Client.js"
import { insertAll } from "../test/support/seed.ts"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}
const HISTORY = arg("history", 50_000)
const BLOCKS = arg("blocks", 30)
const PER_BLOCK = arg("per-block", 200)
const DUE = 64
const WEBHOOKS = 10

const dir = mkdtempSync(join(tmpdir(), "claim-cost-"))
const file = join(dir, "claim.sqlite")
process.env.DATABASE_URL = `sqlite:${file}`
const iso = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 1000).toISOString()
const id = (prefix: string, n: number) => `${prefix}_${String(n).padStart(26, "0")}`
const range = (count: number) => Array.from({ length: count }, (_, i) => i)

/** The service's schema (its migrations), with `HISTORY` delivered deliveries and `DUE` due ones over 10 webhooks. */
const seed = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_claim", name: "Claim", created_at: iso(0) })}`
  yield* insertAll(sql, "users", [
    {
      id: id("usr", 1),
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
    range(WEBHOOKS).map((i) => ({
      id: id("whk", i),
      user_id: id("usr", 1),
      url: `https://example.com/${i}`,
      events: `["project.created"]`,
      secret: "s",
      status: "active",
      created_at: iso(i),
      updated_at: iso(i),
      failed_at: null
    }))
  )
  const total = HISTORY + DUE
  yield* insertAll(
    sql,
    "events",
    range(Math.ceil(total / WEBHOOKS)).map((i) => ({
      id: id("evt", i),
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
      const delivered = i < HISTORY
      return {
        id: id("dlv", i),
        webhook_id: id("whk", i % WEBHOOKS),
        event_id: id("evt", Math.floor(i / WEBHOOKS)),
        event_type: "project.created",
        status: delivered ? "delivered" : "pending",
        attempt_count: delivered ? 1 : 0,
        manual: 0,
        next_attempt_at: delivered ? null : iso(total),
        last_attempt_at: delivered ? iso(i) : null,
        created_at: iso(i)
      }
    })
  )
})

/** The claim before `rate_limit` (4968236's `claimIds`), with `?` for its parameters. */
const BEFORE = `
  WITH manual AS (
    SELECT id FROM deliveries WHERE manual = 1 AND (claimed_until IS NULL OR claimed_until < ?1)
      AND webhook_id NOT IN (SELECT id FROM webhooks WHERE disabled_at IS NOT NULL) LIMIT ?2
  ),
  due AS (
    SELECT id FROM deliveries
    WHERE status = 'pending' AND next_attempt_at <= ?1 AND (claimed_until IS NULL OR claimed_until < ?1)
      AND webhook_id NOT IN (SELECT id FROM webhooks WHERE disabled_at IS NOT NULL)
    ORDER BY next_attempt_at LIMIT ?2
  )
  UPDATE deliveries SET claimed_until = ?3, claim_token = ?4
  WHERE id IN (
    SELECT id FROM (SELECT id FROM manual UNION ALL SELECT id FROM due WHERE id NOT IN (SELECT id FROM manual)) picked
    LIMIT ?2
  )
  RETURNING id`

/** The claim as it is (src/Webhooks/Repo.ts `claimIds`, no process pacing), with `?` for its parameters. */
const NOW = `
  WITH manual AS (
    SELECT id FROM deliveries WHERE manual = 1 AND (claimed_until IS NULL OR claimed_until < ?1)
      AND webhook_id NOT IN (SELECT id FROM webhooks WHERE disabled_at IS NOT NULL
                             UNION ALL SELECT id FROM webhooks WHERE rate_limit IS NOT NULL) LIMIT ?2
  ),
  due AS (
    SELECT id FROM deliveries
    WHERE status = 'pending' AND next_attempt_at <= ?1 AND (claimed_until IS NULL OR claimed_until < ?1)
      AND webhook_id NOT IN (SELECT id FROM webhooks WHERE disabled_at IS NOT NULL
                             UNION ALL SELECT id FROM webhooks WHERE rate_limit IS NOT NULL)
    ORDER BY next_attempt_at LIMIT ?2
  ),
  paced AS (
    SELECT id FROM (
      SELECT d.id, d.manual, d.next_attempt_at, w.rate_limit,
        ROW_NUMBER() OVER (PARTITION BY d.webhook_id ORDER BY d.manual DESC, d.next_attempt_at, d.id) AS turn
      FROM webhooks w CROSS JOIN deliveries d
      WHERE d.webhook_id = w.id AND w.rate_limit IS NOT NULL AND w.disabled_at IS NULL
        AND (d.claimed_until IS NULL OR d.claimed_until < ?1)
        AND (d.manual = 1 OR (d.status = 'pending' AND d.next_attempt_at <= ?1))
    ) ranked
    WHERE turn <= rate_limit
    ORDER BY manual DESC, next_attempt_at
    LIMIT ?2
  )
  UPDATE deliveries SET claimed_until = ?3, claim_token = ?4
  WHERE id IN (
    SELECT id FROM (
      SELECT id FROM paced
      UNION ALL SELECT id FROM manual
      UNION ALL SELECT id FROM due WHERE id NOT IN (SELECT id FROM manual)
    ) picked
    LIMIT ?2
  )
    AND (claimed_until IS NULL OR claimed_until < ?1)
  RETURNING id`

await Effect.runPromise(Effect.provide(seed, SqlLive))

const db = new Database(file)
db.run("PRAGMA busy_timeout = 5000")
const now = iso(HISTORY + DUE + 10)
const statements = { before: db.query(BEFORE), now: db.query(NOW) }
type Which = keyof typeof statements

/** `PER_BLOCK` claims of `limit` with `which`, each rolled back; µs a claim. */
const block = (which: Which, limit: number) => {
  const statement = statements[which]
  const start = Bun.nanoseconds()
  for (let i = 0; i < PER_BLOCK; i++) {
    db.run("BEGIN")
    const rows = statement.all(now, limit, iso(HISTORY + DUE + 100), "token")
    db.run("ROLLBACK")
    if (rows.length !== Math.min(limit, DUE)) throw new Error(`${which} claimed ${rows.length}, not ${limit}`)
  }
  return (Bun.nanoseconds() - start) / 1000 / PER_BLOCK
}

const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}
const f = (x: number) => x.toFixed(1)

console.log(`SQLite, ${HISTORY} delivered deliveries and ${DUE} due over ${WEBHOOKS} webhooks, none rate-limited`)
for (const limit of [DUE, 1]) {
  // Warm-up: both statements prepared and their pages cached.
  block("before", limit)
  block("now", limit)
  const times: Record<Which, Array<number>> = { before: [], now: [] }
  const ratios: Array<number> = []
  for (let b = 0; b < BLOCKS; b++) {
    // A B, then B A: neither always runs first.
    const order: ReadonlyArray<Which> = b % 2 === 0 ? ["before", "now"] : ["now", "before"]
    const taken: Partial<Record<Which, number>> = {}
    for (const which of order) taken[which] = block(which, limit)
    times.before.push(taken.before ?? 0)
    times.now.push(taken.now ?? 0)
    ratios.push((taken.now ?? 0) / (taken.before ?? 1))
  }
  const [before, after] = [median(times.before), median(times.now)]
  console.log(
    `claim of ${String(limit).padStart(2)}: before ${f(before)} µs (blocks ${f(Math.min(...times.before))}–${f(Math.max(...times.before))}), ` +
      `now ${f(after)} µs (${f(Math.min(...times.now))}–${f(Math.max(...times.now))}); ` +
      `now/before ${median(ratios).toFixed(3)} (blocks ${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}); ` +
      `${f(after - before)} µs more a claim, ${f((after - before) / limit)} µs a delivery`
  )
}
db.close()
rmSync(dir, { recursive: true, force: true })
