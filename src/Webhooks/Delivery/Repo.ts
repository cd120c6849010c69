/**
 * The worker's own read beside `WebhooksRepo`'s claims and the recorder's settlements (src/Webhooks/Recorder.ts):
 * when it should look next. Rows decoded with `SqlSchema`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Option, Schema } from "effect"

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
     * index). Claimed ones are some process's already; a lease that lapses is found by the poll.
     */
    const nextDueAfter = (now: string) =>
      Effect.map(nextDue(now), (row) => Option.flatMap(row, ({ due }) => Option.fromNullable(due)))

    return { nextDueAfter } as const
  })
}) {}
