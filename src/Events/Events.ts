/**
 * The transactional outbox, the one way every feature records what happened. `transaction(change)` runs a change
 * and the events it emits in one database transaction; `emit(type, audience, data)`, inside it, writes the event,
 * its audience (the users who hear about it, read back by the events feed) and one pending delivery per webhook of
 * the audience subscribed to the type. Nothing is written unless the change commits, and nothing the change
 * commits lacks its event.
 *
 * How an event is written, two ways (an idiomatic one and a one-statement one for PostgreSQL), is
 * src/Events/Writers.ts; which one runs is chosen here, from FAST_PATHS.
 *
 * Deliveries this process has room for (the DeliveryInbox) are claimed as they are written and handed to the
 * inbox once the transaction has committed, so their first attempt starts at once, without a claim query; the
 * rest are written unclaimed and the worker is rung to claim them. A transaction that fails hands nothing over and
 * gives its room back.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, Exit, Option } from "effect"
import { FastPathsConfig } from "../Config.js"
import type { EventType } from "../Domain/EventTypes.js"
import { EventId, makeId, type WebhookId } from "../Domain/Ids.js"
import { nowIso } from "../Domain/Time.js"
import { TEST_EVENT } from "../Domain/Webhook.js"
import { traceparentOf } from "../Observability/TraceContext.js"
import { traced } from "../Observability/Traced.js"
import { DeliveryInbox } from "./Inbox.js"
import {
  Claims,
  type EventEnvelope,
  idiomaticWriter,
  oneStatementWriter,
  type RecordedEvent,
  type RecordedType
} from "./Writers.js"

export type { EventEnvelope, RecordedEvent, RecordedType } from "./Writers.js"

/** The claims of the `transaction` being run, when there is one. */
class CurrentClaims extends Context.Tag("Events/CurrentClaims")<CurrentClaims, Claims>() {}

export class Events extends Effect.Service<Events>()("Events", {
  dependencies: [DeliveryInbox.Default],
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const inbox = yield* DeliveryInbox
    const fastPaths = yield* Effect.orDie(FastPathsConfig)
    // The one-statement write saves a round trip; SQLite has none to save (and no INSERT in WITH).
    const writer = sql.onDialectOrElse({
      pg: () =>
        fastPaths.has("outbox-statement") ? oneStatementWriter(sql, inbox) : idiomaticWriter(sql, inbox).writer,
      orElse: () => idiomaticWriter(sql, inbox).writer
    })

    /** A new event: its envelope's JSON is the payload every delivery of it sends, byte for byte. */
    const makeEvent = <T extends RecordedType>(type: T, data: unknown) =>
      Effect.map(Effect.option(Effect.currentSpan), (span): RecordedEvent & { readonly type: T } => {
        const createdAt = nowIso()
        const id = EventId.make(makeId("event"))
        const envelope: EventEnvelope = { id, type, created_at: createdAt, data }
        // Kept with the event so each delivery attempt joins the trace of the request that caused it.
        const traceContext = Option.getOrNull(Option.flatMap(span, traceparentOf))
        return { id, type, createdAt, envelope, payload: JSON.stringify(envelope), traceContext }
      })

    /**
     * Records `type` about a resource whose audience is `audience` (user ids: who hears about it, see
     * docs/events.md), stores that audience for the events feed and queues a delivery to each of their webhooks
     * subscribed to it. Must run inside the transaction of the change it describes (`transaction`).
     */
    const emit = traced("Events.emit")(function* (type: EventType, audience: ReadonlyArray<string>, data: unknown) {
      const event = yield* makeEvent(type, data)
      yield* writer.write(event, Array.from(new Set(audience)), yield* Effect.serviceOption(CurrentClaims))
      return event.envelope
    })

    /**
     * Runs a change and the events it emits in one transaction. Once it has committed, the deliveries it claimed go
     * to the inbox and the worker is rung if some were left unclaimed; if it fails, their room is given back (the
     * rows were rolled back with it). Nested in another `transaction`, its claims join the outer one's when it
     * succeeds; nested in a transaction not made here, it claims nothing and rings the worker.
     */
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.gen(function* () {
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
    const emitTest = (id: WebhookId) =>
      transaction(
        Effect.gen(function* () {
          const event = yield* makeEvent(TEST_EVENT, { webhook_id: id })
          return yield* writer.writeTo(event, id, yield* Effect.serviceOption(CurrentClaims))
        })
      )

    return { emit, emitTest, transaction, wake: inbox.ring } as const
  })
}) {}
