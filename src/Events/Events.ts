/**
 * The transactional outbox, the one way every feature records what happened. `transaction(change)` runs a change
 * and the events it emits in one database transaction; `emit(type, audience, data)`, inside it, writes the event,
 * its audience (the users who hear about it, read back by the events feed) and one pending delivery per webhook of
 * the audience subscribed to the type. Nothing is written unless the change commits, and nothing the change
 * commits lacks its event.
 *
 * Who did it (docs/audit.md). Every event carries its `actor`, and every change writes its audit record with
 * `record(action, target, options)` inside the same `transaction`:
 *
 *     yield* events.record("session.revoked", { type: "session", id: sessionId }, {
 *       user: userId,            // whose security log it is in besides the actor's (the target's owner)
 *       teamId: null,            // the team whose audit log it is in, if any
 *       name: undefined,         // the target's name, shown to readers
 *       changes: { field: [before, after] } // updates only; never a secret
 *     })
 *
 * The actor is read from the context, never passed: the request's `CurrentPrincipal` (a user, through any
 * credential; their name and an OAuth token's client as the credential's check read them, with the user's row),
 * else `CurrentActor` (the CLI provides the operator, a sign-in the user signing in, `/oauth/revoke` the token's
 * user with the client as the credential, background fibers the system), else the system. The credential (its kind
 * and id), the client's address, its user agent and the request id come from the request being served, if any. A
 * `transaction` that emitted an event (`emit`, `emitTest`) but recorded nothing fails as a defect, so a feature
 * cannot forget its record; a failed or refused change rolls its record back with it.
 *
 * Deliveries this process has room for (the DeliveryInbox) are claimed as they are written and handed to the
 * inbox once the transaction has committed, so their first attempt starts at once, without a claim query; the
 * rest are written unclaimed and the worker is rung to claim them. A transaction that fails hands nothing over and
 * gives its room back.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Context, Effect, Exit, FiberRef, Option, Schema } from "effect"
import type { Actor, AuditAction, AuditCredential, AuditTarget } from "../Domain/Audit.js"
import { CurrentActor, OPERATOR, SYSTEM } from "../Domain/Audit.js"
import { catalogueEntry } from "../Domain/EventCatalogue.js"
import type { EventType } from "../Domain/EventTypes.js"
import { AuditId, DeliveryId, EventId, makeId, WebhookId } from "../Domain/Ids.js"
import { CurrentPrincipal, type Principal } from "../Domain/Principal.js"
import { CurrentRequestIdentity } from "../Domain/RequestId.js"
import { nowIso } from "../Domain/Time.js"
import { type ClaimedDelivery, TEST_EVENT, WebhookSignature, WebhookStatus } from "../Domain/Webhook.js"
import { currentTraceparent } from "../Observability/TraceContext.js"
import { traced } from "../Observability/Traced.js"
import { Transactions } from "../Sql/Transactions.js"
import { DeliveryInbox } from "./Inbox.js"

/** What an event can be: one of the subscribable types, or a webhook's test event (delivered to that webhook only). */
export type RecordedType = EventType | typeof TEST_EVENT

export interface EventEnvelope {
  readonly id: string
  readonly type: RecordedType
  readonly created_at: string
  readonly actor: Actor
  readonly data: unknown
}

/** What an audit record says besides its action and target (see the module's summary). */
export interface AuditOptions {
  /** The user whose security log holds the record besides its actor's: the owner of the target. */
  readonly user?: string | null | undefined
  /** The team whose audit log holds the record. */
  readonly teamId?: string | null | undefined
  /** The target's name, for readers. */
  readonly name?: string | null | undefined
  /** `{field: [before, after]}` for an update; never a secret. */
  readonly changes?: Readonly<Record<string, readonly [unknown, unknown]>> | undefined
}

/** Who acts and with what, as the audit record keeps it. */
interface Acting {
  readonly actor: Actor
  readonly credential: AuditCredential | null
}

/** A credential as its audit records name it: an OAuth access token by its client (`clientId`, when known). */
const recorded = (credential: Principal["credential"], clientId: string | null | undefined): AuditCredential =>
  credential.kind === "oauth"
    ? { type: "oauth", id: clientId ?? credential.id }
    : { type: credential.kind === "jwt" ? "session" : "api_key", id: credential.id }

/** The longest user agent a record keeps. */
export const USER_AGENT_MAX = 512

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
  status: WebhookStatus,
  /** Its deliveries are paced by the worker's claim (src/Webhooks/Delivery/Pacer.ts), never claimed here. */
  rate_limit: Schema.NullOr(Schema.Number)
})
export type Subscriber = typeof Subscriber.Type
const decodeSubscribers = Schema.decodeUnknown(Schema.Array(Subscriber))
const decodeActingRows = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ name: Schema.NullOr(Schema.String), client_id: Schema.NullOr(Schema.String) }))
)

