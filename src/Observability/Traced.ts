/**
 * Service methods as spans that cost nothing when tracing is off.
 *
 * `traced("Area.method")(function* (…) {…})` is `Effect.fn("Area.method", { captureStackTrace: false })(…)` with
 * tracing on: each call runs in a span of that name, the child of the caller's. With tracing off (no endpoint, or a
 * request the sampler left out: `FiberRef.currentTracerEnabled` is false) it is `Effect.fnUntraced`: no span at all.
 * `Effect.fn` pays on every call whether or not spans are recorded: an `Error` to capture its call site (even with
 * `captureStackTrace: false`), a no-op span, a write of the fiber's context for the parent span, and an exit hook.
 * Kept instead of `Effect.fn` for what that costs a request: bench/README.md, "Service methods: `traced` against
 * `Effect.fn`" (`bench/fn.ts` measures it).
 */
import { Effect, FiberRef } from "effect"

const spanOptions = { captureStackTrace: false } as const

/** Runs `effect` in a span named `name` when the fiber's tracer is on; as it is otherwise. */
export const inSpan =
  (name: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.withSpan(effect, name, spanOptions) : effect
    )

/**
 * A generator function as a method whose every call is a span named `name` when tracing is on (see above). Typed
 * as `Effect.fn(name)`: any functions after the body wrap each call's effect, as with `Effect.fn` (e.g.
 * `traced("Projects.update")(function* (…) {…}, events.transaction)`), so a method that runs in a transaction still
 * has its generator function made once, not one per call.
 */
export const traced = (name: string): Effect.fn.Gen => {
  const span = inSpan(name)
  const make: Untyped = (...definition) => {
    const run = (Effect.fnUntraced as unknown as Untyped)(...definition)
    return (...args) => span(run(...args))
  }
  // `Effect.fn.Gen` is a list of overloads (by the number of functions after the body); one implementation serves
  // them all, as `Effect.fnUntraced`'s own does.
  return make as unknown as Effect.fn.Gen
}

/** `Effect.fnUntraced` with its overloads erased: the body and the functions after it, to a method. */
type Untyped = (
  ...definition: ReadonlyArray<unknown>
) => (...args: ReadonlyArray<unknown>) => Effect.Effect<unknown, unknown, unknown>
