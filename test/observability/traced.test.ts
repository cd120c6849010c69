// engine-independent: no database
/**
 * `traced("Area.method")`: a span of that name, the child of the caller's, with the tracer on; no span at all (not
 * even a no-op one) with it off; the method's result and typed failure unchanged either way. Functions after the
 * body wrap each call's effect, in order, given the call's arguments too, inside the span (as with `Effect.fn`).
 */
import { describe, expect, test } from "bun:test"
import { Effect, Exit, Layer, Option } from "effect"
import type { EndedSpan } from "../../src/Observability/OtlpSpan.ts"
import { traced } from "../../src/Observability/Traced.ts"
import { makeTracer } from "../../src/Observability/Tracer.ts"

class Refused extends Error {
  readonly _tag = "Refused"
}

const double = traced("Area.double")(function* (n: number) {
  if (n < 0) return yield* Effect.fail(new Refused("negative"))
  const inner = yield* Effect.option(Effect.currentSpan)
  return { value: n * 2, spanName: Option.map(inner, (span) => span.name) }
})

const run = <A, E>(effect: Effect.Effect<A, E>, tracerEnabled: boolean) => {
  const ended: Array<EndedSpan> = []
  const exit = Effect.runSyncExit(
    effect.pipe(
      Effect.withSpan("caller"),
      Effect.withTracerEnabled(tracerEnabled),
      Effect.provide(Layer.setTracer(makeTracer((span) => ended.push(span))))
    )
  )
  return { exit, ended }
}

describe("traced", () => {
  test("tracer on: each call is a span named after the method, inside the caller's span", () => {
    const { exit, ended } = run(double(21), true)
    expect(exit).toEqual(Exit.succeed({ value: 42, spanName: Option.some("Area.double") }))
    expect(ended.map((span) => span.name)).toEqual(["Area.double", "caller"])
    const [method, caller] = ended
    expect(Option.map(method!.parent, (parent) => parent.spanId)).toEqual(Option.some(caller!.spanId))
    expect(method!.traceId).toBe(caller!.traceId)
  })

  test("tracer on: a failure ends the span as failed and is the method's typed failure", () => {
    const { exit, ended } = run(double(-1), true)
    expect(Exit.isFailure(exit)).toBe(true)
    expect(ended.map((span) => [span.name, span.status._tag === "Ended" && Exit.isFailure(span.status.exit)])).toEqual([
      ["Area.double", true],
      ["caller", true]
    ])
  })

  test("tracer off: no span is made, not even a no-op one the method could see", () => {
    const { exit, ended } = run(double(21), false)
    expect(ended).toEqual([])
    // `Effect.fn` would have put a no-op span named after the method in the context.
    expect(exit).toEqual(Exit.succeed({ value: 42, spanName: Option.some("caller") }))
  })

  test("functions after the body wrap each call's effect, in order, with the call's arguments, inside the span", () => {
    const seen: Array<string> = []
    const wrapped = traced("Area.wrapped")(
      function* (n: number) {
        seen.push(`body ${n}`)
        const inner = yield* Effect.option(Effect.currentSpan)
        return { value: n + 1, spanName: Option.map(inner, (span) => span.name) }
      },
      (effect, n) => Effect.tap(effect, () => Effect.sync(() => seen.push(`first ${n}`))),
      (effect) => Effect.map(effect, (result) => ({ ...result, value: result.value * 10 }))
    )
    const { exit, ended } = run(wrapped(4), true)
    expect(exit).toEqual(Exit.succeed({ value: 50, spanName: Option.some("Area.wrapped") }))
    expect(seen).toEqual(["body 4", "first 4"])
    expect(ended.map((span) => span.name)).toEqual(["Area.wrapped", "caller"])
    const recovered = traced("Area.recovered")(
      function* (n: number) {
        return n < 0 ? yield* Effect.fail(new Refused("negative")) : n
      },
      Effect.catchTag("Refused", () => Effect.succeed(0))
    )
    expect(run(recovered(-3), false).exit).toEqual(Exit.succeed(0))
  })

  test("each call runs the body afresh", () => {
    const effect = double(1)
    expect(Effect.runSync(effect).value).toBe(2)
    expect(Effect.runSync(effect).value).toBe(2)
    expect(Effect.runSync(double(5)).value).toBe(10)
  })
})
