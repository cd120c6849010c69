/**
 * The delivery recorder's fast path (the interface and its idiomatic twin: src/Webhooks/Recorder.ts,
 * src/Webhooks/RecorderIdiomatic.ts). A batch of outcomes comes every few milliseconds under load, up to hundreds of
 * rows each, so its statements are fixed text by batch size (src/Sql/Direct.ts): no template compiled and no request
 * encoded through a schema per batch.
 *
 * - SQLite: the twin's steps, in one transaction (one writer at a time: nothing waits on its locks but the next
 *   writer, which would wait for the file anyway).
 * - PostgreSQL: the batch as one statement (data-modifying CTEs), committed on its own. The deliveries' update takes
 *   the row locks of their counters (migration 0006) and holds them until commit; in a transaction of several
 *   statements they stay held while the server, busy with requests, gets round to the next statement and the
 *   commit, and every create queuing a delivery for the same webhooks waits behind them.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import type { AttemptRecord } from "../Domain/Webhook.js"
import { makeDirect, type Param } from "../Sql/Direct.js"
import {
  DeliveryRecorder,
  type DeliveryRecorderService,
  type Recorded,
  type Recording,
  type Settlement
} from "./Recorder.js"

/** A column of a row as the driver gave it (`undefined` when the row is no object or lacks it). */
const columnOf = (row: unknown, name: string): unknown =>
  typeof row === "object" && row !== null && name in row ? Reflect.get(row, name) : undefined

/**
 * The ids a settlement wrote, from its `RETURNING` rows as the driver gives them: each must be `{ id: string }`;
 * anything else is a bug here, a defect, as a row that does not decode is (src/Sql/Rows.ts).
 */
const settledIds = (rows: ReadonlyArray<unknown>): Effect.Effect<Set<string>> => {
  const ids = new Set<string>()
  for (const row of rows) {
    const id = columnOf(row, "id")
    if (typeof id !== "string")
      return Effect.die(new Error(`a settled delivery row is not { id: string }: ${JSON.stringify(row)}`))
    ids.add(id)
  }
  return Effect.succeed(ids)
}

/** What the PostgreSQL statement answers: `{ id, kind }` rows, a kept delivery or one that failed its webhook. */
const recordedOf = (rows: ReadonlyArray<unknown>): Effect.Effect<Recorded> => {
  const kept = new Set<string>()
  const failedBy = new Set<string>()
  for (const row of rows) {
    const id = columnOf(row, "id")
    const kind = columnOf(row, "kind")
    if (typeof id !== "string" || (kind !== "kept" && kind !== "failed_by"))
      return Effect.die(new Error(`a recorded row is not { id: string, kind }: ${JSON.stringify(row)}`))
    ;(kind === "kept" ? kept : failedBy).add(id)
  }
  return Effect.succeed({ kept, failedBy })
}

/** The columns of the PostgreSQL statement, one row per outcome, and how each is bound. */
const RECORD_COLUMNS: ReadonlyArray<readonly [string, "text" | "integer"]> = [
  ["id", "text"],
  ["claim_token", "text"],
  ["status", "text"],
  ["attempt_count", "integer"],
  ["next_attempt_at", "text"],
  ["last_attempt_at", "text"],
  ["number", "integer"],
  ["attempted_at", "text"],
  ["duration_ms", "integer"],
  ["status_code", "integer"],
  ["error", "text"],
  ["response_body", "text"],
  ["outcome", "text"],
  ["attempt_trigger", "text"],
  ["request_headers", "text"],
  ["response_headers", "text"],
  ["webhook_id", "text"],
  ["ordinal", "integer"],
  ["decisive", "integer"]
]

/** Row count buckets of the one PostgreSQL statement, so a handful of texts serve every batch size. */
const bucketOf = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)))

