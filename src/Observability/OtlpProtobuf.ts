/**
 * OTLP/protobuf for traces (`ExportTraceServiceRequest`), each span written into its batch's buffer as it ends.
 * The encoder in @effect/opentelemetry builds a small array per field and concatenates them at every level, and
 * needs the spans turned into OTLP objects first: more work per span than making it.
 * test/observability/otlp-protobuf.test.ts checks that the bytes are the ones the library writes for the same
 * spans, except for negative integers, which it encodes wrongly (ours are ten-byte two's complement, as protobuf says).
 */
import type * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import * as HttpBody from "@effect/platform/HttpBody"
import { Inspectable } from "effect"
import { type EndedSpan, outcomeOf, spanKind } from "./OtlpSpan.js"

const VARINT = 0
const FIXED64 = 1
const LENGTH = 2

const encoder = new TextEncoder()

/** Hex digit → value, by character code. */
const NIBBLE = new Uint8Array(128)
for (let i = 0; i < 16; i++) {
  NIBBLE["0123456789abcdef".charCodeAt(i)] = i
  NIBBLE["0123456789ABCDEF".charCodeAt(i)] = i
}

class Writer {
  buffer: Uint8Array
  view: DataView
  position = 0

  constructor(size = 64 * 1024) {
    this.buffer = new Uint8Array(size)
    this.view = new DataView(this.buffer.buffer)
  }

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

  fixed64(field: number, value: bigint) {
    this.tag(field, FIXED64)
    this.ensure(8)
    this.view.setBigUint64(this.position, value, true)
    this.position += 8
  }

  double(field: number, value: number) {
    this.tag(field, FIXED64)
    this.ensure(8)
    this.view.setFloat64(this.position, value, true)
    this.position += 8
  }

  string(field: number, value: string) {
    const length = value.length
    this.tag(field, LENGTH)
    // Reserve the worst case (3 bytes per UTF-16 unit); ASCII, the usual case, is copied a byte per character.
    this.ensure(length * 3 + 5)
    if (length < 0x80) {
      const start = this.position
      const buffer = this.buffer
      let at = start + 1
      for (let i = 0; i < length; i++) {
        const c = value.charCodeAt(i)
        if (c >= 0x80) {
          at = -1
          break
        }
        buffer[at++] = c
      }
      if (at >= 0) {
        buffer[start] = length
        this.position = at
        return
      }
    }
    const start = this.begin()
    const { written } = encoder.encodeInto(value, this.buffer.subarray(this.position))
    this.position += written
    this.end(start)
  }

  /** Bytes already encoded. */
  raw(value: Uint8Array) {
    this.ensure(value.length)
    this.buffer.set(value, this.position)
    this.position += value.length
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
    for (let i = 0; i < length; i++) {
      this.buffer[this.position++] =
        ((NIBBLE[hex.charCodeAt(2 * i)] ?? 0) << 4) | (NIBBLE[hex.charCodeAt(2 * i + 1)] ?? 0)
    }
  }

  /** Starts a length-delimited body in place: one byte is reserved for its length; `end` writes it. */
  begin(): number {
    this.ensure(1)
    return this.position++
  }

