/**
 * Service methods as spans that cost nothing when tracing is off.
 *
 * `traced("Area.method")(function* (…) {…})` is `Effect.fn("Area.method", { captureStackTrace: false })(…)` with
 * tracing on: each call runs in a span of that name, the child of the caller's. With tracing off (no endpoint, or a
 * request the sampler left out: `FiberRef.currentTracerEnabled` is false) it is `Effect.fnUntraced`: no span at all.
 * `Effect.fn` pays on every call whether or not spans are recorded: an `Error` to capture its call site (even with
 * `captureStackTrace: false`), a no-op span, a write of the fiber's context for the parent span, and an exit hook.
 */
import { Effect, FiberRef } from "effect"
import type { YieldWrap } from "effect/Utils"

const spanOptions = { captureStackTrace: false } as const

/** Runs `effect` in a span named `name` when the fiber's tracer is on; as it is otherwise. */
export const inSpan =
  (name: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.withSpan(effect, name, spanOptions) : effect
    )

type ErrorOf<Eff> = [Eff] extends [never]
  ? never
  : [Eff] extends [YieldWrap<Effect.Effect<infer _A, infer E, infer _R>>]
    ? E
    : never
type ContextOf<Eff> = [Eff] extends [never]
  ? never
  : [Eff] extends [YieldWrap<Effect.Effect<infer _A, infer _E, infer R>>]
    ? R
    : never

/** A generator function as a method whose every call is a span named `name` when tracing is on (see above). */
export const traced =
  (name: string) =>
  <Eff extends YieldWrap<Effect.Effect<unknown, unknown, unknown>>, AEff, Args extends Array<unknown>>(
    body: (...args: Args) => Generator<Eff, AEff, never>
  ): ((...args: Args) => Effect.Effect<AEff, ErrorOf<Eff>, ContextOf<Eff>>) => {
    const run = Effect.fnUntraced(body)
    const span = inSpan(name)
    return (...args) => span(run(...args))
  }
