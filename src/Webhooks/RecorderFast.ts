/**
 * The delivery recorder's fast path on PostgreSQL (the interface and its idiomatic twin: src/Webhooks/Recorder.ts,
 * src/Webhooks/RecorderIdiomatic.ts). A batch of outcomes comes every few milliseconds under load, up to hundreds of
 * rows each, so it is one statement of fixed text by batch size (src/Sql/Direct.ts): no template compiled and no
 * request encoded through a schema per batch; data-modifying CTEs, committed on their own. The deliveries' update
 * takes the row locks of their counters (migration 0006) and holds them until commit; in a transaction of several
 * statements they stay held while the server, busy with requests, gets round to the next statement and the commit,
 * and every create queuing a delivery for the same webhooks waits behind them. On SQLite, where it earned nothing
 * against the twin (bench/README.md), the worker runs the twin (src/Webhooks/RecorderLive.ts).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { makeDirect, type Param } from "../Sql/Direct.js"
import { DeliveryRecorder, type DeliveryRecorderService, type Recorded, type Recording } from "./Recorder.js"

/** A column of a row as the driver gave it (`undefined` when the row is no object or lacks it). */
const columnOf = (row: unknown, name: string): unknown =>
  typeof row === "object" && row !== null && name in row ? Reflect.get(row, name) : undefined

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
  if (sql.onDialectOrElse({ pg: () => false, orElse: () => true })) {
    return yield* Effect.dieMessage("the fast delivery recorder is PostgreSQL's: on SQLite the worker runs its twin")
  }
  const direct = makeDirect(sql)

  /**
   * The batch as one statement, padded to a bucket with rows of NULLs, which match nothing. The
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
      : recordAtOnce(recordings, now)

  return { kind: "fast", record } satisfies DeliveryRecorderService
})

export const FastRecorderLive = Layer.effect(DeliveryRecorder, makeFastRecorder)
