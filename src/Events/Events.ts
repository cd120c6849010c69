/**
 * The transactional outbox. `emit` writes an event and one pending delivery per subscribed webhook inside the
 * caller's transaction; `transaction` runs a change with its events. Deliveries this process has room for are
 * claimed as they are written and handed to the delivery worker's inbox once the transaction has committed, so
 * their first attempt starts at once, without a claim query; the rest are written unclaimed and the worker is
 * woken to claim them when it has room. A transaction that fails hands nothing over and gives its room back.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit, FiberRef, Option, Schema } from "effect"
import type { EventType } from "../Domain/EventTypes.js"
import { DeliveryId, EventId, makeId, WebhookId } from "../Domain/Ids.js"
import { nowIso } from "../Domain/Time.js"
import { type ClaimedDelivery, WebhookStatus } from "../Domain/Webhook.js"
import { traceparentOf } from "../Observability/TraceContext.js"
import { traced } from "../Observability/Traced.js"
import { DeliveryInbox } from "./Inbox.js"

export interface EventEnvelope {
  readonly id: string
  readonly type: EventType
  readonly created_at: string
  readonly data: unknown
}

/** What the transaction being run has claimed for this process, and whether it left deliveries unclaimed. */
interface Outbox {
  reserved: number
  readonly claimed: Array<ClaimedDelivery>
  unclaimed: boolean
}
const currentOutbox = FiberRef.unsafeMake<Outbox | null>(null)

/** A webhook's subscription: `events` is JSON text, a list of event type names. */
const Subscription = Schema.Struct({
  id: WebhookId,
  url: Schema.String,
  secret: Schema.String,
  status: WebhookStatus,
  events: Schema.parseJson(Schema.Array(Schema.String))
})

export class Events extends Effect.Service<Events>()("Events", {
  dependencies: [DeliveryInbox.Default],
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const inbox = yield* DeliveryInbox
    const oneStatement = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    const subscriptionsOf = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: Subscription,
      execute: (recipients) =>
        sql`SELECT id, url, secret, status, events FROM webhooks WHERE user_id IN ${sql.in(recipients)}`
    })

    /**
     * Records `type` about a resource owned by `recipients` (user ids) and queues a delivery to each of their
     * webhooks subscribed to it. Must run inside the transaction of the change it describes.
     */
    const emit = traced("Events.emit")(function* (type: EventType, recipients: ReadonlyArray<string>, data: unknown) {
      const now = nowIso()
      const event: EventEnvelope = { id: makeId("event"), type, created_at: now, data }
      // Kept with the event so each delivery attempt joins the trace of the request that caused it.
      const span = yield* Effect.option(Effect.currentSpan)
      const traceContext = Option.getOrNull(Option.flatMap(span, traceparentOf))
      const payload = JSON.stringify(event)
      const insertEvent = sql`INSERT INTO events ${sql.insert({
        id: event.id,
        type,
        payload,
        trace_context: traceContext,
        created_at: now
      })}`
      const hooks =
        recipients.length === 0
          ? []
          : yield* subscriptionsOf(recipients).pipe(Effect.catchTag("ParseError", Effect.die))
      const subscribed = hooks.filter((hook) => hook.events.includes(type))
      if (subscribed.length === 0) {
        yield* insertEvent
        return event
      }
      // Outside `transaction` nothing is claimed: there would be no commit to hand the claims over after.
      const outbox = yield* FiberRef.get(currentOutbox)
      const claiming = outbox === null ? 0 : inbox.reserve(subscribed.length)
      const claimToken = crypto.randomUUID()
      const claimedUntil = new Date(Date.parse(now) + inbox.lease()).toISOString()
      const eventId = EventId.make(event.id)
      // Each delivery as written, and as handed to the worker when this process claims it.
      const deliveries = subscribed.map((hook, i) => {
        const id = DeliveryId.make(makeId("delivery"))
        const claimed = i < claiming
        return {
          row: {
            id,
            webhook_id: hook.id,
            event_id: eventId,
            event_type: type,
            status: "pending",
            attempt_count: 0,
            manual: 0,
            next_attempt_at: now,
            last_attempt_at: null,
            claimed_until: claimed ? claimedUntil : null,
            claim_token: claimed ? claimToken : null,
            created_at: now
          },
          handed: claimed
            ? {
                id,
                webhook_id: hook.id,
                event_id: eventId,
                event_type: type,
                attempt_count: 0,
                manual: 0,
                next_attempt_at: now,
                url: hook.url,
                secret: hook.secret,
                webhook_status: hook.status,
                payload,
                trace_context: traceContext,
                claim_token: claimToken
              }
            : undefined
        }
      })
      const insertDeliveries = sql`INSERT INTO deliveries ${sql.insert(deliveries.map((delivery) => delivery.row))}`
      // On PostgreSQL the event and its deliveries are one statement (one round trip fewer per event; the foreign
      // key is checked at the statement's end, when both are written); SQLite has no INSERT in WITH, and no trip.
      if (oneStatement) yield* sql`WITH event AS (${insertEvent}) ${insertDeliveries}`
      else yield* Effect.zipRight(insertEvent, insertDeliveries)
      if (outbox !== null) {
        outbox.reserved += claiming
        outbox.unclaimed ||= claiming < subscribed.length
        for (const { handed } of deliveries) if (handed !== undefined) outbox.claimed.push(handed)
      }
      return event
    })

    /**
     * Runs a change and the events it emits in one transaction. Once it has committed, the deliveries it claimed go
     * to the inbox and the worker is woken if some were left unclaimed; if it fails, their room is given back (the
     * rows were rolled back with it). Nested in another transaction, it claims nothing (see below).
     */
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) => {
        // Inside another transaction this one only makes a savepoint: its commit is not the commit, so nothing is
        // claimed here (the deliveries are written unclaimed, and the worker is woken to claim them).
        if (Option.isSome(outer)) {
          return sql.withTransaction(change).pipe(
            Effect.locally(currentOutbox, null),
            Effect.tap(() => inbox.ring)
          )
        }
        const outbox: Outbox = { reserved: 0, claimed: [], unclaimed: false }
        return sql.withTransaction(change).pipe(
          Effect.locally(currentOutbox, outbox),
          Effect.onExit((exit) =>
            Effect.gen(function* () {
              if (Exit.isSuccess(exit)) {
                yield* inbox.hand(outbox.claimed)
                if (outbox.unclaimed) yield* inbox.ring
              } else {
                yield* inbox.release(outbox.reserved)
              }
            })
          )
        )
      })

    return { emit, transaction, wake: inbox.ring } as const
  })
}) {}
