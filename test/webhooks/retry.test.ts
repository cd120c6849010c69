// engine-independent: no database
import { describe, expect, test } from "bun:test"
import { Duration, Effect, Fiber, Option, Ref, TestClock, TestContext } from "effect"
import { MAX_ATTEMPTS, retryPolicy, waitAfterFailure } from "../../src/Webhooks/Delivery/Retry.ts"

const specWaits = [Duration.minutes(1), Duration.minutes(5), Duration.minutes(30), Duration.hours(2)]
const policy = retryPolicy(specWaits)

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.provide(effect, TestContext.TestContext))

describe("the retry Schedule", () => {
  test("under TestClock, attempts happen at 0, 1 m, 6 m, 36 m and 2 h 36 m, and then it gives up", async () => {
    const times = await run(
      Effect.gen(function* () {
        const attempts = yield* Ref.make<Array<number>>([])
        const failing = Effect.gen(function* () {
          const now = yield* TestClock.currentTimeMillis
          yield* Ref.update(attempts, (list) => [...list, now])
          return yield* Effect.fail("endpoint answered 500")
        })
        const fiber = yield* Effect.fork(Effect.retry(failing, policy))
        // Walk the clock forward a minute at a time for three hours: far past the last wait.
        for (let minute = 0; minute < 180; minute++) yield* TestClock.adjust(Duration.minutes(1))
        const exit = yield* Fiber.await(fiber)
        expect(exit._tag).toBe("Failure")
        return yield* Ref.get(attempts)
      })
    )
    expect(times.map((ms) => ms / 60_000)).toEqual([0, 1, 6, 36, 156])
    expect(times.length).toBe(MAX_ATTEMPTS)
  })

  test("no attempt comes a moment early", async () => {
    const count = await run(
      Effect.gen(function* () {
        const attempts = yield* Ref.make(0)
        const fiber = yield* Effect.fork(
          Effect.retry(
            Effect.zipRight(
              Ref.update(attempts, (n) => n + 1),
              Effect.fail("x")
            ),
            policy
          )
        )
        yield* TestClock.adjust(Duration.millis(59_999))
        const before = yield* Ref.get(attempts)
        yield* TestClock.adjust(Duration.millis(1))
        const after = yield* Ref.get(attempts)
        yield* Fiber.interrupt(fiber)
        return [before, after]
      })
    )
    expect(count).toEqual([1, 2])
  })

  test("the worker steps the same value: the wait after each failure, then none", async () => {
    const waits = await run(Effect.forEach([1, 2, 3, 4, 5, 6], (failures) => waitAfterFailure(policy, failures)))
    expect(waits.map(Option.map(Duration.toMinutes))).toEqual([
      Option.some(1),
      Option.some(5),
      Option.some(30),
      Option.some(120),
      Option.none(),
      Option.none()
    ])
  })

  test("WEBHOOK_RETRY_DELAYS-style overrides change the waits, not the number of attempts", async () => {
    const short = retryPolicy([Duration.millis(10), Duration.millis(20), Duration.millis(30), Duration.millis(40)])
    const waits = await run(Effect.forEach([1, 2, 3, 4, 5], (failures) => waitAfterFailure(short, failures)))
    expect(waits.map(Option.map(Duration.toMillis))).toEqual([
      Option.some(10),
      Option.some(20),
      Option.some(30),
      Option.some(40),
      Option.none()
    ])
  })
})
