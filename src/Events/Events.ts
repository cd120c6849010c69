/**
 * The transactional outbox. `emit` writes an event and one pending delivery per subscribed webhook inside the
 * caller's transaction; `transaction` runs a change with its events and, if it queued a delivery, wakes the
 * delivery worker once the transaction has committed, so new deliveries start within milliseconds rather than at
 * the next poll.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, FiberRef, Option, Queue, Schema } from "effect"
import type { EventType } from "../Domain/EventTypes.js"
import { makeId } from "../Domain/Ids.js"
import { nowIso } from "../Domain/Time.js"
import { traceparentOf } from "../Observability/TraceContext.js"

/** A doorbell: one pending ring is enough, however many commits happen before the worker looks. */
export class DeliveryDoorbell extends Effect.Service<DeliveryDoorbell>()("DeliveryDoorbell", {
  effect: Effect.map(Queue.sliding<void>(1), (bell) => ({
    ring: Queue.offer(bell, undefined).pipe(Effect.asVoid),
    wait: Queue.take(bell)
  }))
}) {}

export interface EventEnvelope {
  readonly id: string
  readonly type: EventType
  readonly created_at: string
  readonly data: unknown
}

/**
 * Whether the transaction being run queued a delivery: only then is the worker woken after the commit (waking it
 * for every change costs it a claim and a look at the schedule, two statements on the one SQLite connection).
 */
const queuedDelivery = FiberRef.unsafeMake(false)

/** A webhook's subscription: `events` is JSON text, a list of event type names. */
const Subscription = Schema.Struct({ id: Schema.String, events: Schema.parseJson(Schema.Array(Schema.String)) })

export class Events extends Effect.Service<Events>()("Events", {
  dependencies: [DeliveryDoorbell.Default],
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const doorbell = yield* DeliveryDoorbell
    const subscriptionsOf = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: Subscription,
      execute: (recipients) => sql`SELECT id, events FROM webhooks WHERE user_id IN ${sql.in(recipients)}`
    })

    /**
     * Records `type` about a resource owned by `recipients` (user ids) and queues a delivery to each of their
     * webhooks subscribed to it. Must run inside the transaction of the change it describes.
     */
    const emit = Effect.fn("Events.emit", { captureStackTrace: false })(function* (
      type: EventType,
      recipients: ReadonlyArray<string>,
      data: unknown
    ) {
      const now = nowIso()
      const event: EventEnvelope = { id: makeId("event"), type, created_at: now, data }
      // Kept with the event so each delivery attempt joins the trace of the request that caused it.
      const span = yield* Effect.option(Effect.currentSpan)
      yield* sql`INSERT INTO events ${sql.insert({
        id: event.id,
        type,
        payload: JSON.stringify(event),
        trace_context: Option.getOrNull(Option.flatMap(span, traceparentOf)),
        created_at: now
      })}`
      if (recipients.length === 0) return event
      const hooks = yield* subscriptionsOf(recipients).pipe(Effect.catchTag("ParseError", Effect.die))
      const subscribed = hooks.filter((hook) => hook.events.includes(type))
      if (subscribed.length > 0) {
        yield* sql`INSERT INTO deliveries ${sql.insert(
          subscribed.map((hook) => ({
            id: makeId("delivery"),
            webhook_id: hook.id,
            event_id: event.id,
            event_type: type,
            status: "pending",
            attempt_count: 0,
            manual: 0,
            next_attempt_at: now,
            last_attempt_at: null,
            claimed_until: null,
            created_at: now
          }))
        )}`
        yield* FiberRef.set(queuedDelivery, true)
      }
      return event
    })

    /** Runs a change and the events it emits in one transaction, then wakes the delivery worker if it has work. */
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      sql.withTransaction(change).pipe(
        Effect.tap(() =>
          Effect.flatMap(FiberRef.get(queuedDelivery), (queued) => (queued ? doorbell.ring : Effect.void))
        ),
        Effect.locally(queuedDelivery, false)
      )

    return { emit, transaction, wake: doorbell.ring } as const
  })
}) {}