/**
 * What one `transaction` has claimed for this process. Room is counted as soon as it is reserved, so a statement
 * that fails afterwards still gives it back with the transaction. A nested `transaction` (a savepoint) keeps its
 * own claims and merges them into its parent's only when it succeeds, so a rolled-back savepoint hands nothing over.
 */
class Claims {
  reserved = 0
  readonly claimed: Array<ClaimedDelivery> = []
  unclaimed = false
  /** Events emitted and audit records written in this transaction (a savepoint's count once it succeeds). */
  emitted = 0
  recorded = 0
  /** Who acts, worked out at the first event or record of the transaction. */
  acting: Acting | undefined = undefined
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
    parent.emitted += this.emitted
    parent.recorded += this.recorded
  }
}

/** The claims of the `transaction` being run, when there is one. */
class CurrentClaims extends Context.Tag("Events/CurrentClaims")<CurrentClaims, Claims>() {}

export class Events extends Effect.Service<Events>()("Events", {
  dependencies: [DeliveryInbox.Default, Transactions.Default],
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const inbox = yield* DeliveryInbox
    /** The transaction of each change: on SQLite, by default, the group-commit writer (src/Sql/Transactions.ts). */
    const transactions = yield* Transactions
    /** What a delivery's attempt needs of its webhook (the `Subscriber` fields). */
    const subscriberColumns = sql.literal(
      "id, url, signature, secret, previous_secret, previous_secret_expires_at, status, rate_limit"
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

    /**
     * The acting user's name and, for an OAuth access token, its client, where no credential's check read them (a
     * sign-in's `CurrentActor`, a JWT whose session was not read): one statement, once per transaction. A user who is
     * gone keeps their id as their name.
     */
    const lookUpActing = (userId: string, credential: Principal["credential"] | undefined) =>
      Effect.map(
        Effect.flatMap(
          sql`SELECT (SELECT name FROM users WHERE id = ${userId}) AS name, ${
            credential?.kind === "oauth"
              ? sql`(SELECT client_id FROM oauth_tokens WHERE id = ${credential.id})`
              : sql`NULL`
          } AS client_id`,
          (rows) => Effect.orDie(decodeActingRows(rows))
        ),
        (rows): Acting => {
          const row = rows[0]
          const actor: Actor = { type: "user", id: userId, name: row?.name ?? userId }
          return { actor, credential: credential === undefined ? null : recorded(credential, row?.client_id) }
        }
      )

    /** Who acts with `principal`'s credential, from what its check read: no statement when it read the user's name. */
    const actingAs = (principal: Principal): Effect.Effect<Acting, unknown> => {
      const { name, credential } = principal
      if (name === undefined || (credential.kind === "oauth" && credential.clientId === undefined)) {
        return lookUpActing(principal.userId, credential)
      }
      return Effect.succeed({
        actor: { type: "user", id: principal.userId, name },
        credential: recorded(credential, credential.clientId)
      })
    }

    /** Who acts now (see the module's summary): an explicit `CurrentActor`, else the principal, else the system. */
    const resolveActing = Effect.gen(function* () {
      const explicit = yield* Effect.serviceOption(CurrentActor)
      if (Option.isSome(explicit)) {
        const actor = explicit.value
        if (actor.type !== "user") return { actor: actor.type === "operator" ? OPERATOR : SYSTEM, credential: null }
        const found = yield* lookUpActing(actor.id, undefined)
        return { actor: found.actor, credential: actor.credential ?? null } satisfies Acting
      }
      const principal = yield* Effect.serviceOption(CurrentPrincipal)
      if (Option.isNone(principal)) return { actor: SYSTEM, credential: null } satisfies Acting
      return yield* actingAs(principal.value)
    }).pipe(Effect.catchAll(Effect.die))

    /** Who acts, worked out once per transaction. */
    const acting: Effect.Effect<Acting> = Effect.flatMap(Effect.serviceOption(CurrentClaims), (claims) => {
      if (Option.isNone(claims)) return resolveActing
      const known = claims.value.acting
      if (known !== undefined) return Effect.succeed(known)
      return Effect.tap(resolveActing, (found) => {
        claims.value.acting = found
      })
    })

    /** A new event: its envelope's JSON is the payload every delivery of it sends, byte for byte. */
    const makeEvent = (type: RecordedType, data: unknown, actor: Actor) =>
      Effect.map(currentTraceparent, (traceparent): RecordedEvent => {
        const createdAt = nowIso()
        const id = EventId.make(makeId("event"))
        const envelope: EventEnvelope = { id, type, created_at: createdAt, actor, data }
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
      // A webhook with a `rate_limit` has its deliveries claimed by the worker, which paces them.
      let paced = 0
      for (const hook of hooks) if (hook.rate_limit !== null) paced++
      const claiming = Option.isSome(claims) && hooks.length > 0 ? claims.value.reserve(hooks.length - paced) : 0
      if (paced > 0 && Option.isSome(claims)) claims.value.unclaimed = true
      const claimToken = crypto.randomUUID()
      const claimedUntil = new Date(Date.parse(event.createdAt) + inbox.lease()).toISOString()
      const handed: Array<ClaimedDelivery> = []
      let free = 0
      const rows = hooks.map((hook) => {
        const id = DeliveryId.make(makeId("delivery"))
        const claimed = hook.rate_limit === null && free < claiming
        if (hook.rate_limit === null) free += 1
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
            claim_token: claimToken,
            rate_limit: null
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
      const event = yield* makeEvent(type, yield* encodeData(type, data), (yield* acting).actor)
      const users = Array.from(new Set(audience))
      yield* write(event, users, yield* subscribersOf(type, users))
      const claims = yield* Effect.serviceOption(CurrentClaims)
      if (Option.isSome(claims)) claims.value.emitted += 1
      return event.envelope
    })

    /**
     * Writes the audit record of `action` on `target` (see the module's summary), in the transaction of the change
     * it records. The actor, credential, client address, user agent and request id come from the context.
     */
    const record = traced("Events.record")(function* (
      action: AuditAction,
      target: AuditTarget,
      options: AuditOptions = {}
    ) {
      const who = yield* acting
      const request = Option.getOrUndefined(yield* Effect.serviceOption(HttpServerRequest.HttpServerRequest))
      const identity = yield* FiberRef.get(CurrentRequestIdentity)
      const agent = request?.headers["user-agent"]
      const changes = options.changes
      yield* sql`INSERT INTO audit_log ${sql.insert({
        id: AuditId.make(makeId("audit")),
        action,
        actor_type: who.actor.type,
        actor_id: who.actor.type === "user" ? who.actor.id : null,
        actor_name: who.actor.type === "user" ? who.actor.name : null,
        credential_type: who.credential?.type ?? null,
        credential_id: who.credential?.id ?? null,
        target_type: target.type,
        target_id: target.id,
        target_name: options.name ?? null,
        team_id: options.teamId ?? null,
        user_id: options.user ?? null,
        ip: request === undefined ? null : Option.getOrNull(request.remoteAddress),
        user_agent: agent === undefined ? null : agent.slice(0, USER_AGENT_MAX),
        request_id: request === undefined || identity === undefined ? null : identity.id,
        changes: changes === undefined ? null : JSON.stringify(changes),
        created_at: nowIso()
      })}`.pipe(Effect.orDie)
      const claims = yield* Effect.serviceOption(CurrentClaims)
      if (Option.isSome(claims)) claims.value.recorded += 1
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
      if (Option.isSome(outer)) claims.acting = outer.value.acting
      // The outermost transaction checks, before it commits, that what it announced it also recorded.
      const checked = Option.isSome(outer)
        ? change
        : Effect.tap(change, () =>
            claims.emitted > 0 && claims.recorded === 0
              ? Effect.dieMessage("A change emitted an event without its audit record (Events.record)")
              : Effect.void
          )
      return yield* transactions.transaction(Effect.provideService(checked, CurrentClaims, claims)).pipe(
        Effect.onExit((exit) => {
          if (Exit.isFailure(exit)) return inbox.release(claims.reserved)
          if (Option.isSome(outer)) return Effect.sync(() => claims.mergeInto(outer.value))
          return Effect.zipRight(inbox.hand(claims.claimed), claims.unclaimed ? inbox.ring : Effect.void)
        })
      )
    })

    /**
     * A `webhook.test` event for the webhook `id` alone, whatever its `events` (the type cannot be subscribed to),
     * with its one delivery. It has no audience, so it is in no one's events feed. Like `emit`, it must run inside
     * the `transaction` of the change, which must record it (`webhook.tested`): it counts as an emitted event.
     * Answers the delivery's id; when the webhook is gone, none, and writes nothing.
     */
    const emitTest = Effect.fnUntraced(function* (id: WebhookId) {
      const hooks = yield* Effect.flatMap(sql`SELECT ${subscriberColumns} FROM webhooks WHERE id = ${id}`, (rows) =>
        Effect.orDie(decodeSubscribers(rows))
      )
      if (hooks.length === 0) return Option.none<DeliveryId>()
      const data = yield* encodeData(TEST_EVENT, { webhook_id: id })
      const [delivery] = yield* write(yield* makeEvent(TEST_EVENT, data, (yield* acting).actor), [], hooks)
      const claims = yield* Effect.serviceOption(CurrentClaims)
      if (Option.isSome(claims)) claims.value.emitted += 1
      return Option.fromNullable(delivery)
    })

    return { emit, emitTest, record, transaction, wake: inbox.ring } as const
  })
}) {}
