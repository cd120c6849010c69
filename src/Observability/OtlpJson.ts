/**
 * OTLP/JSON for traces: our ended spans as the `ExportTraceServiceRequest` objects of the OTLP JSON encoding
 * (hex ids, nanosecond times as decimal strings), the shape @effect/opentelemetry's tracer sends.
 */
import * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import * as HttpBody from "@effect/platform/HttpBody"
import { type EndedSpan, outcomeOf, spanKind } from "./OtlpSpan.js"

const fromPairs = (pairs: ReadonlyArray<unknown>): Array<OtlpResource.KeyValue> => {
  const attributes: Array<OtlpResource.KeyValue> = []
  for (let i = 0; i < pairs.length; i += 2) {
    attributes.push({ key: pairs[i] as string, value: OtlpResource.unknownToAttributeValue(pairs[i + 1]) })
  }
  return attributes
}

const fromRecord = (record: Record<string, unknown> | undefined): Array<OtlpResource.KeyValue> =>
  record === undefined ? [] : OtlpResource.entriesToAttributes(Object.entries(record))

const event = (name: string, time: bigint, attributes: Record<string, unknown> | undefined) => ({
  name,
  timeUnixNano: String(time),
  attributes: fromRecord(attributes),
  droppedAttributesCount: 0
})

export const spanJson = (s: EndedSpan) => {
  const outcome = outcomeOf(s)
  const events = (s.events ?? []).map(([name, time, attributes]) => event(name, time, attributes))
  if (outcome.exception !== undefined) events.push(event("exception", s.status.endTime, outcome.exception))
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parent._tag === "Some" ? { parentSpanId: s.parent.value.spanId } : {}),
    name: s.name,
    kind: spanKind[s.kind],
    startTimeUnixNano: String(s.status.startTime),
    endTimeUnixNano: String(s.status.endTime),
    attributes: [...fromPairs(s.pairs), ...fromPairs(outcome.pairs)],
    droppedAttributesCount: 0,
    events,
    droppedEventsCount: 0,
    status: { code: outcome.code, ...(outcome.message !== undefined ? { message: outcome.message } : {}) },
    links: s.links.map((link) => ({
      traceId: link.span.traceId,
      spanId: link.span.spanId,
      attributes: fromRecord(link.attributes),
      droppedAttributesCount: 0
    })),
    droppedLinksCount: 0
  }
}

/** One `ExportTraceServiceRequest`: the resource, one scope named after the service, and the spans. */
export const tracesJson = (resource: OtlpResource.Resource, scopeName: string, spans: ReadonlyArray<EndedSpan>) => ({
  resourceSpans: [{ resource, scopeSpans: [{ scope: { name: scopeName }, spans: spans.map(spanJson) }] }]
})

/** Spans serialized the moment they end: one string each, nothing for the garbage collector to trace. */
export class JsonSpans {
  private readonly parts: Array<string> = []

  get count(): number {
    return this.parts.length
  }

  add(s: EndedSpan): void {
    this.parts.push(JSON.stringify(spanJson(s)))
  }

  /** The `ExportTraceServiceRequest` around these spans (the shape `tracesJson` gives). */
  request(resource: OtlpResource.Resource, scopeName: string): string {
    return `{"resourceSpans":[{"resource":${JSON.stringify(resource)},"scopeSpans":[{"scope":{"name":${JSON.stringify(
      scopeName
    )}},"spans":[${this.parts.join(",")}]}]}]}`
  }

  body(resource: OtlpResource.Resource, scopeName: string): HttpBody.HttpBody {
    return HttpBody.text(this.request(resource, scopeName), "application/json")
  }
}
