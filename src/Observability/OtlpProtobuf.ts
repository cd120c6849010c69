/**
 * A fast OTLP/protobuf encoder for traces (`ExportTraceServiceRequest`). The one in @effect/opentelemetry builds a
 * small array per field and concatenates them at every level, which costs more CPU than the spans themselves
 * (measured in bench/README.md); this writes into one growing buffer. Same fields, same order, same bytes
 * (test/observability/otlp-protobuf.test.ts compares them). Metrics and logs keep the library's encoder.
 */
import { HttpBody } from "@effect/platform"
import { OtlpSerialization } from "@effect/opentelemetry"
import { Effect, Layer } from "effect"

interface AnyValue {
  readonly stringValue?: string | null
  readonly boolValue?: boolean | null
  readonly intValue?: number | null
  readonly doubleValue?: number | null
  readonly arrayValue?: { readonly values: ReadonlyArray<AnyValue> }
  readonly kvlistValue?: { readonly values: ReadonlyArray<KeyValue> }
  readonly bytesValue?: Uint8Array
}
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}
interface SpanEvent {
  readonly timeUnixNano: string
  readonly name: string
  readonly attributes: ReadonlyArray<KeyValue>
  readonly droppedAttributesCount: number
}
interface SpanLink {
  readonly traceId: string
  readonly spanId: string
  readonly traceState?: string
  readonly attributes: ReadonlyArray<KeyValue>
  readonly droppedAttributesCount: number
  readonly flags?: number
}
interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly traceState?: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: ReadonlyArray<KeyValue>
  readonly droppedAttributesCount: number
  readonly events: ReadonlyArray<SpanEvent>
  readonly droppedEventsCount: number
  readonly links: ReadonlyArray<SpanLink>
  readonly droppedLinksCount: number
  readonly status: { readonly code: number; readonly message?: string }
  readonly flags?: number
}
export interface TracesData {
  readonly resourceSpans: ReadonlyArray<{
    readonly resource: { readonly attributes: ReadonlyArray<KeyValue>; readonly droppedAttributesCount: number }
    readonly scopeSpans: ReadonlyArray<{
      readonly scope: {
        readonly name: string
        readonly version?: string
        readonly attributes?: ReadonlyArray<KeyValue>
        readonly droppedAttributesCount?: number
      }
      readonly spans: ReadonlyArray<Span>
      readonly schemaUrl?: string
    }>
    readonly schemaUrl?: string
  }>
}

const VARINT = 0
const FIXED64 = 1
const LENGTH = 2
const FIXED32 = 5

const encoder = new TextEncoder()

class Writer {
  buffer = new Uint8Array(64 * 1024)
  view = new DataView(this.buffer.buffer)
  position = 0

  ensure(extra: number) {
    if (this.position + extra <= this.buffer.length) return
    let size = this.buffer.length * 2
    while (size < this.position + extra) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buffer.subarray(0, this.position))
    this.buffer = next
    this.view = new DataView(next.buffer)
  }

  /** An unsigned varint below 2^53. */
  varint(value: number) {
    this.ensure(10)
    let n = value
    while (n > 0x7f) {
      this.buffer[this.position++] = (n % 128) | 0x80
      n = Math.floor(n / 128)
    }
    this.buffer[this.position++] = n
  }

  /** A signed 64-bit integer as protobuf `int64` (two's complement, so negatives take ten bytes). */
  int64(value: number) {
    if (value >= 0 && Number.isSafeInteger(value)) return this.varint(value)
    let n = BigInt.asUintN(64, BigInt(Math.trunc(value)))
    this.ensure(10)
    while (n > 0x7fn) {
      this.buffer[this.position++] = Number(n & 0x7fn) | 0x80
      n >>= 7n
    }
    this.buffer[this.position++] = Number(n)
  }

  tag(field: number, wire: number) {
    this.varint(field * 8 + wire)
  }

  fixed64(field: number, decimal: string) {
    this.tag(field, FIXED64)
    this.ensure(8)
    this.view.setBigUint64(this.position, BigInt(decimal), true)
    this.position += 8
  }

  fixed32(field: number, value: number) {
    this.tag(field, FIXED32)
    this.ensure(4)
    this.view.setUint32(this.position, value, true)
    this.position += 4
  }

  double(field: number, value: number) {
    this.tag(field, FIXED64)
    this.ensure(8)
    this.view.setFloat64(this.position, value, true)
    this.position += 8
  }

  string(field: number, value: string) {
    this.tag(field, LENGTH)
    // Reserve the worst case (3 bytes per UTF-16 unit), write, then fix the length prefix.
    this.nested(() => {
      this.ensure(value.length * 3)
      const { written } = encoder.encodeInto(value, this.buffer.subarray(this.position))
      this.position += written
    })
  }

  optionalString(field: number, value: string | undefined) {
    if (value !== undefined && value !== "") this.string(field, value)
  }

  bytes(field: number, value: Uint8Array) {
    this.tag(field, LENGTH)
    this.varint(value.length)
    this.ensure(value.length)
    this.buffer.set(value, this.position)
    this.position += value.length
  }

  hex(field: number, hex: string) {
    const length = hex.length >> 1
    this.tag(field, LENGTH)
    this.varint(length)
    this.ensure(length)
    for (let i = 0; i < length; i++) this.buffer[this.position++] = parseInt(hex.substr(i * 2, 2), 16)
  }

  /** A length-delimited body written in place: one byte is reserved for the length and widened if needed. */
  nested(body: () => void) {
    this.ensure(1)
    const start = this.position++
    body()
    const length = this.position - start - 1
    if (length < 0x80) {
      this.buffer[start] = length
      return
    }
    let size = 1
    for (let n = length; n > 0x7f; n = Math.floor(n / 128)) size++
    this.ensure(size - 1)
    this.buffer.copyWithin(start + size, start + 1, this.position)
    this.position += size - 1
    let n = length
    let at = start
    while (n > 0x7f) {
      this.buffer[at++] = (n % 128) | 0x80
      n = Math.floor(n / 128)
    }
    this.buffer[at] = n
  }

  message(field: number, body: () => void) {
    this.tag(field, LENGTH)
    this.nested(body)
  }

  result(): Uint8Array {
    return this.buffer.slice(0, this.position)
  }
}

