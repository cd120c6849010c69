/**
 * How the outbox writes one event (src/Events/Events.ts `emit`): the event, its audience (the users who hear about
 * it, read back by the events feed) and one pending delivery per webhook of the audience subscribed to its type,
 * in the transaction of the change it describes, the deliveries claimed for this process as far as the
 * transaction's `Claims` have room. One interface, `EventWriter`, two implementations, chosen once where `Events`
 * is built (FAST_PATHS `outbox-statement`, docs/fast-paths.md):
 *
 * - `idiomaticWriter` (every engine): reads the subscribed webhooks, then writes the event, its audience and the
 *   deliveries together (on PostgreSQL one statement of data-modifying CTEs; on SQLite one insert after another);
 * - `oneStatementWriter` (PostgreSQL only): the subscribers' read folded into that same statement, which writes a
 *   delivery for each of them and answers them, so an event is one statement, not two. The statement carries
 *   `CARRIED` delivery ids made here (the ids are made in one place, `makeId`, for every row); an event with more
 *   subscribers than that has the rest written by the idiomatic insert, in the same transaction.
 *
 * Both write the same rows and hand over the same claimed deliveries; test/projects/create-outbox.service.test.ts
 * runs on both.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option, Schema } from "effect"
import type { EventType } from "../Domain/EventTypes.js"
import { DeliveryId, type EventId, makeId, WebhookId } from "../Domain/Ids.js"
import { type ClaimedDelivery, type TEST_EVENT, WebhookStatus } from "../Domain/Webhook.js"
import type { DeliveryInbox } from "./Inbox.js"

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
  secret: Schema.String,
  /** The secret rotated out, which signs too until `previous_secret_expires_at`. */
  previous_secret: Schema.NullOr(Schema.String),
  previous_secret_expires_at: Schema.NullOr(Schema.String),
  status: WebhookStatus
})
export type Subscriber = typeof Subscriber.Type
const decodeSubscribers = Schema.decodeUnknown(Schema.Array(Subscriber))

/** A subscriber as the one statement answers it: its place in id order and the delivery written to it, if any. */
const Written = Schema.Struct({
  ...Subscriber.fields,
  n: Schema.Int,
  delivery_id: Schema.NullOr(DeliveryId)
})
const decodeWritten = Schema.decodeUnknown(Schema.Array(Written))

/**
 * What one `Events.transaction` has claimed for this process. Room is counted as soon as it is reserved, so a
 * statement that fails afterwards still gives it back with the transaction. A nested `transaction` (a savepoint)
 * keeps its own claims and merges them into its parent's only when it succeeds, so a rolled-back savepoint hands
 * nothing over.
 */
export class Claims {
  reserved = 0
  readonly claimed: Array<ClaimedDelivery> = []
  unclaimed = false
  constructor(private readonly inbox: DeliveryInbox) {}

  /** Room for up to `count` deliveries; those it cannot claim are left for the worker. */
  reserve(count: number): number {
    const granted = this.reserveUpTo(count)
    if (granted < count) this.unclaimed = true
    return granted
  }

  /** Room for up to `count` deliveries, before knowing how many there are: what is not used goes back (`giveBack`). */
  reserveUpTo(count: number): number {
    const granted = this.inbox.reserve(count)
    this.reserved += granted
    return granted
  }

  giveBack(count: number): Effect.Effect<void> {
    this.reserved -= count
    return this.inbox.release(count)
  }

  mergeInto(parent: Claims): void {
    parent.reserved += this.reserved
    parent.claimed.push(...this.claimed)
    parent.unclaimed ||= this.unclaimed
  }
}

export interface EventWriter {
  /**
   * Writes `event`, its audience (the feed's record of who heard about it: written now, never recomputed from later
   * memberships) and a pending delivery to each webhook of `audience` subscribed to its type, claiming what `claims`
   * has room for (none without: outside `transaction` there is no commit to hand them over after).
   */
  readonly write: (
    event: RecordedEvent & { readonly type: EventType },
    audience: ReadonlyArray<string>,
    claims: Option.Option<Claims>
  ) => Effect.Effect<void, SqlError>
  /** Writes `event` with a delivery to the webhook `id` alone and no audience; answers the delivery's id (none when the webhook is gone). */
  readonly writeTo: (
    event: RecordedEvent,
    id: WebhookId,
    claims: Option.Option<Claims>
  ) => Effect.Effect<Option.Option<DeliveryId>, SqlError>
}

