/**
 * Requests in flight, and whether the process is draining. On shutdown the server stops taking new `/v1`
 * work (503 `unavailable`) and waits for what is in flight to finish before anything else is torn down.
 */
import { Duration, Effect, Layer, Schedule } from "effect"
import { ServerConfig } from "../Config.js"

export class Lifecycle extends Effect.Service<Lifecycle>()("Lifecycle", {
  effect: Effect.gen(function* () {
    // Plain counters: every request touches them, and a `Ref` plus `acquireUseRelease` cost several fiber steps
    // each; one thread updates them, and the mask keeps the count exact under interruption.
    let inFlight = 0
    let drainingNow = false
    const currentInFlight = Effect.sync(() => inFlight)
    const draining = {
      get: Effect.sync(() => drainingNow),
      set: Effect.sync(() => {
        drainingNow = true
      })
    }
    const leave = Effect.sync(() => {
      inFlight--
    })

    /** Runs one request's work, counted, so shutdown can wait for it. */
    const track = <A, E, R>(work: Effect.Effect<A, E, R>) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          inFlight++
          return Effect.ensuring(restore(work), leave)
        })
      )

    /**
     * The same count as plain calls, for the server's per-request wrapper, which runs uninterruptibly (the
     * platform serves each request in an uninterruptible region) and calls `exit` once its work has ended.
     */
    const unsafe = {
      enter: (): void => {
        inFlight++
      },
      exit: (): void => {
        inFlight--
      },
      isDraining: (): boolean => drainingNow
    } as const

    const drain = (timeout: Duration.Duration) =>
      Effect.gen(function* () {
        yield* draining.set
        const waiting = yield* currentInFlight
        yield* Effect.logInfo("draining", { in_flight: waiting })
        const idle = Effect.repeat(currentInFlight, {
          until: (n) => n === 0,
          schedule: Schedule.spaced(Duration.millis(20))
        })
        // Finalizers run uninterruptibly: the wait must be interruptible for the time-out to end it.
        const finished = yield* Effect.timeout(Effect.interruptible(idle), timeout).pipe(Effect.option)
        if (finished._tag === "None") yield* Effect.logWarning("shutdown timeout reached with requests in flight")
      })

    return { track, unsafe, drain, isDraining: draining.get } as const
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
