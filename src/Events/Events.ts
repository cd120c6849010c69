/**
 * The transactional outbox. `emit` writes an event and one pending delivery per subscribed webhook inside the
 * caller's transaction; `transaction` runs a change with its events. Deliveries this process has room for are
 * claimed as they are written and handed to the delivery worker's inbox once the transaction has committed, so
 * their first attempt starts at once, without a claim query; the rest are written unclaimed and the worker is
 * woken to claim them when it has room. A transaction that fails hands nothing over and gives its room back.
 * `write` is the same for a change that is one statement (a create): on PostgreSQL the change, the subscriptions
 * read, the event and its deliveries are then one statement. The statements are fixed text (src/Sql/Direct.ts).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit, FiberRef, Option, Schema } from "effect"
import type { EventType } from "../Domain/EventTypes.js"
import { DeliveryId, EventId, makeId, WebhookId } from "../Domain/Ids.js"
import { nowIso } from "../Domain/Time.js"
import { type ClaimedDelivery, WebhookStatus } from "../Domain/Webhook.js"
import { traceparentOf } from "../Observability/TraceContext.js"
import { traced } from "../Observability/Traced.js"
import { type Change, makeDirect, type Param } from "../Sql/Direct.js"
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

/** A webhook subscribed to the event being written (the subscription is matched in SQL). */
const Subscription = Schema.Struct({
  id: WebhookId,
  url: Schema.String,
  secret: Schema.String,
  previous_secret: Schema.NullOr(Schema.String),
  previous_secret_expires_at: Schema.NullOr(Schema.String),
  status: WebhookStatus
})
const decodeSubscriptions = Schema.decodeUnknownSync(Schema.Array(Subscription))

/** A delivery the one-statement write made, with its webhook (PostgreSQL). */
const Written = Schema.Struct({
  id: DeliveryId,
  webhook_id: WebhookId,
  url: Schema.String,
  secret: Schema.String,
  previous_secret: Schema.NullOr(Schema.String),
  previous_secret_expires_at: Schema.NullOr(Schema.String),
  status: WebhookStatus,
  claim_token: Schema.NullOr(Schema.String)
})
const decodeWritten = Schema.decodeUnknownSync(Schema.Array(Written))

/** A new event's delivery to `hook`, claimed with `claimToken`: what the inbox needs for its first attempt. */
const firstAttempt = (
  event: {
    readonly id: ClaimedDelivery["event_id"]
    readonly type: EventType
    readonly now: string
    readonly payload: string
    readonly traceContext: string | null
  },
  id: ClaimedDelivery["id"],
  hook: typeof Subscription.Type,
  claimToken: string
): ClaimedDelivery => ({
  id,
  webhook_id: hook.id,
  event_id: event.id,
  event_type: event.type,
  attempt_count: 0,
  manual: 0,
  next_attempt_at: event.now,
  url: hook.url,
  secret: hook.secret,
  previous_secret: hook.previous_secret,
  previous_secret_expires_at: hook.previous_secret_expires_at,
  webhook_status: hook.status,
  payload: event.payload,
  trace_context: event.traceContext,
  claim_token: claimToken
})

const DELIVERY_COLUMNS =
  "id, webhook_id, event_id, event_type, status, attempt_count, manual, next_attempt_at, last_attempt_at, claimed_until, claim_token, created_at"

/** How many webhooks the last event to a set of recipients went to, for the next one's claim (bounded). */
const GUESSES = 10_000

