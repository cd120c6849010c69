/**
 * The retry policy as one `Schedule`: attempt 1 at once, then the four waits (1 m, 5 m, 30 m, 2 h by default),
 * then give up. The worker steps this same value to compute the persisted `next_attempt_at`, so the timing
 * survives restarts; `Effect.retry` with it under `TestClock` proves the timing.
 */
import { Chunk, Duration, Effect, Option, Schedule } from "effect"

export type RetryPolicy = Schedule.Schedule<Duration.Duration, unknown>

export const retryPolicy = (waits: ReadonlyArray<Duration.Duration>): RetryPolicy => {
  const [first, ...rest] = waits
  return first === undefined ? Schedule.stop.pipe(Schedule.as(Duration.zero)) : Schedule.fromDelays(first, ...rest)
}

export const MAX_ATTEMPTS = 5

/**
 * The wait after the `failures`-th failed attempt, or none when the policy gives up. Steps the schedule from its
 * start through `failures` decisions.
 */
export const waitAfterFailure = (policy: RetryPolicy, failures: number): Effect.Effect<Option.Option<Duration.Duration>> =>
  Effect.map(
    Schedule.run(policy, 0, Array.from({ length: failures }, () => undefined)),
    (outputs) => Chunk.size(outputs) >= failures ? Chunk.get(outputs, failures - 1) : Option.none()
  )
