/**
 * The delivery worker: a supervised fiber in the server process. It claims due deliveries (a lease of
 * `WEBHOOK_CLAIM_TIMEOUT`, so a claim whose process died is taken again when it lapses), attempts up to
 * `WEBHOOK_CONCURRENCY` of them at once, and writes each outcome with the next attempt time computed by stepping
 * the retry `Schedule`. It is woken when a transaction with new deliveries commits, and polls as a fallback.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Chunk, Duration, Effect, FiberSet, Layer, Metric, Option, Queue, Ref, Schedule } from "effect"
import { WebhookConfig } from "../../Config.js"
import { DeliveryDoorbell } from "../../Events/Events.js"
import type { ClaimedDelivery } from "../../Domain/Webhook.js"
import { WebhooksRepo } from "../Repo.js"
import { deliveryAttempts, deliveryLag, pendingDeliveries } from "../../Observability/Metrics.js"
import { tracingEnabled } from "../../Observability/Telemetry.js"
import { parseTraceparent, traceparentOf } from "../../Observability/TraceContext.js"
import { attempt, type AttemptResult } from "./Attempt.js"
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

    interface Outcome {
      readonly claimed: ClaimedDelivery
      readonly number: number
      readonly attemptedAt: number
      readonly result: AttemptResult
      readonly status: "pending" | "delivered" | "failed"
      readonly nextAttemptAt: string | null
    }
    const outcomes = yield* Queue.unbounded<Outcome>()

    /** Attempts one claimed delivery; its outcome goes to the recorder. */
    const deliver = (claimed: ClaimedDelivery) =>
      Effect.gen(function*() {
        const number = claimed.attempt_count + 1
        const attemptedAt = Date.now()
        yield* Metric.update(deliveryLag, Math.max(0, attemptedAt - Date.parse(claimed.next_attempt_at)))
        const span = yield* Effect.currentSpan.pipe(Effect.option)
        const result = yield* attempt({
          url: claimed.url,
          secret: claimed.secret,
          body: claimed.payload,
          eventType: claimed.event_type,
          eventId: claimed.event_id,
          deliveryId: claimed.id,
          traceparent: Option.getOrUndefined(Option.map(span, traceparentOf))
        }, { timeout: config.timeout, allowPrivate: config.allowPrivateTargets })
        const wait = result.succeeded || claimed.manual === 1
          ? Option.none()
          : yield* waitAfterFailure(policy, number)
        yield* Metric.increment(Metric.tagged(deliveryAttempts, "outcome", result.succeeded ? "succeeded" : "failed"))
        yield* Effect.annotateCurrentSpan({
          "attempt": number,
          "http.response.status_code": result.statusCode ?? 0,
          "outcome": result.succeeded ? "succeeded" : "failed"
        })
        yield* Queue.offer(outcomes, {
          claimed,
          number,
          attemptedAt,
          result,
          status: result.succeeded ? "delivered" : Option.isSome(wait) ? "pending" : "failed",
          nextAttemptAt: Option.match(wait, { onNone: () => null, onSome: (d) => iso(Date.now() + Duration.toMillis(d)) })
        })
      }).pipe(
        Effect.withSpan("Webhooks.deliver", {
          // The attempt belongs to the trace of the request that caused the event.
          ...Option.match(parseTraceparent(claimed.trace_context), {
            onNone: () => ({}),
            onSome: (parent) => ({ parent })
          }),
          kind: "client",
          attributes: {
            "webhook.id": claimed.webhook_id,
            "delivery.id": claimed.id,
            "event.id": claimed.event_id,
            "event.type": claimed.event_type
          }
        }),
        // Always traced, even with export off: the receiver gets a `traceparent` either way.
        Effect.withTracerEnabled(true)
      )

    /**
     * Writes outcomes in batches, one transaction per batch: the attempt, the delivery's next state and, on the
     * 5th failure or the first success after one, the webhook's status. Only claims still held are written.
     */
    const record = (batch: ReadonlyArray<Outcome>) =>
      Effect.gen(function*() {
        const owned: Array<Outcome> = []
        for (const outcome of batch) {
          const kept = yield* repo.settle(outcome.claimed, {
            status: outcome.status,
            attempt_count: outcome.number,
            next_attempt_at: outcome.nextAttemptAt,
            last_attempt_at: iso(outcome.attemptedAt)
          })
          // A claim that lapsed and was taken by another process is theirs to record now.
          if (kept) owned.push(outcome)
        }
        yield* repo.insertAttempts(owned.map(({ claimed, number, attemptedAt, result }) => ({
          delivery_id: claimed.id,
          number,
          attempted_at: iso(attemptedAt),
          duration_ms: result.durationMs,
          status_code: result.statusCode,
          error: result.error,
          response_body: result.responseBody,
          outcome: result.succeeded ? "succeeded" : "failed"
        })))
        // A webhook's status follows its latest decisive outcome in the batch: a success makes it active (only
        // if it was failed: conditional in SQL), a delivery's last failure makes it failed.
        const latest = new Map<string, "active" | "failed">()
        for (const outcome of [...owned].sort((a, b) => a.attemptedAt - b.attemptedAt)) {
          if (outcome.result.succeeded) latest.set(outcome.claimed.webhook_id, "active")
          else if (outcome.status === "failed") latest.set(outcome.claimed.webhook_id, "failed")
        }
        const now = iso(Date.now())
        const [active, failed] = [[...latest].filter(([, s]) => s === "active"), [...latest].filter(([, s]) => s === "failed")]
        yield* repo.markWebhooks(active.map(([id]) => id), "active", now)
        yield* repo.markWebhooks(failed.map(([id]) => id), "failed", now)
      }).pipe(sql.withTransaction, Effect.withSpan("Webhooks.record", { attributes: { count: batch.length } }))

    // Waiting for work is interruptible; a batch, once taken, is written whole even during shutdown.
    const recorder = Effect.uninterruptibleMask((restore) =>
      restore(Queue.takeBetween(outcomes, 1, 512)).pipe(
        Effect.flatMap((batch) => record(Chunk.toReadonlyArray(batch)))
      )
    ).pipe(Effect.forever)

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
    const supervise = (name: string, body: Effect.Effect<unknown, unknown>) => body.pipe(
      Effect.tapErrorCause((cause) =>
        Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError(`delivery ${name} failed; restarting`, cause)
      ),
      Effect.sandbox,
      Effect.retry(
        Schedule.exponential(Duration.millis(100)).pipe(Schedule.either(Schedule.spaced(Duration.seconds(5))))
      ),
      Effect.ignore
    )

    yield* Effect.forkScoped(supervise("claimer", loop))
    yield* Effect.forkScoped(supervise("recorder", recorder))
    // The pending-deliveries gauge, sampled while there is somewhere to send it.
    if (yield* tracingEnabled) {
      yield* Effect.forkScoped(
        supervise(
          "gauge",
          repo.pendingCount.pipe(
            Effect.flatMap((n) => Metric.set(pendingDeliveries, n)),
            Effect.withTracerEnabled(false),
            Effect.repeat(Schedule.spaced(Duration.seconds(10)))
          )
        )
      )
    }
    // On shutdown: stop claiming (the fiber is interrupted by the scope), then give attempts in flight the
    // time-out to finish; whatever does not finish keeps its claim until the lease lapses and is retried.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function*() {
        yield* Ref.set(stopping, true)
        // `Queue.size` is negative while the recorder waits for work, hence the floor at 0.
        const settled = Effect.zipWith(Ref.get(inFlight), Queue.size(outcomes), (flying, unrecorded) =>
          flying + Math.max(0, unrecorded))
        yield* settled.pipe(
          Effect.repeat({ until: (n) => n === 0, schedule: Schedule.spaced(Duration.millis(20)) }),
          // Finalizers run uninterruptibly: the wait must be interruptible for the time-out to end it.
          Effect.interruptible,
          Effect.timeout(Duration.sum(config.timeout, Duration.seconds(1))),
          Effect.ignore
        )
      })
    )
    yield* Effect.logInfo("delivery worker started", { concurrency: config.concurrency })
  })
)
