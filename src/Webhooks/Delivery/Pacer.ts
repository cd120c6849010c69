/**
 * Pacing for webhooks with a `rate_limit` (docs/webhooks.md, "Rate limit"): at most `rate_limit` attempts to such a
 * webhook start in any one-second window, however it falls, across replicas.
 *
 * The claim takes a limited webhook's deliveries apart from the others, at most a second's worth at a time and none
 * while this process still paces the ones it took (src/Webhooks/Repo.ts); a runner hands each such delivery here and
 * goes back to the inbox at once. One fiber per webhook starts them in turn: for each, a fiber takes a start from
 * the webhook's pace in the database (`DeliveryScheduleRepo.takeStart`, shared by every replica) and, given one,
 * makes the attempt straight away; when the pace says "not yet" the pacer sleeps until then.
 *
 * A start is granted for a time, and the attempt must begin within `START_WITHIN_MS` of it: a busy process that gets
 * from the answer to the attempt later lets the start lapse (its slot goes unused) and asks again, since a late start
 * followed by one on time would put two attempts less than a step apart. So that a process whose answers are always
 * slow still starts some, it asks for its start as far ahead as its last answer took, and waits for that time.
 *
 * The attempt itself runs as any other (its outcome recorded by the recorder); what waits is neither attempted nor
 * recorded, and its schedule is untouched. When a webhook's turn is over, the claimer is woken for its next
 * deliveries. A delivery that has waited here too long for its claim's comfort is given back to the table, for the
 * next claim.
 *
 * A webhook with no limit never comes here: its deliveries cost nothing more than before.
 */
import { Cause, Deferred, Duration, Effect, Exit, Fiber, type Scope } from "effect"
import type { ClaimedDelivery } from "../../Domain/Webhook.js"
import { PACE_SPAN_MS, type Pace, START_WITHIN_MS } from "./Repo.js"

export interface PacerOptions {
  /**
   * Takes a start for an attempt to the webhook at `now` (milliseconds since the epoch: a moment ahead when the pace's
   * answers are slow), if its pace allows one; a cold one holds its place longer.
   */
  readonly takeStart: (webhookId: string, now: number, cold: boolean) => Effect.Effect<Pace>
  /**
   * The attempt, called the moment it starts (the call tells the inbox so, at once); the effect runs in a fiber of
   * its own, to its end, whatever happens to the pacer.
   */
  readonly start: (claimed: ClaimedDelivery) => Effect.Effect<void>
  /** Gives a delivery back to the table unattempted, its room in the inbox too (never fails: a claim left lapses). */
  readonly giveBack: (claimed: ClaimedDelivery) => Effect.Effect<void>
  /** Told of each start let lapse (for the operator's metric). */
  readonly lapsed: Effect.Effect<void>
  /** Wakes the claimer: a webhook's paced deliveries have all started, its next ones may be claimed. */
  readonly wake: Effect.Effect<void>
  /** How long a delivery may wait here before it is given back. */
  readonly maxWait: Duration.Duration
  readonly scope: Scope.Scope
}

/**
 * How long after this process's last attempt to a webhook the next one counts as cold (`COLD_START_MS` in
 * ./Repo.ts): a connection idle longer may have been closed, and the next attempt opens a new one.
 */
const WARM_MS = 3_000

interface Queued {
  readonly claimed: ClaimedDelivery
  readonly since: number
}

