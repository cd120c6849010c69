/**
 * The delivery worker: supervised fibers in the server process.
 *
 * - `WEBHOOK_CONCURRENCY` runners attempt what the inbox (src/Events/Inbox.ts) holds, one delivery at a time each.
 *   New deliveries arrive there straight from the committing transaction, already claimed; the claimer fills the
 *   rest of the inbox's room from the table (due retries, deliveries of other processes or left unclaimed for want
 *   of room, leases that lapsed), claiming with a lease of `WEBHOOK_CLAIM_TIMEOUT` as many as there is room for,
 *   once at least half the inbox is free or a runner would stand idle (a claim in batches, not a few rows each time
 *   some attempts end).
 *   With nothing more due it sleeps until the earliest pending delivery falls due (at most `WEBHOOK_POLL_INTERVAL`),
 *   or until it is woken: a commit left deliveries unclaimed, room opened (as above) after it was short, a retry was
 *   recorded.
 *   Claiming and sleeping make no spans, so an idle server traces nothing; with tracing on, each attempt is a span.
 * - The recorder writes outcomes in batches, with the next attempt time computed by stepping the retry `Schedule`.
 * - A delivery to a webhook with a `rate_limit` is handed by its runner to the pacer (./Pacer.ts), which starts it
 *   when the webhook's pace, shared by every replica, allows; a webhook with no limit never goes there.
 *
 * Failures are logged at `warning` for operators: each failed attempt, a delivery that gives up, a webhook that
 * turns `failed`.
 */
import {
  Cause,
  Chunk,
  Duration,
  Effect,
  Fiber,
  FiberRef,
  Layer,
  Metric,
  MetricLabel,
  Option,
  Queue,
  Schedule
} from "effect"
import { WebhookConfig } from "../../Config.js"
import type { ClaimedDelivery } from "../../Domain/Webhook.js"
import { capacityFor, DeliveryInbox } from "../../Events/Inbox.js"
import {
  deliveryAttempts,
  deliveryLag,
  pacedStartsLapsed,
  pendingDeliveries,
  updateInPlace
} from "../../Observability/Metrics.js"
import { tracingEnabled } from "../../Observability/Telemetry.js"
import { currentTraceparent, parentOf, untracedTraceparent } from "../../Observability/TraceContext.js"
import { KeyRing, type SecretUnreadable } from "../../Secrets/KeyRing.js"
import { DeliveryRecorder } from "../Recorder.js"
import { DeliveryRecorderLive } from "../RecorderLive.js"
import { WebhooksRepo } from "../Repo.js"
import { type AttemptResult, attempt, DeliveryTrust } from "./Attempt.js"
import { makePacer } from "./Pacer.js"
import { DeliveryScheduleRepo } from "./Repo.js"
import { retryPolicy, waitAfterFailure } from "./Retry.js"
import { TargetResolver } from "./Targets.js"

const iso = (ms: number) => new Date(ms).toISOString()

/** How long the recorder lets outcomes gather before writing them, and the most it writes at once. */
const RECORD_WINDOW = Duration.millis(20)
export const RECORD_BATCH = 512

/** What the operator's warnings say about an attempt (README, "Webhooks"). */
const attemptFields = (claimed: ClaimedDelivery, number: number, result: AttemptResult) => ({
  webhook_id: claimed.webhook_id,
  delivery_id: claimed.id,
  event_id: claimed.event_id,
  event_type: claimed.event_type,
  attempt: number,
  status_code: result.statusCode,
  error: result.error
})

interface Outcome {
  readonly claimed: ClaimedDelivery
  /** The attempt's place among all of the delivery's attempts. */
  readonly number: number
  readonly trigger: "schedule" | "manual"
  readonly attemptedAt: number
  readonly result: AttemptResult
  readonly status: "pending" | "delivered" | "failed"
  /** The scheduled attempts made, this one included if it was one. */
  readonly attemptCount: number
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
    const repo = yield* WebhooksRepo
    const deliveryRecorder = yield* DeliveryRecorder
    const schedule = yield* DeliveryScheduleRepo
    const inbox = yield* DeliveryInbox
    const keyRing = yield* KeyRing
    const policy = retryPolicy(config.retryDelays)
    const outcomes = yield* Queue.unbounded<Outcome>()
    // Offered and not yet taken by the recorder: what shutdown writes itself. Kept apart from the queue because the
    // recorder, interrupted at shutdown just as an outcome reaches it, takes the outcome with it (Effect 3's
    // `Queue.take`); unwritten, its delivery would be sent again once the claim lapsed.
    const unrecorded = new Set<Outcome>()
    const lease = Duration.toMillis(config.claimTimeout)
    const attemptOptions = {
      timeout: config.timeout,
      allowPrivate: config.allowPrivateTargets,
      resolver: yield* TargetResolver,
      ca: (yield* DeliveryTrust).ca
    }