const anyValue = (w: Writer, value: AnyValue) => {
  if (value.stringValue !== undefined && value.stringValue !== null) return w.string(1, value.stringValue)
  if (value.boolValue !== undefined && value.boolValue !== null) {
    w.tag(2, VARINT)
    return w.varint(value.boolValue ? 1 : 0)
  }
  if (value.intValue !== undefined && value.intValue !== null) {
    w.tag(3, VARINT)
    return w.int64(value.intValue)
  }
  if (value.doubleValue !== undefined && value.doubleValue !== null) return w.double(4, value.doubleValue)
  if (value.arrayValue !== undefined) {
    const values = value.arrayValue.values
    return w.message(5, () => values.forEach((item) => w.message(1, () => anyValue(w, item))))
  }
  if (value.kvlistValue !== undefined) {
    const values = value.kvlistValue.values
    return w.message(6, () => values.forEach((item) => w.message(1, () => keyValue(w, item))))
  }
  if (value.bytesValue !== undefined) return w.bytes(7, value.bytesValue)
}

const keyValue = (w: Writer, kv: KeyValue) => {
  w.string(1, kv.key)
  w.message(2, () => anyValue(w, kv.value))
}

const attributes = (w: Writer, field: number, list: ReadonlyArray<KeyValue>) => {
  for (const kv of list) w.message(field, () => keyValue(w, kv))
}

const count = (w: Writer, field: number, value: number | undefined) => {
  if (value !== undefined && value > 0) {
    w.tag(field, VARINT)
    w.varint(value)
  }
}

const span = (w: Writer, s: Span) => {
  w.hex(1, s.traceId)
  w.hex(2, s.spanId)
  w.optionalString(3, s.traceState)
  if (s.parentSpanId !== undefined) w.hex(4, s.parentSpanId)
  w.string(5, s.name)
  w.tag(6, VARINT)
  w.varint(s.kind)
  w.fixed64(7, s.startTimeUnixNano)
  w.fixed64(8, s.endTimeUnixNano)
  attributes(w, 9, s.attributes)
  count(w, 10, s.droppedAttributesCount)
  for (const event of s.events) {
    w.message(11, () => {
      w.fixed64(1, event.timeUnixNano)
      w.string(2, event.name)
      attributes(w, 3, event.attributes)
      count(w, 4, event.droppedAttributesCount)
    })
  }
  count(w, 12, s.droppedEventsCount)
  for (const link of s.links) {
    w.message(13, () => {
      w.hex(1, link.traceId)
      w.hex(2, link.spanId)
      w.optionalString(3, link.traceState)
      attributes(w, 4, link.attributes)
      count(w, 5, link.droppedAttributesCount)
      if (link.flags !== undefined) w.fixed32(6, link.flags)
    })
  }
  count(w, 14, s.droppedLinksCount)
  w.message(15, () => {
    w.optionalString(2, s.status.message)
    w.tag(3, VARINT)
    w.varint(s.status.code)
  })
  if (s.flags !== undefined) w.fixed32(16, s.flags)
}

export const encodeTraces = (data: TracesData): Uint8Array => {
  const w = new Writer()
  for (const resourceSpans of data.resourceSpans) {
    w.message(1, () => {
      w.message(1, () => {
        attributes(w, 1, resourceSpans.resource.attributes)
        count(w, 2, resourceSpans.resource.droppedAttributesCount)
      })
      for (const scopeSpans of resourceSpans.scopeSpans) {
        w.message(2, () => {
          w.message(1, () => {
            w.string(1, scopeSpans.scope.name)
            w.optionalString(2, scopeSpans.scope.version)
            if (scopeSpans.scope.attributes !== undefined) attributes(w, 3, scopeSpans.scope.attributes)
            count(w, 4, scopeSpans.scope.droppedAttributesCount)
          })
          for (const s of scopeSpans.spans) w.message(2, () => span(w, s))
          w.optionalString(3, scopeSpans.schemaUrl)
        })
      }
      w.optionalString(3, resourceSpans.schemaUrl)
    })
  }
  return w.result()
}

const isTracesData = (data: unknown): data is TracesData =>
  data !== null && typeof data === "object" && "resourceSpans" in data && Array.isArray(data.resourceSpans)

/** The library's protobuf serialization, with this encoder for traces. */
export const layerProtobuf: Layer.Layer<OtlpSerialization.OtlpSerialization> = Layer.effect(
  OtlpSerialization.OtlpSerialization,
  Effect.map(OtlpSerialization.OtlpSerialization, (library) => ({
    ...library,
    traces: (data: unknown) =>
      isTracesData(data) ? HttpBody.uint8Array(encodeTraces(data), "application/x-protobuf") : library.traces(data)
  }))
).pipe(Layer.provide(OtlpSerialization.layerProtobuf))
