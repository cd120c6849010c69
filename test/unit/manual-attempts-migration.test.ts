/**
 * Migration 0020 (manual retries outside the schedule) on rows written before it: every attempt already made is a
 * scheduled one, and a manual retry asked for under the old rules (the delivery made `pending` again with
 * `manual = 1`) becomes a failed delivery with a manual attempt asked for; other deliveries are left as they were.
 * On the engine `DATABASE_URL` selects.
 */
import { expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { webhookRow } from "../support/helpers.ts"
import { checkBackfill } from "../support/randomWrites.ts"

const T0 = "2026-01-01T00:00:00.000Z"
const T1 = "2026-01-01T00:01:00.000Z"
const id = (prefix: string, n: number) => `${prefix}_${String(n).padStart(26, "0")}`

const delivery = (n: number, status: string, manual: number, attemptCount: number, next: string | null) => ({
  id: id("dlv", n),
  webhook_id: id("whk", 1),
  event_id: id("evt", 1),
  event_type: "project.created",
  status,
  attempt_count: attemptCount,
  manual,
  next_attempt_at: next,
  last_attempt_at: attemptCount === 0 ? null : T0,
  claimed_until: null,
  claim_token: null,
  created_at: T0
})

const attemptRow = (n: number, number: number) => ({
  delivery_id: id("dlv", n),
  number,
  attempted_at: T0,
  duration_ms: 5,
  status_code: 500,
  error: "HTTP 500",
  response_body: "down",
  outcome: "failed"
})

test("attempts made before are scheduled; an old-style manual retry becomes a failed delivery with one asked for", async () => {
  await checkBackfill({
    migration: "0020_manual_attempts",
    seed: () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_man", name: "Man", created_at: T0 })}`
        yield* sql`INSERT INTO users ${sql.insert({ id: id("usr", 1), org_id: "org_man", email: "man@example.com", name: "Man", avatar_url: null, password_hash: null, created_at: T0, updated_at: T0 })}`
        yield* sql`INSERT INTO webhooks ${sql.insert(
          webhookRow({
            id: id("whk", 1),
            userId: id("usr", 1),
            url: "https://hooks.example.com/m",
            secret: "s",
            at: T0
          })
        )}`
        yield* sql`INSERT INTO events ${sql.insert({ id: id("evt", 1), type: "project.created", payload: "{}", trace_context: null, created_at: T0 })}`
        yield* sql`INSERT INTO deliveries ${sql.insert([
          delivery(1, "pending", 0, 1, T1), // retrying on its schedule
          delivery(2, "pending", 1, 5, T1), // a manual retry of a failed delivery, asked for under the old rules
          delivery(3, "failed", 0, 5, null)
        ])}`
        yield* sql`INSERT INTO delivery_attempts ${sql.insert([attemptRow(1, 1), attemptRow(2, 1), attemptRow(2, 2)])}`
      }),
    services: Layer.empty,
    check: Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const attempts = yield* sql<{ readonly trigger: string }>`SELECT "trigger" FROM delivery_attempts`
      expect(attempts.map((a) => a.trigger)).toEqual(["schedule", "schedule", "schedule"])
      const rows = yield* sql<{
        readonly id: string
        readonly status: string
        readonly manual: number
        readonly attempt_count: number
        readonly next_attempt_at: string | null
      }>`SELECT id, status, manual, attempt_count, next_attempt_at FROM deliveries ORDER BY id`
      expect(rows.map((row) => ({ ...row, manual: Number(row.manual) }))).toEqual([
        { id: id("dlv", 1), status: "pending", manual: 0, attempt_count: 1, next_attempt_at: T1 },
        { id: id("dlv", 2), status: "failed", manual: 1, attempt_count: 5, next_attempt_at: null },
        { id: id("dlv", 3), status: "failed", manual: 0, attempt_count: 5, next_attempt_at: null }
      ])
    })
  })
}, 30_000)