    // Whether spans are made here at all (the program turns the tracer off when nothing would receive them).
    const traced = yield* FiberRef.get(FiberRef.currentTracerEnabled)
    // The outcome labels, made once: `Metric.tagged` would union them into a new array on every update, and the
    // registry finds a metric's instrument by that array's identity (a lookup with hashing per attempt).
    const outcomeLabels = {
      succeeded: [MetricLabel.make("outcome", "succeeded")],
      failed: [MetricLabel.make("outcome", "failed")]
    }

    /**
     * What follows a failed attempt: after a scheduled one, the next one's time (none once the policy gives up);
     * after a manual one, the delivery's status and schedule as they were.
     */
    const afterFailure = Effect.fnUntraced(function* (
      claimed: ClaimedDelivery,
      number: number,
      manual: boolean,
      result: AttemptResult
    ) {
      if (manual) {
        yield* Effect.logWarning("webhook delivery attempt failed", {
          ...attemptFields(claimed, number, result),
          trigger: "manual",
          next_attempt_at: claimed.next_attempt_at
        })
        return { status: claimed.status, attemptCount: claimed.attempt_count, nextAttemptAt: claimed.next_attempt_at }
      }
      const attemptCount = claimed.attempt_count + 1
      const wait = yield* waitAfterFailure(policy, attemptCount)
      const nextAttemptAt = Option.getOrNull(Option.map(wait, (d) => iso(Date.now() + Duration.toMillis(d))))
      yield* Effect.logWarning("webhook delivery attempt failed", {
        ...attemptFields(claimed, number, result),
        next_attempt_at: nextAttemptAt
      })
      return { status: Option.isSome(wait) ? ("pending" as const) : ("failed" as const), attemptCount, nextAttemptAt }
    })

    /**
     * Attempts one claimed delivery, sending `traceparent`; its outcome goes to the recorder. The attempt is one
     * promise and a success is plain code after it (metrics updated in place, the outcome offered without a step):
     * this runs once per delivery, and each Effect step here was a measurable share of a delivery's cost.
     */
    const attemptAndRecord = (claimed: ClaimedDelivery, traceparent: string | undefined) =>
      Effect.withFiberRuntime<void>((fiber) => {
        const number = claimed.attempts_made + 1
        // A manual attempt asked for goes first: a scheduled one due with it follows at the next claim.
        const manual = claimed.manual === 1
        const trigger = manual ? ("manual" as const) : ("schedule" as const)
        const attemptedAt = Date.now()
        if (!manual && claimed.next_attempt_at !== null) {
          updateInPlace(deliveryLag, Math.max(0, attemptedAt - Date.parse(claimed.next_attempt_at)), [], fiber)
        }
        // A rotated-out secret signs too until it expires.
        const previousSecret =
          claimed.previous_secret !== null &&
          claimed.previous_secret_expires_at !== null &&
          Date.parse(claimed.previous_secret_expires_at) > attemptedAt
            ? claimed.previous_secret
            : null
        const request = {
          url: claimed.url,
          signature: claimed.signature,
          secret: claimed.secret,
          previousSecret,
          body: claimed.payload,
          eventType: claimed.event_type,
          eventId: claimed.event_id,
          deliveryId: claimed.id,
          traceparent
        }
        return Effect.flatMap(attempt(request, attemptOptions), (result) => {
          updateInPlace(deliveryAttempts, 1, result.succeeded ? outcomeLabels.succeeded : outcomeLabels.failed, fiber)
          const offer = (next: Pick<Outcome, "status" | "attemptCount" | "nextAttemptAt">) => {
            const outcome: Outcome = { claimed, number, trigger, attemptedAt, result, ...next }
            unrecorded.add(outcome)
            outcomes.unsafeOffer(outcome)
          }
          const annotated = traced
            ? Effect.annotateCurrentSpan({
                attempt: number,
                "http.response.status_code": result.statusCode ?? 0,
                outcome: result.succeeded ? "succeeded" : "failed"
              })
            : Effect.void
          if (result.succeeded) {
            // Delivered: whatever made it, no attempt follows.
            offer({
              status: "delivered",
              attemptCount: manual ? claimed.attempt_count : claimed.attempt_count + 1,
              nextAttemptAt: null
            })
            return annotated
          }
          return Effect.zipRight(annotated, Effect.map(afterFailure(claimed, number, manual, result), offer))
        })
      })

