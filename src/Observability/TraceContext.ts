/**
 * W3C trace context for what crosses a process boundary outside a request: the `traceparent` kept with an event
 * and sent with each delivery attempt. Written and read by the platform's `HttpTraceContext` — the same parser the
 * server uses for incoming requests — so there is one set of rules.
 */
import * as Headers from "@effect/platform/Headers"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import { Effect, FiberRef, Option, type Tracer } from "effect"

/** `00-<trace id>-<span id>-<flags>` for a span. */
export const traceparentOf = (span: Tracer.Span): Option.Option<string> =>
  Headers.get(HttpTraceContext.toHeaders(span), "traceparent")

/**
 * The `traceparent` to pass on from where the fiber is: its span's, when tracing is on. None with tracing off (or
 * for a request the sampler left out): the spans the fiber is in are then no-ops, whose `traceparent` would be
 * `00-noop-noop-00`, and asking for the span to propagate would fail, with an error that captures a stack trace.
 */
export const currentTraceparent: Effect.Effect<Option.Option<string>> = Effect.flatMap(
  FiberRef.get(FiberRef.currentTracerEnabled),
  (enabled) =>
    enabled
      ? Effect.map(Effect.option(Effect.currentPropagatedSpan), Option.flatMap(traceparentOf))
      : Effect.succeedNone
)

/** The remote parent a stored `traceparent` names, if it is well-formed. */
export const parentOf = (traceparent: string | null | undefined): Option.Option<Tracer.ExternalSpan> =>
  traceparent === null || traceparent === undefined
    ? Option.none()
    : HttpTraceContext.w3c(Headers.unsafeFromRecord({ traceparent }))

const hex = (bytes: number): string => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex")

/**
 * A `traceparent` for a call made without a span (tracing off): the parent's trace and sampled flag (a new trace,
 * sampled, without one), and a fresh span id — what a span of that parent would have sent.
 */
export const untracedTraceparent = (parent: Option.Option<Tracer.ExternalSpan>): string =>
  Option.match(parent, {
    onNone: () => `00-${hex(16)}-${hex(8)}-01`,
    onSome: (span) => `00-${span.traceId}-${hex(8)}-${span.sampled ? "01" : "00"}`
  })
