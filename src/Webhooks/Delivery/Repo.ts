/**
 * The worker's own reads and writes beside `WebhooksRepo`'s claims and the recorder's settlements
 * (src/Webhooks/Recorder.ts): when it should look next, and the pace of a webhook with a `rate_limit`. Rows decoded
 * with `SqlSchema`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Option, Schema } from "effect"

/**
 * The time one start holds, over the limit: a start every `PACE_SPAN_MS / rate_limit` milliseconds at most. A little
 * over a second, so that a receiver, which sees each request a moment after the worker started it, never counts
 * more than `rate_limit` in any second of its own either.
 */
export const PACE_SPAN_MS = 1100

/**
 * How late after the time it was granted for a start may still be made: half of what `PACE_SPAN_MS` keeps over the
 * second (the other half is the receiver's). A start made later would crowd the next one, granted on time, into
 * less than a step; the pacer lets it lapse and asks again (./Pacer.ts).
 */
export const START_WITHIN_MS = (PACE_SPAN_MS - 1000) / 2

/**
 * What a cold start holds besides its step: the first attempt a process makes to a webhook after a while opens a
 * new connection (TCP, TLS), so it reaches the receiver later than the ones after it, which go over that connection;
 * without this the receiver would see them close up behind it.
 */
export const COLD_START_MS = 250

/**
 * What a webhook's pace allows now: `Start` (the start is taken), `Wait` until `at` (milliseconds since the epoch:
 * another attempt started less than a step ago), or `Free` (the webhook has no limit any more, or is gone).
 */
export type Pace =
  | { readonly _tag: "Start" }
  | { readonly _tag: "Wait"; readonly at: number }
  | { readonly _tag: "Free" }

const START: Pace = { _tag: "Start" }
const FREE: Pace = { _tag: "Free" }

export class DeliveryScheduleRepo extends Effect.Service<DeliveryScheduleRepo>()("DeliveryScheduleRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const nextDue = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ due: Schema.NullOr(Schema.String) }),
      execute: (now) =>
        sql`SELECT MIN(next_attempt_at) AS due FROM deliveries
            WHERE status = 'pending' AND next_attempt_at > ${now} AND claimed_until IS NULL`
    })

    /**
     * When the next unclaimed pending delivery falls due after `now` (ISO), if one is waiting (the `deliveries_due`
     * index). Claimed ones are some process's already; a lease that lapsed is found by the poll.
     */
    const nextDueAfter = (now: string) =>
      Effect.map(nextDue(now), (row) => Option.flatMap(row, ({ due }) => Option.fromNullable(due)))

    const step = sql`CAST(${sql.literal(String(PACE_SPAN_MS))} AS DOUBLE PRECISION) / rate_limit`

    /**
     * A token bucket of one token per webhook, refilled every `PACE_SPAN_MS / rate_limit` ms, in the webhook's row
     * so every replica shares it: one statement takes the start if the next one is due at `now` and moves the next
     * one on. Two replicas taking at once are serialized by the row (the second sees the first's `rate_next_ms`).
     */
    const take = SqlSchema.findAll({
      Request: Schema.Struct({ id: Schema.String, now: Schema.Number, from: Schema.Number }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ from, id, now }) =>
        sql`UPDATE webhooks SET rate_next_ms = ${from} + ${step}
            WHERE id = ${id} AND rate_limit IS NOT NULL AND (rate_next_ms IS NULL OR rate_next_ms <= ${now})
            RETURNING id`
    })

    const paceOf = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ rate_limit: Schema.NullOr(Schema.Number), rate_next_ms: Schema.NullOr(Schema.Number) }),
      execute: (id) => sql`SELECT rate_limit, rate_next_ms FROM webhooks WHERE id = ${id}`
    })

    /**
     * Takes a start for an attempt to webhook `id` at `now` (milliseconds since the epoch) if its pace allows one:
     * one statement when it does; when it does not, a second one reads when it will. A `cold` start (see
     * `COLD_START_MS`) holds its place longer.
     */
    const takeStart = (id: string, now: number, cold: boolean): Effect.Effect<Pace, never> =>
      Effect.flatMap(take({ id, now, from: cold ? now + COLD_START_MS : now }), (taken) =>
        taken.length > 0
          ? Effect.succeed(START)
          : Effect.map(
              paceOf(id),
              ([row]): Pace =>
                row === undefined || row.rate_limit === null || row.rate_next_ms === null
                  ? FREE
                  : { _tag: "Wait", at: row.rate_next_ms }
            )
      ).pipe(Effect.orDie)

    return { nextDueAfter, takeStart } as const
  })
}) {}
