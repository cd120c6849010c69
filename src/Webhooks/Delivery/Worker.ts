/**
 * The delivery worker: a supervised fiber in the server process. It claims due deliveries (a lease of
 * `WEBHOOK_CLAIM_TIMEOUT`, so a claim whose process died is taken again when it lapses), attempts up to
 * `WEBHOOK_CONCURRENCY` of them at once, and writes each outcome with the next attempt time computed by stepping
 * the retry `Schedule`. It is woken when a transaction with new deliveries commits, and polls as a fallback.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Duration, Effect, FiberSet, Layer, Option, Queue, Ref, Schedule } from "effect"
import { WebhookConfig } from "../../Config.js"
import { DeliveryDoorbell } from "../../Events/Events.js"
import { type ClaimedDelivery, WebhooksRepo } from "../Repo.js"
import { attempt } from "./Attempt.js"
import { retryPolicy, waitAfterFailure } from "./Retry.js"

const iso = (ms: number) => new Date(ms).toISOString()

export const DeliveryWorker = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* Effect.orDie(WebhookConfig)
    const sql = yield* SqlClient.SqlClient
    const repo = yield* WebhooksRepo
    const doorbell = yield* DeliveryDoorbell
    const policy = retryPolicy(config.retryDelays)
    const inFlight = yield* Ref.make(0)
    const slotFreed = yield* Queue.sliding<void>(1)
    const stopping = yield* Ref.make(false)
    const attempts = yield* FiberSet.make()

    /** Attempts one claimed delivery and records the outcome in one transaction. */
    const deliver = (claimed: ClaimedDelivery) =>
      Effect.gen(function*() {
        const number = claimed.attempt_count + 1
        const attemptedAt = Date.now()
        const result = yield* attempt({
          url: claimed.url,
          secret: claimed.secret,
          body: claimed.payload,
          eventType: claimed.event_type,
          eventId: claimed.event_id,
          deliveryId: claimed.id
        }, { timeout: config.timeout, allowPrivate: config.allowPrivateTargets })
        const now = iso(Date.now())
        const wait = result.succeeded || claimed.manual === 1
          ? Option.none()
          : yield* waitAfterFailure(policy, number)
        const status = result.succeeded ? "delivered" : Option.isSome(wait) ? "pending" : "failed"
        yield* Effect.gen(function*() {
          const owned = yield* repo.settle(claimed, {
            status,
            attempt_count: number,
            next_attempt_at: Option.match(wait, { onNone: () => null, onSome: (d) => iso(Date.now() + Duration.toMillis(d)) }),
            last_attempt_at: iso(attemptedAt)
          })
          // A claim that lapsed and was taken by another process is theirs to record now.
          if (!owned) return
          yield* repo.insertAttempt({
            delivery_id: claimed.id,
            number,
            attempted_at: iso(attemptedAt),
            duration_ms: result.durationMs,
            status_code: result.statusCode,
            error: result.error,
            response_body: result.responseBody,
            outcome: result.succeeded ? "succeeded" : "failed"
          })
          if (result.succeeded) yield* repo.markWebhook(claimed.webhook_id, "active", now)
          else if (status === "failed") yield* repo.markWebhook(claimed.webhook_id, "failed", now)
        }).pipe(sql.withTransaction)
      }).pipe(
        Effect.withSpan("Webhooks.deliver", {
          attributes: { "webhook.id": claimed.webhook_id, "delivery.id": claimed.id, "event.type": claimed.event_type }
        })
      )

    const release = Effect.zipRight(Ref.update(inFlight, (n) => n - 1), Queue.offer(slotFreed, undefined))

    /** One pass: claim as many due deliveries as there are free slots, and start them. */
    const pass = Effect.gen(function*() {
      if (yield* Ref.get(stopping)) return yield* Effect.never
      const free = config.concurrency - (yield* Ref.get(inFlight))
      if (free <= 0) {
        yield* Queue.take(slotFreed)
        return
      }
      const now = Date.now()
      const claimed = yield* repo.claim(
        free,
        iso(now),
        iso(now + Duration.toMillis(config.claimTimeout)),
        crypto.randomUUID()
      )
      for (const delivery of claimed) {
        yield* Ref.update(inFlight, (n) => n + 1)
        yield* FiberSet.run(
          attempts,
          deliver(delivery).pipe(
            Effect.catchAllCause((cause) =>
              Effect.logError("delivery attempt could not be recorded; its claim will lapse and it will be retried", cause)
            ),
            Effect.ensuring(release)
          )
        )
      }
      if (claimed.length < free) {
        // Nothing more is due: sleep until a commit rings, a slot frees up with more due, or the poll interval.
        yield* Effect.raceFirst(doorbell.wait, Effect.sleep(config.pollInterval))
      }
    })

    const loop = Effect.whileLoop({
      while: () => true,
      body: () => pass,
      step: () => {}
    })

    // Supervision: a defect (say, the database went away) is logged and the loop restarts with backoff.
    const supervised = loop.pipe(
      Effect.tapErrorCause((cause) =>
        Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("delivery worker failed; restarting", cause)
      ),
      Effect.sandbox,
      Effect.retry(
        Schedule.exponential(Duration.millis(100)).pipe(Schedule.either(Schedule.spaced(Duration.seconds(5))))
      ),
      Effect.ignore
    )

    yield* Effect.forkScoped(supervised)
    // On shutdown: stop claiming (the fiber is interrupted by the scope), then give attempts in flight the
    // time-out to finish; whatever does not finish keeps its claim until the lease lapses and is retried.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Ref.set(stopping, true)
        yield* Ref.get(inFlight).pipe(
          Effect.repeat({ until: (n) => n === 0, schedule: Schedule.spaced(Duration.millis(20)) }),
          Effect.timeout(Duration.sum(config.timeout, Duration.seconds(1))),
          Effect.ignore
        )
      })
    )
    yield* Effect.logInfo("delivery worker started", { concurrency: config.concurrency })
  })
)
