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
import { WebhooksRepo } from "../src/Webhooks/Repo.js"
import { seedClaimable } from "../test/support/seed.ts"
import { captured } from "../test/support/statements.ts"
import { arg } from "./args.ts"
import { median } from "./stats.ts"

const HISTORY = arg("history", 50_000)
const BLOCKS = arg("blocks", 30)
const PER_BLOCK = arg("per-block", 200)
const DUE = 64
const WEBHOOKS = 10

const dir = mkdtempSync(join(tmpdir(), "claim-cost-"))
const file = join(dir, "claim.sqlite")
process.env.DATABASE_URL = `sqlite:${file}`
const iso = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 1000).toISOString()
// bun:sqlite's binding takes the parameters as they come.
type Binding = Parameters<ReturnType<Database["query"]>["all"]>

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

const now = iso(HISTORY + DUE + 10)
const claimedUntil = iso(HISTORY + DUE + 100)

/**
 * The seed (test/support/seed.ts), and the claim as the service sends it (src/Webhooks/Repo.ts `claimIds`, no
 * process pacing), captured from the repository: its text, and its parameters for `limit` deliveries.
 */
const claimNow = await Effect.runPromise(
  Effect.gen(function* () {
    yield* seedClaimable({ webhooks: WEBHOOKS, delivered: HISTORY, due: DUE })
    const repo = yield* WebhooksRepo
    // The text is the same for both limits; the parameters differ. Each claim is rolled back.
    const sent = (limit: number) =>
      Effect.map(
        captured(
          Effect.flatMap(SqlClient.SqlClient, (sql) =>
            sql
              .withTransaction(
                Effect.zipRight(repo.claim(limit, now, claimedUntil, "token", []), Effect.fail("rolled back"))
              )
              .pipe(Effect.ignore)
          )
        ),
        (statements) => {
          const claim = statements.find(([text]) => /^\s*WITH\b/.test(text))
          if (claim === undefined) throw new Error("no claim statement was sent")
          return claim
        }
      )
    return { 1: yield* sent(1), [DUE]: yield* sent(DUE) }
  }).pipe(Effect.provide(WebhooksRepo.Default), Effect.provide(SqlLive))
)

const db = new Database(file)
db.run("PRAGMA busy_timeout = 5000")
const statements = { before: db.query(BEFORE), now: db.query(claimNow[DUE][0]) }
type Which = keyof typeof statements
/** Each statement's parameters for a claim of `limit`. */
const paramsOf = (which: Which, limit: number): Binding =>
  which === "before" ? [now, limit, claimedUntil, "token"] : (claimNow[limit === 1 ? 1 : DUE][1] as Binding)

/** `PER_BLOCK` claims of `limit` with `which`, each rolled back; µs a claim. */
const block = (which: Which, limit: number) => {
  const statement = statements[which]
  const start = Bun.nanoseconds()
  for (let i = 0; i < PER_BLOCK; i++) {
    db.run("BEGIN")
    const rows = statement.all(...paramsOf(which, limit))
    db.run("ROLLBACK")
    if (rows.length !== Math.min(limit, DUE)) throw new Error(`${which} claimed ${rows.length}, not ${limit}`)
  }
  return (Bun.nanoseconds() - start) / 1000 / PER_BLOCK
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
