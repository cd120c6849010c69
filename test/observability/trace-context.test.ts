// engine-independent: no database
/**
 * The `traceparent` a delivery attempt sends when tracing is off (no span is made): it continues the event's trace
 * with a fresh span id and the parent's sampled flag, or starts a trace when the event has none. And the one an
 * event keeps: its request's span's, none with tracing off.
 */
import { describe, expect, test } from "bun:test"
import { Effect, Option } from "effect"
import { currentTraceparent, parentOf, untracedTraceparent } from "../../src/Observability/TraceContext.ts"

const FORMAT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/

describe("untracedTraceparent", () => {
  test("continues the stored trace: same trace id and flags, a new span id each time", () => {
    for (const flags of ["01", "00"]) {
      const stored = `00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-${flags}`
      const first = untracedTraceparent(parentOf(stored)).match(FORMAT)
      const second = untracedTraceparent(parentOf(stored)).match(FORMAT)
      expect(first?.[1]).toBe("0af7651916cd43dd8448eb211c80319c")
      expect(first?.[3]).toBe(flags)
      expect(first?.[2]).not.toBe("b7ad6b7169203331")
      expect(first?.[2]).not.toBe(second?.[2])
    }
  })

  test("without a stored trace (or with a malformed one), a new sampled trace", () => {
    for (const parent of [Option.none(), parentOf("garbage")]) {
      const sent = untracedTraceparent(parent).match(FORMAT)
      expect(sent).not.toBeNull()
      expect(sent?.[3]).toBe("01")
    }
  })
})

describe("currentTraceparent", () => {
  test("with tracing on, the span's own: its trace id and span id, sampled", () => {
    const [traceparent, span] = Effect.runSync(
      Effect.zip(currentTraceparent, Effect.currentSpan).pipe(Effect.withSpan("request"))
    )
    expect(traceparent).toEqual(Option.some(`00-${span.traceId}-${span.spanId}-01`))
    expect(Option.getOrThrow(traceparent)).toMatch(FORMAT)
  })

  test("none with tracing off, though the fiber is in a (no-op) span, and none outside any span", () => {
    const off = Effect.runSync(currentTraceparent.pipe(Effect.withSpan("request"), Effect.withTracerEnabled(false)))
    expect(off).toEqual(Option.none())
    expect(Effect.runSync(currentTraceparent)).toEqual(Option.none())
  })
})