    /**
     * The attempt belongs to the trace of the request that caused the event. With tracing on it is a span of that
     * trace, and the receiver gets the span's `traceparent`. With tracing off no span is made (it would be dropped,
     * and making one costs CPU: bench/README.md): the receiver still gets a `traceparent` continuing the
     * event's trace (a new one if the event has none), with a fresh span id.
     */
    const deliver = (claimed: ClaimedDelivery) => {
      const parent = parentOf(claimed.trace_context)
      if (!traced) return attemptAndRecord(claimed, untracedTraceparent(parent))
      return Effect.flatMap(currentTraceparent, (traceparent) =>
        attemptAndRecord(claimed, Option.getOrUndefined(traceparent))
      ).pipe(
        Effect.withSpan("Webhooks.deliver", {
          ...Option.match(parent, { onNone: () => ({}), onSome: (parent) => ({ parent }) }),
          kind: "client",
          attributes: {
            "webhook.id": claimed.webhook_id,
            "delivery.id": claimed.id,
            "event.id": claimed.event_id,
            "event.type": claimed.event_type
          }
        })
      )
    }

    /**
     * Writes outcomes (src/Webhooks/Recorder.ts): the attempt, the delivery's next state and, on a delivery's
     * last failure or the first success after one, the webhook's status. Only claims still held are written.
     * Answers what the operator should be told, once committed.
     */
    const write = Effect.fnUntraced(function* (batch: ReadonlyArray<Outcome>) {
      // In the order attempted: a webhook's status follows the latest decisive outcome.
      const ordered = [...batch].sort((a, b) => a.attemptedAt - b.attemptedAt)
      const { kept, failedBy } = yield* deliveryRecorder.record(
        ordered.map(({ attemptCount, attemptedAt, claimed, number, result, status, nextAttemptAt, trigger }) => ({
          settlement: {
            id: claimed.id,
            claim_token: claimed.claim_token,
            status,
            attempt_count: attemptCount,
            next_attempt_at: nextAttemptAt,
            last_attempt_at: iso(attemptedAt),
            trigger
          },
          attempt: {
            delivery_id: claimed.id,
            number,
            attempted_at: iso(attemptedAt),
            duration_ms: result.durationMs,
            status_code: result.statusCode,
            error: result.error,
            response_body: result.responseBody,
            outcome: result.succeeded ? "succeeded" : "failed",
            trigger,
            request_headers: JSON.stringify(result.requestHeaders),
            response_headers: result.responseHeaders === null ? null : JSON.stringify(result.responseHeaders)
          },
          webhook_id: claimed.webhook_id,
          // A failed manual attempt decides nothing: the webhook's status follows the schedule's outcomes.
          decisive: result.succeeded || (trigger === "schedule" && status === "failed")
        })),
        iso(Date.now())
      )
      // A claim that lapsed and was taken by another process is theirs to record now.
      const owned = ordered.filter((outcome) => kept.has(outcome.claimed.id))
      return {
        givenUp: owned.filter((outcome) => outcome.trigger === "schedule" && outcome.status === "failed"),
        webhooksFailed: owned.filter((outcome) => failedBy.has(outcome.claimed.id)),
        retries: owned.some((outcome) => outcome.status === "pending")
      }
    })

    const record = Effect.fnUntraced(
      function* (batch: ReadonlyArray<Outcome>) {
        const told = yield* write(batch)
        for (const { claimed, number, result } of told.givenUp) {
          yield* Effect.logWarning("webhook delivery failed", attemptFields(claimed, number, result))
        }
        for (const { claimed } of told.webhooksFailed) {
          yield* Effect.logWarning("webhook failed", {
            webhook_id: claimed.webhook_id,
            delivery_id: claimed.id,
            event_type: claimed.event_type
          })
        }
        // A retry was scheduled: the claimer may be asleep past its due time, so have it look again.
        if (told.retries) yield* inbox.ring
      },
      (effect, batch) => Effect.withSpan(effect, "Webhooks.record", { attributes: { count: batch.length } })
    )