export class Events extends Effect.Service<Events>()("Events", {
  dependencies: [DeliveryInbox.Default],
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const inbox = yield* DeliveryInbox
    const direct = makeDirect(sql)
    const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    const p = direct.placeholder
    // Subscribed: the webhook's `events` (JSON text, a list of type names) holds the type.
    const subscribes = (n: number) =>
      pg ? `events::jsonb ? ${p(n)}` : `EXISTS (SELECT 1 FROM json_each(events) WHERE value = ${p(n)})`
    const list = (count: number, first: number) => Array.from({ length: count }, (_, i) => p(first + i)).join(", ")

    /** The webhooks of `recipients` subscribed to `type`. */
    const subscriptionsOf = (type: EventType, recipients: ReadonlyArray<string>) =>
      Effect.map(
        direct.run(
          direct.text(
            `subscriptions ${recipients.length}`,
            () =>
              `SELECT id, url, secret, previous_secret, previous_secret_expires_at, status FROM webhooks WHERE user_id IN (${list(recipients.length, 1)}) AND ${subscribes(recipients.length + 1)}`
          ),
          [...recipients, type]
        ),
        decodeSubscriptions
      )

    const EVENT_INSERT = `INSERT INTO events (id, type, payload, trace_context, created_at) VALUES ${direct.values(1, 5)}`

    /** The event as recorded: its envelope (sent as the payload) and where its trace continues. */
    const makeEvent = (type: EventType, data: unknown) =>
      Effect.map(Effect.option(Effect.currentSpan), (span) => {
        const now = nowIso()
        const event: EventEnvelope = { id: makeId("event"), type, created_at: now, data }
        // Kept with the event so each delivery attempt joins the trace of the request that caused it.
        const traceContext = Option.getOrNull(Option.flatMap(span, traceparentOf))
        return { event, now, traceContext, payload: JSON.stringify(event) }
      })

    /**
     * Records `type` about a resource owned by `recipients` (user ids) and queues a delivery to each of their
     * webhooks subscribed to it. Must run inside the transaction of the change it describes.
     */
    const emit = traced("Events.emit")(function* (type: EventType, recipients: ReadonlyArray<string>, data: unknown) {
      const { event, now, payload, traceContext } = yield* makeEvent(type, data)
      const eventRow = [event.id, type, payload, traceContext, now]
      const subscribed = recipients.length === 0 ? [] : yield* subscriptionsOf(type, recipients)
      if (subscribed.length === 0) {
        yield* direct.run(EVENT_INSERT, eventRow)
        return event
      }
      // Outside `transaction` nothing is claimed: there would be no commit to hand the claims over after.
      const outbox = yield* FiberRef.get(currentOutbox)
      const claiming = outbox === null ? 0 : inbox.reserve(subscribed.length)
      // Counted at once: if a statement below fails, the transaction's failure gives this room back.
      if (outbox !== null) outbox.reserved += claiming
      const claimToken = crypto.randomUUID()
      const claimedUntil = new Date(Date.parse(now) + inbox.lease()).toISOString()
      const eventId = EventId.make(event.id, true)
      const params: Array<Param> = []
      const handed: Array<ClaimedDelivery> = []
      subscribed.forEach((hook, i) => {
        const id = DeliveryId.make(makeId("delivery"), true)
        const claimed = i < claiming
        params.push(id, hook.id, eventId, type, "pending", 0, 0, now, null)
        params.push(claimed ? claimedUntil : null, claimed ? claimToken : null, now)
        if (claimed) {
          handed.push(firstAttempt({ id: eventId, type, now, payload, traceContext }, id, hook, claimToken))
        }
      })
      // On PostgreSQL the event and its deliveries are one statement (one round trip fewer per event; the foreign
      // key is checked at the statement's end, when both are written); SQLite has no INSERT in WITH, and no trip.
      const count = subscribed.length
      if (pg) {
        yield* direct.run(
          direct.text(
            `event+deliveries ${count}`,
            () =>
              `WITH event AS (${EVENT_INSERT}) INSERT INTO deliveries (${DELIVERY_COLUMNS}) VALUES ${direct.values(count, 12, 6)}`
          ),
          [...eventRow, ...params]
        )
      } else {
        yield* direct.run(EVENT_INSERT, eventRow)
        yield* direct.run(
          direct.text(
            `deliveries ${count}`,
            () => `INSERT INTO deliveries (${DELIVERY_COLUMNS}) VALUES ${direct.values(count, 12)}`
          ),
          params
        )
      }
      if (outbox !== null) {
        outbox.claimed.push(...handed)
        outbox.unclaimed ||= claiming < count
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

    /** How many webhooks the last event to a set of recipients went to: what the next one claims (PostgreSQL). */
    const lastCount = new Map<string, number>()

    /** The one statement of `write` on PostgreSQL, for a change of `changeText` and `recipients` recipients. */
    const writeText = (changeText: string, changeParams: number, recipients: number) =>
      direct.text(`write ${recipients} ${changeParams} ${changeText}`, () => {
        let n = changeParams
        const at = () => p(++n)
        const type = at()
        const audience = recipients === 0 ? "FALSE" : `user_id IN (${list(recipients, n + 1)})`
        n += recipients
        const id = at()
        const payload = at()
        const trace = at()
        const now = at()
        const prefix = at()
        const claiming = at()
        const until = at()
        const token = at()
        const claimed = (value: string) =>
          `CASE WHEN hooks.n <= CAST(${claiming} AS INTEGER) THEN CAST(${value} AS TEXT) END`
        return `WITH change AS (${changeText}),
          hooks AS (
            SELECT id, url, secret, previous_secret, previous_secret_expires_at, status, row_number() OVER (ORDER BY id) AS n
            FROM webhooks WHERE ${audience} AND events::jsonb ? CAST(${type} AS TEXT)
          ),
          event AS (
            INSERT INTO events (id, type, payload, trace_context, created_at) VALUES (${id}, ${type}, ${payload}, ${trace}, ${now})
          ),
          delivered AS (
            INSERT INTO deliveries (${DELIVERY_COLUMNS})
            SELECT 'dlv_' || CAST(${prefix} AS TEXT) || left(md5(CAST(${id} AS TEXT) || hooks.id), 10), hooks.id, ${id}, ${type},
                   'pending', 0, 0, ${now}, NULL, ${claimed(until)}, ${claimed(token)}, ${now}
            FROM hooks
            RETURNING id, webhook_id, claim_token
          )
          SELECT delivered.id, delivered.webhook_id, hooks.url, hooks.secret, hooks.previous_secret,
                 hooks.previous_secret_expires_at, hooks.status, delivered.claim_token
          FROM delivered JOIN hooks ON hooks.id = delivered.webhook_id`
      })

    /**
     * A change that is one statement and its event (`type` about `data`, to `recipients`), written together. On
     * PostgreSQL as one statement — the change, the subscriptions read, the event and its deliveries as CTEs — so
     * atomic without a transaction, in one round trip where the change, the read, the event with its deliveries,
     * BEGIN and COMMIT took five. Its delivery ids are made there: the event id's first 16 characters (its time) and
     * 10 of the hash of the event and webhook ids, so still `dlv_` + 26 base32 characters in time order. It claims
     * as many deliveries as the last event to the same recipients had (it cannot know before); the rest are left
     * for the worker's claim. Elsewhere (SQLite) the change and `emit`, in `transaction`.
     */
    const write = (change: Change, type: EventType, recipients: ReadonlyArray<string>, data: unknown) => {
      if (!pg) return transaction(Effect.zipRight(direct.change(change), emit(type, recipients, data)))
      return Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (outer) =>
        // The room reserved, the statement and the hand-over as one step: interrupted in between (a client gone
        // mid-request), the room would be lost, or the deliveries claimed held by no one until their lease lapsed.
        Effect.uninterruptible(
          Effect.flatMap(makeEvent(type, data), ({ event, now, payload, traceContext }) => {
            const key = recipients.join(" ")
            // Inside another transaction its commit is not this statement's: claim nothing, as `transaction` does.
            const claiming = Option.isSome(outer) ? 0 : inbox.reserve(lastCount.get(key) ?? 0)
            const claimToken = crypto.randomUUID()
            const claimedUntil = new Date(Date.parse(now) + inbox.lease()).toISOString()
            const eventId = EventId.make(event.id, true)
            const params: ReadonlyArray<Param> = [
              ...change.params,
              type,
              ...recipients,
              eventId,
              payload,
              traceContext,
              now,
              event.id.slice(4, 20),
              claiming,
              claimedUntil,
              claimToken
            ]
            const text = writeText(change.text(1), change.params.length, recipients.length)
            return direct.run(text, params).pipe(
              Effect.map(decodeWritten),
              Effect.onError(() => inbox.release(claiming)),
              Effect.flatMap((written) => {
                if (lastCount.size >= GUESSES) lastCount.clear()
                lastCount.set(key, written.length)
                const handed: Array<ClaimedDelivery> = []
                for (const row of written) {
                  if (row.claim_token === null) continue
                  handed.push(
                    firstAttempt(
                      { id: eventId, type, now, payload, traceContext },
                      row.id,
                      {
                        id: row.webhook_id,
                        url: row.url,
                        secret: row.secret,
                        previous_secret: row.previous_secret,
                        previous_secret_expires_at: row.previous_secret_expires_at,
                        status: row.status
                      },
                      row.claim_token
                    )
                  )
                }
                return Effect.zipRight(
                  Effect.zipRight(inbox.hand(handed), inbox.release(claiming - handed.length)),
                  handed.length < written.length ? Effect.as(inbox.ring, event) : Effect.succeed(event)
                )
              })
            )
          })
        )
      )
    }

    return { emit, write, transaction, wake: inbox.ring } as const
  })
}) {}

/**
 * A `webhook.test` event for one webhook, whatever its `events` (the type cannot be subscribed to), with its one
 * delivery, written unclaimed: the caller wakes the worker once this has committed. It has no audience, so it is
 * in no one's events feed. Run it in a transaction: the event and its delivery are written together or not at all.
 */
export const writeTestEvent = (webhookId: WebhookId) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const span = yield* Effect.option(Effect.currentSpan)
    const now = nowIso()
    const id = EventId.make(makeId("event"), true)
    const event = { id, type: "webhook.test", created_at: now, data: { webhook_id: webhookId } }
    const deliveryId = DeliveryId.make(makeId("delivery"), true)
    yield* sql`INSERT INTO events ${sql.insert({
      id,
      type: event.type,
      payload: JSON.stringify(event),
      trace_context: Option.getOrNull(Option.flatMap(span, traceparentOf)),
      created_at: now
    })}`
    yield* sql`INSERT INTO deliveries ${sql.insert({
      id: deliveryId,
      webhook_id: webhookId,
      event_id: id,
      event_type: event.type,
      status: "pending",
      attempt_count: 0,
      manual: 0,
      next_attempt_at: now,
      created_at: now
    })}`
    return deliveryId
  })