/** What a delivery's attempt needs of its webhook (the `Subscriber` fields). */
const subscriberColumns = (sql: SqlClient.SqlClient) =>
  sql.literal("id, url, secret, previous_secret, previous_secret_expires_at, status")

/** What the inbox needs to attempt a claimed delivery at once. */
const claimedDelivery = (
  event: RecordedEvent,
  id: DeliveryId,
  hook: Subscriber,
  claimToken: string
): ClaimedDelivery => ({
  id,
  webhook_id: hook.id,
  event_id: event.id,
  event_type: event.type,
  attempt_count: 0,
  manual: 0,
  next_attempt_at: event.createdAt,
  url: hook.url,
  secret: hook.secret,
  previous_secret: hook.previous_secret,
  previous_secret_expires_at: hook.previous_secret_expires_at,
  webhook_status: hook.status,
  payload: event.payload,
  trace_context: event.traceContext,
  claim_token: claimToken
})

/** Until when a claim made now holds. */
const claimedUntil = (event: RecordedEvent, inbox: DeliveryInbox) =>
  new Date(Date.parse(event.createdAt) + inbox.lease()).toISOString()

const eventRow = (event: RecordedEvent) => ({
  id: event.id,
  type: event.type,
  payload: event.payload,
  trace_context: event.traceContext,
  created_at: event.createdAt
})

const audienceRows = (event: RecordedEvent, audience: ReadonlyArray<string>) =>
  audience.map((user_id) => ({ user_id, event_id: event.id, type: event.type, created_at: event.createdAt }))