    // Waiting for work is interruptible; a batch, once taken, is written whole even during shutdown.
    // Group commit: the outcomes that end within `RECORD_WINDOW` of the first are written with it, in one transaction
    // (one per attempt cost a commit each, and the commits, not the attempts, set the pace).
    const recorder = Effect.uninterruptibleMask((restore) =>
      restore(Queue.take(outcomes)).pipe(
        Effect.zipLeft(Effect.sleep(RECORD_WINDOW)),
        Effect.flatMap((first) => Queue.takeUpTo(outcomes, RECORD_BATCH - 1).pipe(Effect.map(Chunk.prepend(first)))),
        Effect.flatMap((taken) => {
          const batch = Chunk.toReadonlyArray(taken)
          for (const outcome of batch) unrecorded.delete(outcome)
          return record(batch)
        })
      )
    ).pipe(Effect.forever)

    /**
     * Webhook secrets are stored encrypted (src/Secrets/KeyRing.ts): each one is decrypted once and kept here by its
     * stored value (a new secret, or the same one encrypted again by `secrets rotate`, is a new value), so an attempt
     * does not decrypt. Bounded: cleared when full.
     */
    const secrets = new Map<string, string>()
    const secretOf = (stored: string, webhookId: string): Effect.Effect<string, SecretUnreadable> => {
      const kept = secrets.get(stored)
      if (kept !== undefined) return Effect.succeed(kept)
      return Effect.tap(keyRing.decrypt(stored, webhookId), (secret) =>
        Effect.sync(() => {
          if (secrets.size >= 10_000) secrets.clear()
          secrets.set(stored, secret)
        })
      )
    }

    /** The claimed delivery with its webhook's secrets decrypted. */
    const opened = (claimed: ClaimedDelivery): Effect.Effect<ClaimedDelivery, SecretUnreadable> => {
      const secret = secrets.get(claimed.secret)
      const previous = claimed.previous_secret === null ? null : secrets.get(claimed.previous_secret)
      if (secret !== undefined && previous !== undefined) {
        return Effect.succeed({ ...claimed, secret, previous_secret: previous })
      }
      return Effect.map(
        Effect.all([
          secretOf(claimed.secret, claimed.webhook_id),
          claimed.previous_secret === null
            ? Effect.succeed(null)
            : secretOf(claimed.previous_secret, claimed.webhook_id)
        ]),
        ([secret, previous_secret]) => ({ ...claimed, secret, previous_secret })
      )
    }

    /** Attempts one delivery from the inbox, and gives its room back when it ends. */
    const attemptOne = (claimed: ClaimedDelivery) =>
      opened(claimed).pipe(
        Effect.flatMap(deliver),
        Effect.catchTag("SecretUnreadable", (unreadable) =>
          Effect.logError(
            "webhook secret cannot be decrypted with SECRETS_KEY: the delivery is not attempted; its claim will lapse and it will be tried again",
            { webhook_id: claimed.webhook_id, delivery_id: claimed.id, reason: unreadable.message }
          )
        ),
        Effect.catchAllCause((cause) =>
          Effect.logError("delivery attempt could not be recorded; its claim will lapse and it will be retried", cause)
        ),
        Effect.ensuring(inbox.release(1))
      )

