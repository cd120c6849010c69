import { OtlpSerialization } from "@effect/opentelemetry"
import { describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { encodeTraces, type TracesData } from "../../src/Observability/OtlpProtobuf.ts"

const libraryBytes = (data: TracesData) =>
  Effect.runSync(
    Effect.map(OtlpSerialization.OtlpSerialization, (serialization) => {
      const body = serialization.traces(data)
      if (body._tag !== "Uint8Array") throw new Error(`unexpected body ${body._tag}`)
      return body.body
    }).pipe(Effect.provide(OtlpSerialization.layerProtobuf))
  )

const span = (i: number, extra: Partial<TracesData["resourceSpans"][number]["scopeSpans"][number]["spans"][number]> = {}) => ({
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  spanId: (i + 0x1000000000).toString(16).padStart(16, "0"),
  ...(i > 0 ? { parentSpanId: "00f067aa0ba902b7" } : {}),
  name: `GET /v1/projects/:id #${i} — ünïcödé ✓`,
  kind: i % 5,
  startTimeUnixNano: "1763694000123456789",
  endTimeUnixNano: String(1763694000123456789n + BigInt(i) * 1000n),
  attributes: [
    { key: "http.route", value: { stringValue: "/v1/projects/:id" } },
    { key: "http.response.status_code", value: { intValue: 200 + i } },
    { key: "big", value: { intValue: 2 ** 40 + i } },
    { key: "ok", value: { boolValue: i % 2 === 0 } },
    { key: "ratio", value: { doubleValue: i / 3 } },
    { key: "list", value: { arrayValue: { values: [{ stringValue: "a" }, { intValue: 7 }] } } },
    { key: "map", value: { kvlistValue: { values: [{ key: "k", value: { stringValue: "v" } }] } } },
    { key: "long", value: { stringValue: "x".repeat(300 + i) } }
  ],
  droppedAttributesCount: 0,
  events: [{ timeUnixNano: "1763694000123456999", name: "exception", attributes: [], droppedAttributesCount: 0 }],
  droppedEventsCount: 0,
  links: [],
  droppedLinksCount: 0,
  status: i % 3 === 0 ? { code: 2, message: "boom" } : { code: 1 },
  ...extra
})

const data = (spans: number): TracesData => ({
  resourceSpans: [{
    resource: {
      attributes: [
        { key: "service.name", value: { stringValue: "project-collaboration-service" } },
        { key: "service.version", value: { stringValue: "0.1.0" } }
      ],
      droppedAttributesCount: 0
    },
    scopeSpans: [{ scope: { name: "project-collaboration-service" }, spans: Array.from({ length: spans }, (_, i) => span(i)) }]
  }]
})

describe("the fast OTLP trace encoder", () => {
  test("writes the same bytes as @effect/opentelemetry's encoder", () => {
    for (const n of [0, 1, 3, 200]) {
      const ours = encodeTraces(data(n))
      const theirs = libraryBytes(data(n))
      expect(ours.length).toBe(theirs.length)
      expect(Buffer.from(ours).equals(Buffer.from(theirs))).toBe(true)
    }
  })

  test("lengths past one varint byte and buffers past their first size are handled", () => {
    const large = data(2000) // several MiB: the buffer grows many times; nested lengths need 2–3 bytes
    expect(Buffer.from(encodeTraces(large)).equals(Buffer.from(libraryBytes(large)))).toBe(true)
  })
})
