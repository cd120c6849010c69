/**
 * The transactional outbox, the one way every feature records what happened. `transaction(change)` runs a change
 * and the events it emits in one database transaction; `emit(type, audience, data)`, inside it, writes the event,
 * its audience (the users who hear about it, read back by the events feed) and one pending delivery per webhook of
 * the audience subscribed to the type. Nothing is written unless the change commits, and nothing the change
 * commits lacks its event.
 *
 * Deliveries this process has room for (the DeliveryInbox) are claimed as they are written and handed to the
 * inbox once the transaction has committed, so their first attempt starts at once, without a claim query; the
 * rest are written unclaimed and the worker is rung to claim them. A transaction that fails hands nothing over and
 * gives its room back.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Context, Effect, Exit, Option, Schema } from "effect"
import { catalogueEntry } from "../Domain/EventCatalogue.js"
import type { EventType } from "../Domain/EventTypes.js"
import { DeliveryId, EventId, makeId, WebhookId } from "../Domain/Ids.js"
import { nowIso } from "../Domain/Time.js"
import { type ClaimedDelivery, TEST_EVENT, WebhookSignature, WebhookStatus } from "../Domain/Webhook.js"
import { currentTraceparent } from "../Observability/TraceContext.js"
import { traced } from "../Observability/Traced.js"
import { DeliveryInbox } from "./Inbox.js"

/** What an event can be: one of the subscribable types, or a webhook's test event (delivered to that webhook only). */
export type RecordedType = EventType | typeof TEST_EVENT

export interface EventEnvelope {
  readonly id: string
  readonly type: RecordedType
  readonly created_at: string
  readonly data: unknown
}

/** An event as written: its envelope, the envelope's JSON (the bytes every delivery sends) and its trace. */
export interface RecordedEvent {
  readonly id: EventId
  readonly type: RecordedType
  readonly createdAt: string
  readonly envelope: EventEnvelope
  readonly payload: string
  readonly traceContext: string | null
}

/** A webhook an event is delivered to. */
export const Subscriber = Schema.Struct({
  id: WebhookId,
  url: Schema.String,
  signature: WebhookSignature,
  /** As stored (encrypted): the delivery worker decrypts it (src/Secrets/KeyRing.ts). */
  secret: Schema.String,
  /** The secret rotated out, which signs too until `previous_secret_expires_at`. */
  previous_secret: Schema.NullOr(Schema.String),
  previous_secret_expires_at: Schema.NullOr(Schema.String),
  status: WebhookStatus
})
export type Subscriber = typeof Subscriber.Type
const decodeSubscribers = Schema.decodeUnknown(Schema.Array(Subscriber))

/**
 * What one `transaction` has claimed for this process. Room is counted as soon as it is reserved, so a statement
 * that fails afterwards still gives it back with the transaction. A nested `transaction` (a savepoint) keeps its
 * own claims and merges them into its parent's only when it succeeds, so a rolled-back savepoint hands nothing over.
 */
class Claims {
  reserved = 0
  readonly claimed: Array<ClaimedDelivery> = []
  unclaimed = false
  constructor(private readonly inbox: DeliveryInbox) {}

  /** Room for up to `count` deliveries; those it cannot claim are left for the worker. */
  reserve(count: number): number {
    const granted = this.inbox.reserve(count)
    this.reserved += granted
    if (granted < count) this.unclaimed = true
    return granted
  }

  mergeInto(parent: Claims): void {
    parent.reserved += this.reserved
    parent.claimed.push(...this.claimed)
    parent.unclaimed ||= this.unclaimed
  }
}

/** The claims of the `transaction` being run, when there is one. */
class CurrentClaims extends Context.Tag("Events/CurrentClaims")<CurrentClaims, Claims>() {}

