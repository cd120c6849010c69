/**
 * Requests in flight, and whether the process is draining. On shutdown the server stops taking new `/v1`
 * work (503 `unavailable`) and waits for what is in flight to finish before anything else is torn down.
 */
import { Duration, Effect, Layer, Ref, Schedule } from "effect"
import { ServerConfig } from "../Config.js"

export class Lifecycle extends Effect.Service<Lifecycle>()("Lifecycle", {
  effect: Effect.gen(function* () {
    const inFlight = yield* Ref.make(0)
    const draining = yield* Ref.make(false)

    /** Runs one request's work, counted, so shutdown can wait for it. */
    const track = <A, E, R>(work: Effect.Effect<A, E, R>) =>
      Effect.acquireUseRelease(
        Ref.update(inFlight, (n) => n + 1),
        () => work,
        () => Ref.update(inFlight, (n) => n - 1)
      )

    const drain = (timeout: Duration.Duration) =>
      Effect.gen(function* () {
        yield* Ref.set(draining, true)
        const waiting = yield* Ref.get(inFlight)
        yield* Effect.logInfo("draining", { in_flight: waiting })
        const idle = Effect.repeat(Ref.get(inFlight), {
          until: (n) => n === 0,
          schedule: Schedule.spaced(Duration.millis(20))
        })
        // Finalizers run uninterruptibly: the wait must be interruptible for the time-out to end it.
        const finished = yield* Effect.timeout(Effect.interruptible(idle), timeout).pipe(Effect.option)
        if (finished._tag === "None") yield* Effect.logWarning("shutdown timeout reached with requests in flight")
      })

    return { track, drain, isDraining: Ref.get(draining) } as const
  })
}) {}

/** Built after the server, so its finalizer (the drain) runs before the server's own. */
export const GracefulShutdown = Layer.scopedDiscard(
  Effect.gen(function* () {
    const lifecycle = yield* Lifecycle
    const { shutdownTimeout } = yield* Effect.orDie(ServerConfig)
    yield* Effect.addFinalizer(() => lifecycle.drain(shutdownTimeout))
  })
)
