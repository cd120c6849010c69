/**
 * The delivery worker: supervised fibers in the server process.
 *
 * - The claimer takes every free attempt slot (at least one; `WEBHOOK_CONCURRENCY` in all, held as tokens in a
 *   bounded `Queue`), claims that many due deliveries with a lease of `WEBHOOK_CLAIM_TIMEOUT` (a claim whose process
 *   died is taken again when it lapses), and starts each attempt in a `FiberSet`; an attempt gives its slot back
 *   when it ends. With nothing more due it sleeps until the earliest pending delivery falls due (at most
 *   `WEBHOOK_POLL_INTERVAL`), or until the doorbell rings: a commit with new deliveries, or a recorded retry.
 *   Claiming and sleeping make no spans, so an idle server traces nothing; each attempt is traced.
 * - The recorder writes outcomes in batches, with the next attempt time computed by stepping the retry `Schedule`.
 *
 * Failures are logged at `warning` for operators: each failed attempt, a delivery that gives up, a webhook that
 * turns `failed`.
 */
import { SqlClient } from "@effect/sql"
import { Cause, Chunk, Duration, Effect, Fiber, FiberSet, Layer, Metric, Option, Queue, Schedule } from "effect"
import { WebhookConfig } from "../../Config.js"
import type { ClaimedDelivery } from "../../Domain/Webhook.js"
import { DeliveryDoorbell } from "../../Events/Events.js"
import { deliveryAttempts, deliveryLag, pendingDeliveries } from "../../Observability/Metrics.js"
import { tracingEnabled } from "../../Observability/Telemetry.js"
import { parentOf, traceparentOf } from "../../Observability/TraceContext.js"
import { WebhooksRepo } from "../Repo.js"
import { type AttemptResult, attempt } from "./Attempt.js"
import { DeliveryScheduleRepo } from "./Repo.js"
import { retryPolicy, waitAfterFailure } from "./Retry.js"

const iso = (ms: number) => new Date(ms).toISOString()

interface Outcome {
  readonly claimed: ClaimedDelivery
  readonly number: number
  readonly attemptedAt: number
  readonly result: AttemptResult
  readonly status: "pending" | "delivered" | "failed"
  readonly nextAttemptAt: string | null
}

/** Supervision: a defect (say, the database went away) is logged and the fiber restarts with backoff. */
const supervise = (name: string, body: Effect.Effect<unknown, unknown>) =>
  body.pipe(
    Effect.tapErrorCause((cause) =>
      Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError(`delivery ${name} failed; restarting`, cause)
    ),
    Effect.sandbox,
    Effect.retry(
      Schedule.exponential(Duration.millis(100)).pipe(Schedule.either(Schedule.spaced(Duration.seconds(5))))
    ),
    Effect.ignore
  )

