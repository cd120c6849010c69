/**
 * The delivery recorder as `sql` templates (the interface: src/Webhooks/Recorder.ts; its fast twin:
 * src/Webhooks/RecorderFast.ts): the steps of a batch in one transaction, the same on both engines. Settles the
 * claims still held, stores their attempts, then sets each webhook's status by the latest decisive outcome.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Schema } from "effect"
import { AttemptRecord, DeliveryStatus } from "../Domain/Webhook.js"
import * as Rows from "../Sql/Repository.js"
import {
  DeliveryRecorder,
  type DeliveryRecorderService,
  type Recorded,
  type Recording,
  type Settlement
} from "./Recorder.js"

const SettlementRow: Schema.Schema<Settlement> = Schema.Struct({
  id: Schema.String,
  claim_token: Schema.String,
  status: DeliveryStatus,
  attempt_count: Schema.Int,
  next_attempt_at: Schema.NullOr(Schema.String),
  last_attempt_at: Schema.String,
  trigger: Schema.Literal("schedule", "manual")
})

const Id = Schema.Struct({ id: Schema.String })

export const makeIdiomaticRecorder = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  /** Writes the outcomes of claims still held, in one statement; answers the rows it wrote. */
  const settle = Rows.findAll({
    Request: Schema.Array(SettlementRow),
    Result: Id,
    execute: (outcomes) =>
      sql`
        WITH outcome (id, claim_token, status, attempt_count, next_attempt_at, last_attempt_at, attempt_trigger) AS (
          VALUES ${sql.csv(
            outcomes.map(
              (o) =>
                sql`(${o.id}, ${o.claim_token}, ${o.status}, ${o.attempt_count}, ${o.next_attempt_at}, ${o.last_attempt_at}, ${o.trigger})`
            )
          )}
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
  })

  const insertAttempts = Rows.write({
    Request: Schema.Array(AttemptRecord),
    execute: (attempts) => sql`INSERT INTO delivery_attempts ${sql.insert(attempts.map((attempt) => ({ ...attempt })))}`
  })

  /** Those of `ids` whose webhook is not `failed` yet. */
  const notFailedAmong = Rows.findAll({
    Request: Schema.Array(Schema.String),
    Result: Id,
    execute: (ids) => sql`SELECT id FROM webhooks WHERE id IN ${sql.in(ids)} AND status <> 'failed'`
  })

  /** A failed webhook made active again (an active one is left as it is). */
  const activate = Rows.write({
    Request: Schema.Struct({ ids: Schema.Array(Schema.String), now: Schema.String }),
    execute: ({ ids, now }) =>
      sql`UPDATE webhooks SET status = 'active', failed_at = NULL, updated_at = ${now}
          WHERE id IN ${sql.in(ids)} AND status = 'failed'`
  })

  const markFailed = Rows.write({
    Request: Schema.Struct({ ids: Schema.Array(Schema.String), now: Schema.String }),
    execute: ({ ids, now }) =>
      sql`UPDATE webhooks SET status = 'failed', failed_at = ${now}, updated_at = ${now} WHERE id IN ${sql.in(ids)}`
  })

  const recordBatch = (recordings: ReadonlyArray<Recording>, now: string) =>
    Effect.gen(function* () {
      const kept = new Set((yield* settle(recordings.map((r) => r.settlement))).map((row) => row.id))
      const owned = recordings.filter((r) => kept.has(r.settlement.id))
      if (owned.length > 0) yield* insertAttempts(owned.map((r) => r.attempt))
      // Given in the order attempted: the last decisive outcome of each webhook wins.
      const latest = new Map<string, Recording>()
      for (const r of owned) if (r.decisive) latest.set(r.webhook_id, r)
      const decisive = [...latest.values()]
      const succeeded = decisive.filter((r) => r.attempt.outcome === "succeeded").map((r) => r.webhook_id)
      const failing = decisive.filter((r) => r.attempt.outcome === "failed")
      const failingHooks = failing.map((r) => r.webhook_id)
      // Read before marking, so that only webhooks this batch turns `failed` are told.
      const notFailed = new Set(
        failingHooks.length === 0 ? [] : (yield* notFailedAmong(failingHooks)).map((row) => row.id)
      )
      if (succeeded.length > 0) yield* activate({ ids: succeeded, now })
      if (failingHooks.length > 0) yield* markFailed({ ids: failingHooks, now })
      return {
        kept,
        failedBy: new Set(failing.filter((r) => notFailed.has(r.webhook_id)).map((r) => r.settlement.id))
      }
    }).pipe(sql.withTransaction)

  const record = (recordings: ReadonlyArray<Recording>, now: string): Effect.Effect<Recorded, SqlError> =>
    recordings.length === 0 ? Effect.succeed({ kept: new Set(), failedBy: new Set() }) : recordBatch(recordings, now)

  return { kind: "idiomatic", record } satisfies DeliveryRecorderService
})

export const IdiomaticRecorderLive = Layer.effect(DeliveryRecorder, makeIdiomaticRecorder)
