/** W3C trace context (`traceparent`) to and from Effect spans. */
import { Option, Tracer } from "effect"

/** `00-<trace id>-<span id>-<flags>` for a span. */
export const traceparentOf = (span: Tracer.AnySpan): string =>
  `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The remote parent a `traceparent` names, if it is well-formed (and not all zeros). */
export const parseTraceparent = (value: string | null | undefined): Option.Option<Tracer.ExternalSpan> => {
  const match = TRACEPARENT.exec(value ?? "")
  if (match === null || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return Option.none()
  return Option.some(Tracer.externalSpan({
    traceId: match[1]!,
    spanId: match[2]!,
    sampled: (parseInt(match[3]!, 16) & 1) === 1
  }))
}