export class Events extends Effect.Service<Events>()("Events", {
  dependencies: [DeliveryInbox.Default],
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const inbox = yield* DeliveryInbox
    /** What a delivery's attempt needs of its webhook (the `Subscriber` fields). */
    const subscriberColumns = sql.literal(
      "id, url, signature, secret, previous_secret, previous_secret_expires_at, status"
    )

    /** A webhook's `events` (JSON text, a list of type names) holds `type`. */
    const subscribesTo = (type: EventType) =>
      sql.onDialectOrElse({
        pg: () => sql`events::jsonb ? ${type}`,
        orElse: () => sql`EXISTS (SELECT 1 FROM json_each(events) WHERE value = ${type})`
      })

    /** The webhooks of `audience` subscribed to `type`. */
    const subscribersOf = (type: EventType, audience: ReadonlyArray<string>) =>
      audience.length === 0
        ? Effect.succeed([])
        : Effect.flatMap(
            sql`SELECT ${subscriberColumns} FROM webhooks
                WHERE user_id IN ${sql.in(audience)} AND ${subscribesTo(type)} AND disabled_at IS NULL`,
            (rows) => Effect.orDie(decodeSubscribers(rows))
          )

    /** A new event: its envelope's JSON is the payload every delivery of it sends, byte for byte. */
    const makeEvent = (type: RecordedType, data: unknown) =>
      Effect.map(currentTraceparent, (traceparent): RecordedEvent => {
        const createdAt = nowIso()
        const id = EventId.make(makeId("event"))
        const envelope: EventEnvelope = { id, type, created_at: createdAt, data }
        // Kept with the event so each delivery attempt joins the trace of the request that caused it.
        const traceContext = Option.getOrNull(traceparent)
        return { id, type, createdAt, envelope, payload: JSON.stringify(envelope), traceContext }
      })

    /**
     * An event's `data` encoded by the catalogue's schema for its type (src/Domain/EventCatalogue.ts), the one
     * `GET /v1/event-types` publishes; data that does not match it is a defect.
     */
    const encodeData = (type: RecordedType, data: unknown) => Effect.orDie(catalogueEntry(type).encode(data))

    /**
     * A pending delivery of `event` to each of `hooks`, claimed for this process as far as the current
     * transaction's claims have room (none outside `transaction`: there is no commit to hand them over after).
     * Answers the rows to write and what the inbox needs for each claimed one, to hand over after the commit.
     */
    const deliveriesOf = (event: RecordedEvent, hooks: ReadonlyArray<Subscriber>, claims: Option.Option<Claims>) => {
      const claiming = Option.isSome(claims) && hooks.length > 0 ? claims.value.reserve(hooks.length) : 0
      const claimToken = crypto.randomUUID()
      const claimedUntil = new Date(Date.parse(event.createdAt) + inbox.lease()).toISOString()
      const handed: Array<ClaimedDelivery> = []
      const rows = hooks.map((hook, i) => {
        const id = DeliveryId.make(makeId("delivery"))
        const claimed = i < claiming
        if (claimed) {
          handed.push({
            id,
            webhook_id: hook.id,
            event_id: event.id,
            event_type: event.type,
            attempt_count: 0,
            attempts_made: 0,
            status: "pending",
            manual: 0,
            next_attempt_at: event.createdAt,
            url: hook.url,
            signature: hook.signature,
            secret: hook.secret,
            previous_secret: hook.previous_secret,
            previous_secret_expires_at: hook.previous_secret_expires_at,
            webhook_status: hook.status,
            payload: event.payload,
            trace_context: event.traceContext,
            claim_token: claimToken
          })
        }
        return {
          id,
          webhook_id: hook.id,
          event_id: event.id,
          event_type: event.type,
          status: "pending",
          attempt_count: 0,
          manual: 0,
          next_attempt_at: event.createdAt,
          last_attempt_at: null,
          claimed_until: claimed ? claimedUntil : null,
          claim_token: claimed ? claimToken : null,
          created_at: event.createdAt
        }
      })
      return { rows, handed }
    }

    /**
     * Inserts that must land together, in order: on PostgreSQL one statement (the first ones as data-modifying
     * CTEs; foreign keys between them are checked at the statement's end), one round trip for all; SQLite has no
     * INSERT in WITH, and no round trip to save, so there they run one after the other.
     */
    const writeTogether = (inserts: ReadonlyArray<Fragment>) =>
      sql.onDialectOrElse({
        pg: () => {
          const last = inserts[inserts.length - 1]
          if (last === undefined) return Effect.void
          const ctes = inserts.slice(0, -1).map((insert, i) => sql`${sql(`w${i}`)} AS (${insert})`)
          return Effect.asVoid(ctes.length === 0 ? sql`${last}` : sql`WITH ${sql.csv(ctes)} ${last}`)
        },
        orElse: () => Effect.forEach(inserts, (insert) => sql`${insert}`, { discard: true })
      })

    /**
     * Writes `event`, its audience (the feed's record of who heard about it: written now, never recomputed from
     * later memberships) and a delivery to each of `hooks`, together; answers the deliveries' ids.
     */
    const write = Effect.fnUntraced(function* (
      event: RecordedEvent,
      audience: ReadonlyArray<string>,
      hooks: ReadonlyArray<Subscriber>
    ) {
      const claims = yield* Effect.serviceOption(CurrentClaims)
      const { handed, rows } = deliveriesOf(event, hooks, claims)
      yield* writeTogether([
        sql`INSERT INTO events ${sql.insert({
          id: event.id,
          type: event.type,
          payload: event.payload,
          trace_context: event.traceContext,
          created_at: event.createdAt
        })}`,
        ...(audience.length === 0
          ? []
          : [
              sql`INSERT INTO event_audience ${sql.insert(
                audience.map((user_id) => ({
                  user_id,
                  event_id: event.id,
                  type: event.type,
                  created_at: event.createdAt
                }))
              )}`
            ]),
        ...(rows.length === 0 ? [] : [sql`INSERT INTO deliveries ${sql.insert(rows)}`])
      ])
      if (Option.isSome(claims)) claims.value.claimed.push(...handed)
      return rows.map((row) => row.id)
    })

    /**
     * Records `type` about a resource whose audience is `audience` (user ids: who hears about it, see
     * docs/events.md), stores that audience for the events feed and queues a delivery to each of their webhooks
     * subscribed to it. Must run inside the transaction of the change it describes (`transaction`).
     */
    const emit = traced("Events.emit")(function* (type: EventType, audience: ReadonlyArray<string>, data: unknown) {
      const event = yield* makeEvent(type, yield* encodeData(type, data))
      const users = Array.from(new Set(audience))
      yield* write(event, users, yield* subscribersOf(type, users))
      return event.envelope
    })

    /**
     * Runs a change and the events it emits in one transaction. Once it has committed, the deliveries it claimed go
     * to the inbox and the worker is rung if some were left unclaimed; if it fails, their room is given back (the
     * rows were rolled back with it). Nested in another `transaction`, its claims join the outer one's when it
     * succeeds; nested in a transaction not made here, it claims nothing and rings the worker.
     */
    const transaction = Effect.fnUntraced(function* <A, E, R>(change: Effect.Effect<A, E, R>) {
      const outer = yield* Effect.serviceOption(CurrentClaims)
      const inForeign =
        Option.isNone(outer) && Option.isSome(yield* Effect.serviceOption(SqlClient.TransactionConnection))
      if (inForeign) return yield* Effect.zipLeft(sql.withTransaction(change), inbox.ring)
      const claims = new Claims(inbox)
      return yield* sql.withTransaction(Effect.provideService(change, CurrentClaims, claims)).pipe(
        Effect.onExit((exit) => {
          if (Exit.isFailure(exit)) return inbox.release(claims.reserved)
          if (Option.isSome(outer)) return Effect.sync(() => claims.mergeInto(outer.value))
          return Effect.zipRight(inbox.hand(claims.claimed), claims.unclaimed ? inbox.ring : Effect.void)
        })
      )
    })

    /**
     * A `webhook.test` event for the webhook `id` alone, whatever its `events` (the type cannot be subscribed to),
     * with its one delivery, in a transaction of its own. It has no audience, so it is in no one's events feed.
     * Answers the delivery's id (none when the webhook is gone).
     */
    const emitTest = Effect.fnUntraced(function* (id: WebhookId) {
      const hooks = yield* Effect.flatMap(sql`SELECT ${subscriberColumns} FROM webhooks WHERE id = ${id}`, (rows) =>
        Effect.orDie(decodeSubscribers(rows))
      )
      const data = yield* encodeData(TEST_EVENT, { webhook_id: id })
      const [delivery] = yield* write(yield* makeEvent(TEST_EVENT, data), [], hooks)
      return Option.fromNullable(delivery)
    }, transaction)

    return { emit, emitTest, transaction, wake: inbox.ring } as const
  })
}) {}