  /** Ends the body `begin` started, widening its length prefix if the body needs more than one byte. */
  end(start: number) {
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

  /** A nested message as field `field`: returns where it started, for `end`. */
  open(field: number): number {
    this.tag(field, LENGTH)
    return this.begin()
  }

  result(): Uint8Array {
    return this.buffer.slice(0, this.position)
  }
}

/** An attribute value as OTLP `AnyValue`, by the rules of @effect/opentelemetry's `unknownToAttributeValue`. */
const unknownValue = (w: Writer, value: unknown): void => {
  if (Array.isArray(value)) {
    const list = w.open(5)
    for (const item of value) {
      const at = w.open(1)
      unknownValue(w, item)
      w.end(at)
    }
    w.end(list)
    return
  }
  switch (typeof value) {
    case "string":
      w.string(1, value)
      break
    case "boolean":
      w.tag(2, VARINT)
      w.varint(value ? 1 : 0)
      break
    case "number":
      if (Number.isInteger(value)) {
        w.tag(3, VARINT)
        w.int64(value)
      } else {
        w.double(4, value)
      }
      break
    case "bigint":
      w.tag(3, VARINT)
      w.int64(Number(value))
      break
    default:
      w.string(1, Inspectable.toStringUnknown(value))
  }
}

/** A `KeyValue` as field `field`. */
const keyValue = (w: Writer, field: number, key: string, value: unknown) => {
  const at = w.open(field)
  w.string(1, key)
  const inner = w.open(2)
  unknownValue(w, value)
  w.end(inner)
  w.end(at)
}

/** `KeyValue`s from `key, value, …` pairs, each a repeated `field`. */
const pairs = (w: Writer, field: number, list: ReadonlyArray<unknown>) => {
  for (let i = 0; i < list.length; i += 2) keyValue(w, field, list[i] as string, list[i + 1])
}

const record = (w: Writer, field: number, attributes: Record<string, unknown>) => {
  for (const key in attributes) keyValue(w, field, key, attributes[key])
}

/** `AnyValue` of an already-converted OTLP value (the resource's attributes). */
const anyValue = (w: Writer, value: OtlpResource.AnyValue): void => {
  if (value.stringValue !== undefined && value.stringValue !== null) {
    w.string(1, value.stringValue)
  } else if (value.boolValue !== undefined && value.boolValue !== null) {
    w.tag(2, VARINT)
    w.varint(value.boolValue ? 1 : 0)
  } else if (value.intValue !== undefined && value.intValue !== null) {
    w.tag(3, VARINT)
    w.int64(value.intValue)
  } else if (value.doubleValue !== undefined && value.doubleValue !== null) {
    w.double(4, value.doubleValue)
  } else if (value.arrayValue !== undefined) {
    const list = w.open(5)
    for (const item of value.arrayValue.values) {
      const at = w.open(1)
      anyValue(w, item)
      w.end(at)
    }
    w.end(list)
  } else if (value.kvlistValue !== undefined) {
    const list = w.open(6)
    for (const item of value.kvlistValue.values) otlpKeyValue(w, 1, item)
    w.end(list)
  } else if (value.bytesValue !== undefined) {
    w.bytes(7, value.bytesValue)
  }
}

const otlpKeyValue = (w: Writer, field: number, kv: OtlpResource.KeyValue) => {
  const at = w.open(field)
  w.string(1, kv.key)
  const inner = w.open(2)
  anyValue(w, kv.value)
  w.end(inner)
  w.end(at)
}

/** A `Span` message as field `field`. */
const span = (w: Writer, field: number, s: EndedSpan) => {
  const outcome = outcomeOf(s)
  const at = w.open(field)
  w.hex(1, s.traceId)
  w.hex(2, s.spanId)
  if (s.parent._tag === "Some") w.hex(4, s.parent.value.spanId)
  w.string(5, s.name)
  w.tag(6, VARINT)
  w.varint(spanKind[s.kind])
  w.fixed64(7, s.status.startTime)
  w.fixed64(8, s.status.endTime)
  pairs(w, 9, s.pairs)
  pairs(w, 9, outcome.pairs)
  for (const [name, time, attributes] of s.events ?? []) {
    const event = w.open(11)
    w.fixed64(1, time)
    w.string(2, name)
    if (attributes !== undefined) record(w, 3, attributes)
    w.end(event)
  }
  if (outcome.exception !== undefined) {
    const event = w.open(11)
    w.fixed64(1, s.status.endTime)
    w.string(2, "exception")
    record(w, 3, outcome.exception)
    w.end(event)
  }
  for (const link of s.links) {
    const at = w.open(13)
    w.hex(1, link.span.traceId)
    w.hex(2, link.span.spanId)
    record(w, 4, link.attributes)
    w.end(at)
  }
  const status = w.open(15)
  if (outcome.message !== undefined && outcome.message !== "") w.string(2, outcome.message)
  w.tag(3, VARINT)
  w.varint(outcome.code)
  w.end(status)
  w.end(at)
}

/**
 * Spans encoded the moment they end, each a `ScopeSpans.spans` field, until the batch is sent: a batch waiting
 * for export is one byte buffer, not thousands of objects for the garbage collector to trace.
 */
export class ProtobufSpans {
  private readonly w = new Writer()
  count = 0

  /** Encodes `s` at the end of the batch; if that throws, the batch is left as it was. */
  add(s: EndedSpan): void {
    const mark = this.w.position
    try {
      span(this.w, 2, s)
    } catch (error) {
      this.w.position = mark
      throw error
    }
    this.count++
  }

  /** The `ExportTraceServiceRequest`: the resource, one scope named after the service, and these spans. */
  request(resource: OtlpResource.Resource, scopeName: string): Uint8Array {
    const spans = this.w.buffer.subarray(0, this.w.position)
    const out = new Writer(spans.length + 1024)
    const resourceSpans = out.open(1)
    const resourceAt = out.open(1)
    for (const kv of resource.attributes) otlpKeyValue(out, 1, kv)
    out.end(resourceAt)
    const scopeSpans = out.open(2)
    const scope = out.open(1)
    out.string(1, scopeName)
    out.end(scope)
    out.raw(spans)
    out.end(scopeSpans)
    out.end(resourceSpans)
    return out.result()
  }

  body(resource: OtlpResource.Resource, scopeName: string): HttpBody.HttpBody {
    return HttpBody.uint8Array(this.request(resource, scopeName), "application/x-protobuf")
  }
}

export const encodeTraces = (
  resource: OtlpResource.Resource,
  scopeName: string,
  spans: ReadonlyArray<EndedSpan>
): Uint8Array => {
  const batch = new ProtobufSpans()
  for (const s of spans) batch.add(s)
  return batch.request(resource, scopeName)
}