export const makePacer = (options: PacerOptions) => {
  const maxWaitMs = Duration.toMillis(options.maxWait)
  /** The deliveries each webhook has waiting here, in the order they came. */
  const queues = new Map<string, Array<Queued>>()
  const pacers = new Set<Fiber.RuntimeFiber<void>>()
  const attempts = new Set<Fiber.RuntimeFiber<void>>()
  /** When this process last started an attempt to each webhook (cleared when it grows large). */
  const lastStart = new Map<string, number>()

  const forkTracked = (set: Set<Fiber.RuntimeFiber<void>>, effect: Effect.Effect<void>) =>
    Effect.forkIn(effect, options.scope).pipe(
      Effect.tap((fiber) =>
        Effect.sync(() => {
          set.add(fiber)
          fiber.addObserver(() => set.delete(fiber))
        })
      )
    )

  /** The attempt, in a fiber of its own that shutdown waits for; the pacer goes on to the next. */
  const startNow = (claimed: ClaimedDelivery) =>
    Effect.suspend(() => Effect.asVoid(forkTracked(attempts, Effect.uninterruptible(options.start(claimed)))))

  /** How long the pace's last answer took to come back: the next start is asked for that far ahead. */
  let lead = 0

  /**
   * Takes a start for `lead` ms from now and, when it is given, makes the attempt at that time in the same fiber (no
   * hop between the check and the attempt for a busy process to stretch), unless it is too late by then; the
   * decision goes to `told` either way, for the pacer to go on (a lapsed start as a wait until now: ask again).
   */
  const takeAndStart = (webhookId: string, claimed: ClaimedDelivery, cold: boolean, told: Deferred.Deferred<Pace>) =>
    Effect.suspend(() => {
      const asked = Date.now()
      const at = asked + lead
      return options.takeStart(webhookId, at, cold).pipe(
        Effect.tap(() => {
          lead = Math.min(PACE_SPAN_MS, Date.now() - asked)
        }),
        Effect.tap((pace) => {
          const early = at - Date.now()
          return pace._tag === "Start" && early > 0 ? Effect.sleep(Duration.millis(early)) : Effect.void
        }),
        Effect.exit,
        Effect.flatMap((exit) => {
          if (Exit.isFailure(exit) || exit.value._tag === "Wait") return Deferred.done(told, exit)
          const now = Date.now()
          if (exit.value._tag === "Start" && now - at > START_WITHIN_MS) {
            return Effect.zipRight(options.lapsed, Deferred.succeed(told, { _tag: "Wait", at: now }))
          }
          return Effect.zipRight(
            Deferred.done(told, exit),
            Effect.suspend(() => options.start(claimed))
          )
        })
      )
    })

  /** One webhook's turn: its queued deliveries started one by one as its pace allows, until none is left. */
  const pace = (webhookId: string, queue: Array<Queued>): Effect.Effect<void> =>
    Effect.gen(function* () {
      while (true) {
        const head = queue[0]
        if (head === undefined) {
          // In the same step as the check: a delivery added from now on starts a new turn.
          queues.delete(webhookId)
          return
        }
        const now = Date.now()
        if (now - head.since > maxWaitMs) {
          queue.shift()
          yield* options.giveBack(head.claimed)
          continue
        }
        const cold = now - (lastStart.get(webhookId) ?? Number.NEGATIVE_INFINITY) > WARM_MS
        const told = yield* Deferred.make<Pace>()
        yield* forkTracked(attempts, Effect.uninterruptible(takeAndStart(webhookId, head.claimed, cold, told)))
        const decision = yield* Deferred.await(told)
        if (decision._tag === "Wait") {
          yield* Effect.sleep(Duration.millis(Math.max(0, decision.at - Date.now())))
          continue
        }
        // Started.
        queue.shift()
        if (lastStart.size >= 10_000) lastStart.clear()
        lastStart.set(webhookId, now)
        // The limit was taken off: the rest need no pace.
        if (decision._tag === "Free") {
          for (const rest of queue.splice(0)) yield* startNow(rest.claimed)
        }
      }
    }).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause)
          ? Effect.failCause(cause)
          : Effect.logError("webhook pacing failed; its waiting deliveries are given back", cause).pipe(
              Effect.zipRight(
                Effect.suspend(() => {
                  queues.delete(webhookId)
                  return Effect.forEach(queue.splice(0), (rest) => options.giveBack(rest.claimed), { discard: true })
                })
              )
            )
      ),
      Effect.zipRight(options.wake)
    )

  return {
    /** Paces a claimed delivery of a webhook with a `rate_limit`. */
    add: (claimed: ClaimedDelivery): Effect.Effect<void> =>
      Effect.suspend(() => {
        const entry: Queued = { claimed, since: Date.now() }
        const queue = queues.get(claimed.webhook_id)
        if (queue !== undefined) {
          queue.push(entry)
          return Effect.void
        }
        const fresh = [entry]
        queues.set(claimed.webhook_id, fresh)
        return Effect.asVoid(forkTracked(pacers, pace(claimed.webhook_id, fresh)))
      }),
    /** The webhooks this process is pacing: the claim leaves their deliveries alone until their turn is over. */
    pacing: (): ReadonlyArray<string> => [...queues.keys()],
    /**
     * Shutdown: stops pacing (what has not started stays in the inbox's unstarted deliveries, given back with them)
     * and waits for the attempts started, within `timeout`.
     */
    stop: (timeout: Duration.Duration) =>
      Effect.gen(function* () {
        yield* Effect.forEach([...pacers], Fiber.interrupt, { discard: true })
        yield* Fiber.awaitAll([...attempts]).pipe(Effect.interruptible, Effect.timeout(timeout), Effect.ignore)
      })
  } as const
}

export type Pacer = ReturnType<typeof makePacer>