/** The idiomatic implementation: the subscribers read, then the event, its audience and deliveries written. */
export const idiomaticWriter = (sql: SqlClient.SqlClient, inbox: DeliveryInbox) => {
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
          sql`SELECT ${subscriberColumns(sql)} FROM webhooks
              WHERE user_id IN ${sql.in(audience)} AND ${subscribesTo(type)}`,
          (rows) => Effect.orDie(decodeSubscribers(rows))
        )

  /**
   * A pending delivery of `event` to each of `hooks`, claimed for this process as far as `claims` have room.
   * Answers the rows to write and what the inbox needs for each claimed one, to hand over after the commit.
   */
  const deliveriesOf = (event: RecordedEvent, hooks: ReadonlyArray<Subscriber>, claims: Option.Option<Claims>) => {
    const claiming = Option.isSome(claims) && hooks.length > 0 ? claims.value.reserve(hooks.length) : 0
    const claimToken = crypto.randomUUID()
    const until = claimedUntil(event, inbox)
    const handed: Array<ClaimedDelivery> = []
    const rows = hooks.map((hook, i) => {
      const id = DeliveryId.make(makeId("delivery"))
      const claimed = i < claiming
      if (claimed) handed.push(claimedDelivery(event, id, hook, claimToken))
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
        claimed_until: claimed ? until : null,
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

  /** Writes `event`, its audience and a delivery to each of `hooks`, together; answers the deliveries' ids. */
  const writeWith = (
    event: RecordedEvent,
    audience: ReadonlyArray<string>,
    hooks: ReadonlyArray<Subscriber>,
    claims: Option.Option<Claims>
  ) =>
    Effect.suspend(() => {
      const { handed, rows } = deliveriesOf(event, hooks, claims)
      return writeTogether([
        sql`INSERT INTO events ${sql.insert(eventRow(event))}`,
        ...(audience.length === 0
          ? []
          : [sql`INSERT INTO event_audience ${sql.insert(audienceRows(event, audience))}`]),
        ...(rows.length === 0 ? [] : [sql`INSERT INTO deliveries ${sql.insert(rows)}`])
      ]).pipe(
        Effect.map(() => {
          if (Option.isSome(claims)) claims.value.claimed.push(...handed)
          return rows.map((row) => row.id)
        })
      )
    })

  /** Writes a delivery of `event` (already written) to each of `hooks`. */
  const writeDeliveries = (event: RecordedEvent, hooks: ReadonlyArray<Subscriber>, claims: Option.Option<Claims>) =>
    Effect.suspend(() => {
      if (hooks.length === 0) return Effect.void
      const { handed, rows } = deliveriesOf(event, hooks, claims)
      return Effect.map(sql`INSERT INTO deliveries ${sql.insert(rows)}`, () => {
        if (Option.isSome(claims)) claims.value.claimed.push(...handed)
      })
    })

  const writer: EventWriter = {
    write: (event, audience, claims) =>
      Effect.flatMap(subscribersOf(event.type, audience), (hooks) =>
        Effect.asVoid(writeWith(event, audience, hooks, claims))
      ),
    writeTo: (event, id, claims) =>
      sql`SELECT ${subscriberColumns(sql)} FROM webhooks WHERE id = ${id}`.pipe(
        Effect.flatMap((rows) => Effect.orDie(decodeSubscribers(rows))),
        Effect.flatMap((hooks) => writeWith(event, [], hooks, claims)),
        Effect.map(([delivery]) => Option.fromNullable(delivery))
      )
  }
  return { writer, writeDeliveries }
}

/** How many delivery ids the one statement carries: an event with more subscribers has the rest written after it. */
export const CARRIED = 16

/**
 * The fast path (PostgreSQL): the event, its audience, the subscribers' read and their deliveries in one statement,
 * which answers every subscriber with the delivery written to it. Room in the inbox is reserved for the carried
 * ids before the statement (it cannot know how many it will claim) and what it did not claim is given back after.
 */
export const oneStatementWriter = (sql: SqlClient.SqlClient, inbox: DeliveryInbox): EventWriter => {
  const { writeDeliveries, writer: idiomatic } = idiomaticWriter(sql, inbox)

  const folded = (
    event: RecordedEvent & { readonly type: EventType },
    audience: ReadonlyArray<string>,
    claims: Option.Option<Claims>
  ) =>
    Effect.suspend(() => {
      const claiming = Option.isSome(claims) ? claims.value.reserveUpTo(CARRIED) : 0
      const claimToken = crypto.randomUUID()
      const until = claimedUntil(event, inbox)
      const ids = Array.from({ length: CARRIED }, () => makeId("delivery"))
      const claimed = (value: string) => sql`CASE WHEN hooks.n <= ${claiming} THEN ${value} END`
      const statement = sql`WITH hooks AS (
          SELECT ${subscriberColumns(sql)}, CAST(row_number() OVER (ORDER BY id) AS INTEGER) AS n
          FROM webhooks WHERE user_id IN ${sql.in(audience)} AND events::jsonb ? ${event.type}
        ),
        carried AS (
          SELECT id, CAST(n AS INTEGER) AS n FROM unnest(string_to_array(${ids.join(",")}, ',')) WITH ORDINALITY AS c(id, n)
        ),
        event AS (INSERT INTO events ${sql.insert(eventRow(event))}),
        audience AS (INSERT INTO event_audience ${sql.insert(audienceRows(event, audience))}),
        delivered AS (
          INSERT INTO deliveries (id, webhook_id, event_id, event_type, status, attempt_count, manual, next_attempt_at,
            last_attempt_at, claimed_until, claim_token, created_at)
          SELECT carried.id, hooks.id, ${event.id}, ${event.type}, 'pending', 0, 0, ${event.createdAt}, NULL,
            ${claimed(until)}, ${claimed(claimToken)}, ${event.createdAt}
          FROM hooks JOIN carried ON carried.n = hooks.n
        )
        SELECT hooks.*, carried.id AS delivery_id FROM hooks LEFT JOIN carried ON carried.n = hooks.n ORDER BY hooks.n`
      return Effect.flatMap(statement, (rows) =>
        Effect.gen(function* () {
          const written = yield* Effect.orDie(decodeWritten(rows))
          const rest: Array<Subscriber> = []
          let carried = 0
          for (const row of written) {
            if (row.delivery_id === null) {
              rest.push(row)
              continue
            }
            carried++
            if (row.n <= claiming && Option.isSome(claims)) {
              claims.value.claimed.push(claimedDelivery(event, row.delivery_id, row, claimToken))
            }
          }
          if (Option.isSome(claims)) {
            if (carried > claiming) claims.value.unclaimed = true
            if (claiming > carried) yield* claims.value.giveBack(claiming - carried)
          }
          yield* writeDeliveries(event, rest, claims)
        })
      )
    })

  return {
    // No audience, no subscribers to read: the event alone, as the idiomatic writer writes it.
    write: (event, audience, claims) =>
      audience.length === 0 ? idiomatic.write(event, audience, claims) : folded(event, audience, claims),
    writeTo: idiomatic.writeTo
  }
}