    /** Deliveries to webhooks with a `rate_limit`: started when their pace allows (./Pacer.ts). */
    const pacer = makePacer({
      takeStart: schedule.takeStart,
      start: (claimed) => {
        inbox.started(claimed)
        return attemptOne(claimed)
      },
      giveBack: (claimed) =>
        Effect.suspend(() => {
          inbox.started(claimed)
          return repo.unclaim([claimed])
        }).pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError("a paced delivery could not be given back; its claim will lapse", cause)
          ),
          Effect.ensuring(inbox.release(1))
        ),
      lapsed: Metric.increment(pacedStartsLapsed),
      wake: inbox.ring,
      // Half of what the lease leaves after an attempt's time-out: a delivery given back then is still claimed
      // by no one else, and one started then ends within its lease.
      maxWait: Duration.millis(Math.max(0, lease - Duration.toMillis(config.timeout)) / 2),
      scope: yield* Effect.scope
    })

    // Waiting for a delivery is interruptible; an attempt, once started, runs to its end (WEBHOOK_TIMEOUT at most).
    // An attempt says it has started before anything else, in the uninterruptible part: a delivery whose attempt
    // has not started is given back at shutdown, even one an interrupted `take` took with it. A delivery to a
    // webhook with a `rate_limit` goes to the pacer, which says so when it starts it.
    const runner = Effect.uninterruptibleMask((restore) =>
      restore(inbox.take).pipe(
        Effect.flatMap((claimed) => {
          // Its secret decrypted now, so its start is not spent on that.
          if (claimed.rate_limit !== null) return Effect.zipRight(Effect.ignore(opened(claimed)), pacer.add(claimed))
          inbox.started(claimed)
          return attemptOne(claimed)
        })
      )
    ).pipe(Effect.forever)

    /**
     * Nothing was left due at `claimedAt`: sleep until the earliest delivery due after it (one that fell due since
     * is found too, and makes the wait zero), at most the poll interval, or until woken.
     */
    const sleepUntilDue = Effect.fnUntraced(function* (claimedAt: number) {
      const due = yield* schedule.nextDueAfter(iso(claimedAt))
      const poll = Duration.toMillis(config.pollInterval)
      const wait = Option.match(due, {
        onNone: () => poll,
        onSome: (at) => Math.min(poll, Date.parse(at) - Date.now())
      })
      yield* Effect.raceFirst(inbox.wait, Effect.sleep(Duration.millis(Math.max(0, wait))))
    })

    /**
     * One pass: take all the room the inbox has, claim that many due deliveries and hand them over; sleep if fewer
     * were due. With less than half the room free, wait until the runners have made that much.
     */
    const pass = Effect.gen(function* () {
      const room = yield* inbox.reserveAll
      if (room === 0) {
        return yield* Effect.raceFirst(inbox.wait, Effect.sleep(config.pollInterval))
      }
      const claimedAt = Date.now()
      // The claim and its hand-over are one step that shutdown waits for: interrupted while its statement ran (on
      // PostgreSQL the server may have committed it), the claims would be held by no one until their lease lapsed,
      // and the next process could not send those deliveries until then. Handed over, they are given back.
      const claimed = yield* repo
        .claim(room, iso(claimedAt), iso(claimedAt + lease), crypto.randomUUID(), pacer.pacing())
        .pipe(
          Effect.tap(inbox.hand),
          Effect.onError(() => inbox.release(room)),
          Effect.uninterruptible
        )
      yield* inbox.release(room - claimed.length)
      if (claimed.length < room) yield* sleepUntilDue(claimedAt)
    })

    yield* inbox.open(capacityFor(config), config.claimTimeout, config.concurrency)
    const runners = yield* Effect.forEach(Array.from({ length: config.concurrency }), () => Effect.forkScoped(runner), {
      concurrency: "unbounded"
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
    // On shutdown: stop taking deliveries on, let the attempts in flight end (within the time-out), give the claims
    // of those not started back to the table for the next process, then record every outcome.
    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        yield* inbox.close
        yield* Fiber.interrupt(claimer)
        yield* Effect.forEach(runners, Fiber.interruptFork, { discard: true })
        yield* Fiber.awaitAll(runners).pipe(
          // Finalizers run uninterruptibly: the wait must be interruptible for the time-out to end it.
          Effect.interruptible,
          Effect.timeout(Duration.sum(config.timeout, Duration.seconds(1))),
          Effect.ignore
        )
        yield* pacer.stop(Duration.sum(config.timeout, Duration.seconds(1)))
        const waiting = yield* inbox.takeUnstarted
        yield* repo
          .unclaim(waiting)
          .pipe(
            Effect.catchAllCause((cause) =>
              Effect.logError(
                "claims could not be given back at shutdown; they lapse after WEBHOOK_CLAIM_TIMEOUT",
                cause
              )
            )
          )
        // The recorder finishes the batch it holds; the rest (queued, or taken with an interrupted `take`) is written
        // here.
        yield* Fiber.interrupt(recorderFiber)
        yield* Queue.takeAll(outcomes)
        const rest = [...unrecorded]
        unrecorded.clear()
        if (rest.length > 0) {
          yield* record(rest).pipe(
            Effect.catchAllCause((cause) =>
              Effect.logError("delivery outcomes could not be recorded at shutdown", cause)
            )
          )
        }
      })
    )
    yield* Effect.logInfo("delivery worker started", {
      concurrency: config.concurrency,
      inbox: capacityFor(config),
      recorder: deliveryRecorder.kind
    })
  })
).pipe(Layer.provide([DeliveryScheduleRepo.Default, DeliveryRecorderLive]))