export const DeliveryWorker = Layer.scopedDiscard(
  Effect.gen(function* () {
    const config = yield* Effect.orDie(WebhookConfig)
    const sql = yield* SqlClient.SqlClient
    const repo = yield* WebhooksRepo
    const schedule = yield* DeliveryScheduleRepo
    const doorbell = yield* DeliveryDoorbell
    const policy = retryPolicy(config.retryDelays)
    const attempts = yield* FiberSet.make<void, never>()
    const outcomes = yield* Queue.unbounded<Outcome>()

    // The free attempt slots, one token each: taking several at once is what a semaphore cannot tell.
    const slots = yield* Queue.bounded<void>(config.concurrency)
    const giveBack = (count: number) =>
      count <= 0
        ? Effect.void
        : Queue.offerAll(
            slots,
            Array.from({ length: count }, () => undefined)
          )
    yield* giveBack(config.concurrency)

    /** Attempts one claimed delivery; its outcome goes to the recorder. */
    const deliver = (claimed: ClaimedDelivery) =>
      Effect.gen(function* () {
        const number = claimed.attempt_count + 1
        const attemptedAt = Date.now()
        yield* Metric.update(deliveryLag, Math.max(0, attemptedAt - Date.parse(claimed.next_attempt_at)))
        const span = yield* Effect.option(Effect.currentSpan)
        const result = yield* attempt(
          {
            url: claimed.url,
            secret: claimed.secret,
            body: claimed.payload,
            eventType: claimed.event_type,
            eventId: claimed.event_id,
            deliveryId: claimed.id,
            traceparent: Option.getOrUndefined(Option.flatMap(span, traceparentOf))
          },
          { timeout: config.timeout, allowPrivate: config.allowPrivateTargets }
        )
        const wait = result.succeeded || claimed.manual === 1 ? Option.none() : yield* waitAfterFailure(policy, number)
        const nextAttemptAt = Option.getOrNull(Option.map(wait, (d) => iso(Date.now() + Duration.toMillis(d))))
        yield* Metric.increment(Metric.tagged(deliveryAttempts, "outcome", result.succeeded ? "succeeded" : "failed"))
        yield* Effect.annotateCurrentSpan({
          attempt: number,
          "http.response.status_code": result.statusCode ?? 0,
          outcome: result.succeeded ? "succeeded" : "failed"
        })
        if (!result.succeeded) {
          yield* Effect.logWarning("webhook delivery attempt failed", {
            webhook_id: claimed.webhook_id,
            delivery_id: claimed.id,
            event_id: claimed.event_id,
            event_type: claimed.event_type,
            attempt: number,
            status_code: result.statusCode,
            error: result.error,
            next_attempt_at: nextAttemptAt
          })
        }
        yield* Queue.offer(outcomes, {
          claimed,
          number,
          attemptedAt,
          result,
          status: result.succeeded ? "delivered" : Option.isSome(wait) ? "pending" : "failed",
          nextAttemptAt
        })
      }).pipe(
        Effect.withSpan("Webhooks.deliver", {
          // The attempt belongs to the trace of the request that caused the event.
          ...Option.match(parentOf(claimed.trace_context), { onNone: () => ({}), onSome: (parent) => ({ parent }) }),
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
     * Writes outcomes in one transaction: the attempt, the delivery's next state and, on a delivery's last failure
     * or the first success after one, the webhook's status. Only claims still held are written. Answers what the
     * operator should be told, once committed.
     */
    const write = (batch: ReadonlyArray<Outcome>) =>
      Effect.gen(function* () {
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
        yield* repo.insertAttempts(
          owned.map(({ attemptedAt, claimed, number, result }) => ({
            delivery_id: claimed.id,
            number,
            attempted_at: iso(attemptedAt),
            duration_ms: result.durationMs,
            status_code: result.statusCode,
            error: result.error,
            response_body: result.responseBody,
            outcome: result.succeeded ? "succeeded" : "failed"
          }))
        )
        // A webhook's status follows its latest decisive outcome in the batch: a success makes it active (only
        // if it was failed: conditional in SQL), a delivery's last failure makes it failed.
        const latest = new Map<string, Outcome>()
        for (const outcome of [...owned].sort((a, b) => a.attemptedAt - b.attemptedAt)) {
          if (outcome.result.succeeded || outcome.status === "failed") latest.set(outcome.claimed.webhook_id, outcome)
        }
        const decisive = [...latest.values()]
        const failing = decisive.filter((outcome) => !outcome.result.succeeded)
        const turningFailed = new Set(yield* schedule.notFailedAmong(failing.map((o) => o.claimed.webhook_id)))
        const now = iso(Date.now())
        yield* repo.markWebhooks(
          decisive.filter((o) => o.result.succeeded).map((o) => o.claimed.webhook_id),
          "active",
          now
        )
        yield* repo.markWebhooks(
          failing.map((o) => o.claimed.webhook_id),
          "failed",
          now
        )
        return {
          givenUp: owned.filter((outcome) => outcome.status === "failed"),
          webhooksFailed: failing.filter((outcome) => turningFailed.has(outcome.claimed.webhook_id)),
          retries: owned.some((outcome) => outcome.status === "pending")
        }
      }).pipe(sql.withTransaction)

    const record = (batch: ReadonlyArray<Outcome>) =>
      Effect.gen(function* () {
        const told = yield* write(batch)
        for (const { claimed, number, result } of told.givenUp) {
          yield* Effect.logWarning("webhook delivery failed", {
            webhook_id: claimed.webhook_id,
            delivery_id: claimed.id,
            event_id: claimed.event_id,
            event_type: claimed.event_type,
            attempt: number,
            status_code: result.statusCode,
            error: result.error
          })
        }
        for (const { claimed } of told.webhooksFailed) {
          yield* Effect.logWarning("webhook failed", {
            webhook_id: claimed.webhook_id,
            delivery_id: claimed.id,
            event_type: claimed.event_type
          })
        }
        // A retry was scheduled: the claimer may be asleep past its due time, so have it look again.
        if (told.retries) yield* doorbell.ring
      }).pipe(Effect.withSpan("Webhooks.record", { attributes: { count: batch.length } }))

    // Waiting for work is interruptible; a batch, once taken, is written whole even during shutdown.
    const recorder = Effect.uninterruptibleMask((restore) =>
      restore(Queue.takeBetween(outcomes, 1, 512)).pipe(Effect.flatMap((batch) => record(Chunk.toReadonlyArray(batch))))
    ).pipe(Effect.forever)

    /** Claims up to `free` deliveries due at `now` and starts them; answers how many. Free slots go back. */
    const claimAndStart = (free: number, now: number) =>
      Effect.gen(function* () {
        const claimed = yield* repo
          .claim(free, iso(now), iso(now + Duration.toMillis(config.claimTimeout)), crypto.randomUUID())
          .pipe(Effect.onError(() => giveBack(free)))
        yield* giveBack(free - claimed.length)
        for (const delivery of claimed) {
          yield* FiberSet.run(
            attempts,
            deliver(delivery).pipe(
              Effect.catchAllCause((cause) =>
                Effect.logError(
                  "delivery attempt could not be recorded; its claim will lapse and it will be retried",
                  cause
                )
              ),
              Effect.ensuring(giveBack(1)),
              Effect.interruptible
            )
          )
        }
        return claimed.length
      })

    /**
     * Nothing was left due at `claimedAt`: sleep until the earliest delivery due after it (one that fell due since
     * is found too, and makes the wait zero), at most the poll interval, or until the doorbell rings.
     */
    const sleepUntilDue = (claimedAt: number) =>
      Effect.gen(function* () {
        const due = yield* schedule.nextDueAfter(iso(claimedAt))
        const poll = Duration.toMillis(config.pollInterval)
        const wait = Option.match(due, {
          onNone: () => poll,
          onSome: (at) => Math.min(poll, Date.parse(at) - Date.now())
        })
        yield* Effect.raceFirst(doorbell.wait, Effect.sleep(Duration.millis(Math.max(0, wait))))
      })

    /** One pass: wait for a free slot, take every free one, claim that many, and sleep if fewer were due. */
    const pass = Effect.gen(function* () {
      const { claimed, claimedAt, free } = yield* Effect.uninterruptibleMask((restore) =>
        restore(Queue.takeBetween(slots, 1, config.concurrency)).pipe(
          Effect.flatMap((tokens) => {
            const claimedAt = Date.now()
            return Effect.map(claimAndStart(tokens.length, claimedAt), (claimed) => ({
              claimed,
              claimedAt,
              free: tokens.length
            }))
          })
        )
      )
      if (claimed < free) yield* sleepUntilDue(claimedAt)
    })

    const claimer = yield* Effect.forkScoped(
      supervise("claimer", Effect.forever(pass).pipe(Effect.withTracerEnabled(false)))
    )
    const recorderFiber = yield* Effect.forkScoped(supervise("recorder", recorder))
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
    // On shutdown: stop claiming, give attempts in flight the time-out to finish, then record every outcome.
    // Whatever does not finish keeps its claim until the lease lapses, and is retried.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        yield* Fiber.interrupt(claimer)
        yield* FiberSet.awaitEmpty(attempts).pipe(
          // Finalizers run uninterruptibly: the wait must be interruptible for the time-out to end it.
          Effect.interruptible,
          Effect.timeout(Duration.sum(config.timeout, Duration.seconds(1))),
          Effect.ignore
        )
        // The recorder finishes the batch it holds; the rest is written here.
        yield* Fiber.interrupt(recorderFiber)
        const rest = Chunk.toReadonlyArray(yield* Queue.takeAll(outcomes))
        if (rest.length > 0) {
          yield* record(rest).pipe(
            Effect.catchAllCause((cause) =>
              Effect.logError("delivery outcomes could not be recorded at shutdown", cause)
            )
          )
        }
      })
    )
    yield* Effect.logInfo("delivery worker started", { concurrency: config.concurrency })
  })
).pipe(Layer.provide(DeliveryScheduleRepo.Default))
