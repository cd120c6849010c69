/**
 * The retry policy as one `Schedule`: attempt 1 at once, then the four waits (1 m, 5 m, 30 m, 2 h by default),
 * then give up. The worker steps this same value to compute the persisted `next_attempt_at`, so the timing
 * survives restarts; `Effect.retry` with it under `TestClock` proves the timing.
 */
import { Duration, Effect, Option, Schedule, ScheduleDecision } from "effect"

export type RetryPolicy = Schedule.Schedule<Duration.Duration, unknown>

export const retryPolicy = (waits: ReadonlyArray<Duration.Duration>): RetryPolicy => {
  const [first, ...rest] = waits
  return first === undefined ? Schedule.stop.pipe(Schedule.as(Duration.zero)) : Schedule.fromDelays(first, ...rest)
}

export const MAX_ATTEMPTS = 5

/**
 * The wait after the `failures`-th failed attempt, or none when the policy gives up: steps the schedule from its
 * initial state through `failures` decisions, exactly as `Effect.retry` would.
 */
export const waitAfterFailure = (
  policy: RetryPolicy,
  failures: number
): Effect.Effect<Option.Option<Duration.Duration>> =>
  Effect.gen(function* () {
    let state = policy.initial
    let now = 0
    for (let step = 1; step <= failures; step++) {
      const [next, wait, decision] = yield* policy.step(now, undefined, state)
      if (ScheduleDecision.isDone(decision)) return Option.none()
      if (step === failures) return Option.some(wait)
      state = next
      now += Duration.toMillis(wait)
    }
    return Option.none()
  })