export const makeFastRecorder = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const direct = makeDirect(sql)
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  /** Placeholders for `count` values, numbered from `first`. */
  const numbered = (count: number, first: number) =>
    Array.from({ length: count }, (_, i) => direct.placeholder(first + i)).join(", ")

  const insertAttempts = (attempts: ReadonlyArray<AttemptRecord>) => {
    if (attempts.length === 0) return Effect.void
    const params: Array<Param> = []
    for (const a of attempts) {
      params.push(a.delivery_id, a.number, a.attempted_at, a.duration_ms, a.status_code, a.error)
      params.push(a.response_body, a.outcome, a.trigger, a.request_headers, a.response_headers)
    }
    const text = direct.text(
      `attempts ${attempts.length}`,
      () =>
        `INSERT INTO delivery_attempts (delivery_id, number, attempted_at, duration_ms, status_code, error, response_body, outcome, "trigger", request_headers, response_headers) VALUES ${direct.values(attempts.length, 11)}`
    )
    return Effect.asVoid(direct.run(text, params))
  }

  /** Writes the outcomes of claims this process still holds, in one statement; answers the ids it wrote. */
  const settle = (outcomes: ReadonlyArray<Settlement>) => {
    const params: Array<Param> = []
    for (const o of outcomes) {
      params.push(o.id, o.claim_token, o.status, o.attempt_count, o.next_attempt_at, o.last_attempt_at, o.trigger)
    }
    const text = direct.text(
      `settle ${outcomes.length}`,
      () => `
        WITH outcome (id, claim_token, status, attempt_count, next_attempt_at, last_attempt_at, attempt_trigger) AS (
          VALUES ${direct.values(outcomes.length, 7)}
        )
        UPDATE deliveries SET
          status = outcome.status,
          attempt_count = CAST(outcome.attempt_count AS INTEGER),
          next_attempt_at = outcome.next_attempt_at,
          last_attempt_at = outcome.last_attempt_at,
          manual = CASE WHEN outcome.attempt_trigger = 'manual' THEN 0 ELSE deliveries.manual END,
          claimed_until = NULL, claim_token = NULL
        FROM outcome
        WHERE deliveries.id = outcome.id AND deliveries.claim_token = outcome.claim_token
        RETURNING deliveries.id`
    )
    return Effect.flatMap(direct.run(text, params), settledIds)
  }

  /** `active` changes only webhooks that are failed (every batch with a success asks); `failed` marks them all. */
  const markWebhooks = (ids: ReadonlyArray<string>, status: "active" | "failed", now: string) => {
    if (ids.length === 0) return Effect.void
    if (status === "failed") {
      return sql`UPDATE webhooks SET status = 'failed', failed_at = ${now}, updated_at = ${now}
            WHERE id IN ${sql.in(ids)}`.pipe(Effect.asVoid)
    }
    const text = direct.text(
      `active ${ids.length}`,
      () =>
        `UPDATE webhooks SET status = 'active', failed_at = NULL, updated_at = ${direct.placeholder(1)} WHERE id IN (${numbered(ids.length, 2)}) AND status = 'failed'`
    )
    return Effect.asVoid(direct.run(text, [now, ...ids]))
  }

  /** Those of `ids` whose webhook is not `failed` yet. */
  const notFailedAmong = (ids: ReadonlyArray<string>) =>
    ids.length === 0
      ? Effect.succeed(new Set<string>())
      : Effect.map(
          sql<{ readonly id: string }>`SELECT id FROM webhooks WHERE id IN ${sql.in(ids)} AND status <> 'failed'`,
          (rows) => new Set(rows.map((row) => row.id))
        )

  /** SQLite: the batch in steps, in one transaction. */
  const recordInSteps = (recordings: ReadonlyArray<Recording>, now: string) =>
    Effect.gen(function* () {
      const kept = yield* settle(recordings.map((r) => r.settlement))
      const owned = recordings.filter((r) => kept.has(r.settlement.id))
      yield* insertAttempts(owned.map((r) => r.attempt))
      const latest = new Map<string, Recording>()
      for (const r of owned) if (r.decisive) latest.set(r.webhook_id, r)
      const decisive = [...latest.values()]
      const failing = decisive.filter((r) => r.attempt.outcome === "failed")
      const notFailed = yield* notFailedAmong(failing.map((r) => r.webhook_id))
      yield* markWebhooks(
        decisive.filter((r) => r.attempt.outcome === "succeeded").map((r) => r.webhook_id),
        "active",
        now
      )
      yield* markWebhooks(
        failing.map((r) => r.webhook_id),
        "failed",
        now
      )
      const failedBy = failing.filter((r) => notFailed.has(r.webhook_id)).map((r) => r.settlement.id)
      return { kept, failedBy: new Set(failedBy) }
    }).pipe(sql.withTransaction)

  /**
   * PostgreSQL: the batch as one statement, padded to a bucket with rows of NULLs, which match nothing. The
   * statement's snapshot is taken before it marks any webhook, so `failed_by` names only webhooks it turned `failed`.
   */
  const recordAtOnce = (recordings: ReadonlyArray<Recording>, now: string) => {
    const rows = bucketOf(recordings.length)
    const params: Array<Param> = [now]
    recordings.forEach(({ settlement: s, attempt: a, webhook_id, decisive }, ordinal) => {
      params.push(s.id, s.claim_token, s.status, s.attempt_count, s.next_attempt_at, s.last_attempt_at)
      params.push(a.number, a.attempted_at, a.duration_ms, a.status_code, a.error, a.response_body, a.outcome)
      params.push(a.trigger, a.request_headers, a.response_headers, webhook_id, ordinal, decisive ? 1 : 0)
    })
    for (let i = recordings.length * RECORD_COLUMNS.length; i < rows * RECORD_COLUMNS.length; i++) params.push(null)
    const text = direct.text(`record ${rows}`, () => {
      const row = (r: number) =>
        `(${RECORD_COLUMNS.map(([, type], c) => {
          const p = direct.placeholder(2 + r * RECORD_COLUMNS.length + c)
          return type === "text" ? p : `CAST(${p} AS INTEGER)`
        }).join(", ")})`
      return `
        WITH o (${RECORD_COLUMNS.map(([name]) => name).join(", ")}) AS (
          VALUES ${Array.from({ length: rows }, (_, r) => row(r)).join(", ")}
        ),
        settled AS (
          UPDATE deliveries SET
            status = o.status, attempt_count = o.attempt_count, next_attempt_at = o.next_attempt_at,
            last_attempt_at = o.last_attempt_at,
            manual = CASE WHEN o.attempt_trigger = 'manual' THEN 0 ELSE deliveries.manual END,
            claimed_until = NULL, claim_token = NULL
          FROM o
          WHERE deliveries.id = o.id AND deliveries.claim_token = o.claim_token
          RETURNING deliveries.id
        ),
        owned AS (SELECT o.* FROM o JOIN settled ON settled.id = o.id),
        attempts AS (
          INSERT INTO delivery_attempts (delivery_id, number, attempted_at, duration_ms, status_code, error, response_body, outcome, "trigger", request_headers, response_headers)
          SELECT id, number, attempted_at, duration_ms, status_code, error, response_body, outcome, attempt_trigger, request_headers, response_headers FROM owned
        ),
        latest AS (
          SELECT DISTINCT ON (webhook_id) webhook_id, id, outcome = 'succeeded' AS succeeded
          FROM owned WHERE decisive = 1 ORDER BY webhook_id, ordinal DESC
        ),
        activated AS (
          UPDATE webhooks SET status = 'active', failed_at = NULL, updated_at = $1
          WHERE id IN (SELECT webhook_id FROM latest WHERE succeeded) AND status = 'failed'
        ),
        failed AS (
          UPDATE webhooks SET status = 'failed', failed_at = $1, updated_at = $1
          WHERE id IN (SELECT webhook_id FROM latest WHERE NOT succeeded)
        )
        SELECT id, 'kept' AS kind FROM settled
        UNION ALL
        SELECT latest.id, 'failed_by' FROM latest JOIN webhooks ON webhooks.id = latest.webhook_id
        WHERE NOT latest.succeeded AND webhooks.status <> 'failed'`
    })
    return Effect.flatMap(direct.run(text, params), recordedOf)
  }

  const record = (recordings: ReadonlyArray<Recording>, now: string) =>
    recordings.length === 0
      ? Effect.succeed<Recorded>({ kept: new Set(), failedBy: new Set() })
      : pg
        ? recordAtOnce(recordings, now)
        : recordInSteps(recordings, now)

  return { kind: "fast", record } satisfies DeliveryRecorderService
})

export const FastRecorderLive = Layer.effect(DeliveryRecorder, makeFastRecorder)
