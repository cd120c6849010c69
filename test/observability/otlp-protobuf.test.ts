// engine-independent: no database
/**
 * Our OTLP encoders, fed spans made by our tracer: the protobuf bytes must be exactly the ones
 * @effect/opentelemetry's own encoder writes for the OTLP/JSON objects of the same spans.
 */

import { describe, expect, test } from "bun:test"
import { OtlpResource, OtlpSerialization } from "@effect/opentelemetry"
import { Effect, Fiber, Layer, Tracer } from "effect"
import { JsonSpans, tracesJson } from "../../src/Observability/OtlpJson.ts"
import { encodeTraces } from "../../src/Observability/OtlpProtobuf.ts"
import type { EndedSpan } from "../../src/Observability/OtlpSpan.ts"
import { makeTracer } from "../../src/Observability/Tracer.ts"

const resource = OtlpResource.make({
  serviceName: "project-collaboration-service",
  serviceVersion: "0.1.0",
  attributes: { "deployment.environment": "test", "host.cores": 2 }
})
const scope = "project-collaboration-service"

const libraryBytes = (spans: ReadonlyArray<EndedSpan>) =>
  Effect.runSync(
    Effect.map(OtlpSerialization.OtlpSerialization, (serialization) => {
      const body = serialization.traces(tracesJson(resource, scope, spans))
      if (body._tag !== "Uint8Array") throw new Error(`unexpected body ${body._tag}`)
      return body.body
    }).pipe(Effect.provide(OtlpSerialization.layerProtobuf))
  )

/** Runs `program` under our tracer and returns the spans it ended. */
const collect = <A, E>(program: Effect.Effect<A, E>): Array<EndedSpan> => {
  const spans: Array<EndedSpan> = []
  Effect.runSync(Effect.exit(program.pipe(Effect.provide(Layer.setTracer(makeTracer((span) => spans.push(span)))))))
  return spans
}

const remoteParent = Tracer.externalSpan({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7" })

/** Every kind of attribute value, events, links, a remote parent, failure and interruption. */
const varied = (i: number) =>
  Effect.gen(function* () {
    yield* Effect.annotateCurrentSpan({
      "http.route": "/v1/projects/:id",
      "http.response.status_code": 200 + i,
      big: 2 ** 40 + i,
      ratio: i / 3,
      ok: i % 2 === 0,
      count: BigInt(i),
      list: ["a", 7, true],
      object: { nested: { value: i } },
      empty: "",
      long: "x".repeat(300 + i),
      unicode: "ünïcödé ✓ 🚀"
    })
    const span = yield* Effect.currentSpan
    span.event("checkpoint", 1763694000123456999n, { step: i, label: "half-way" })
    span.event("bare", 1763694000123457000n)
    yield* Effect.void.pipe(
      Effect.withSpan("child", {
        kind: "client",
        links: [{ _tag: "SpanLink", span: remoteParent, attributes: { why: "batch" } }]
      })
    )
    if (i % 3 === 1) return yield* Effect.fail(new Error(`boom ${i}`))
    if (i % 3 === 2) return yield* Effect.interrupt
  }).pipe(Effect.withSpan(`GET /v1/projects/:id #${i}`, { kind: "server", parent: remoteParent }))

describe("the OTLP trace encoders", () => {
  test("protobuf: the same bytes as @effect/opentelemetry's encoder, for every kind of span", () => {
    const spans = [0, 1, 2, 3, 4, 5].flatMap((i) => collect(varied(i)))
    expect(spans.length).toBe(12)
    for (const n of [0, 1, 2, spans.length]) {
      const ours = encodeTraces(resource, scope, spans.slice(0, n))
      expect(Buffer.from(ours).equals(Buffer.from(libraryBytes(spans.slice(0, n))))).toBe(true)
    }
  })

  test("protobuf: a negative integer is a ten-byte two's-complement int64 (the library's encoder gets this wrong)", () => {
    const [span] = collect(Effect.void.pipe(Effect.withSpan("negative", { attributes: { n: -5 } })))
    const hex = Buffer.from(encodeTraces(resource, scope, [span!])).toString("hex")
    // KeyValue { key: "n", value: AnyValue { int_value (field 3, varint): -5 } }
    expect(hex).toContain("0a016e120b18fbffffffffffffffff01")
  })

  test("JSON: the batch text is the document of the same spans", () => {
    const spans = [0, 1, 2].flatMap((i) => collect(varied(i)))
    const batch = new JsonSpans()
    for (const span of spans) batch.add(span)
    expect(JSON.parse(batch.request(resource, scope))).toEqual(
      JSON.parse(JSON.stringify(tracesJson(resource, scope, spans)))
    )
  })

  test("JSON: ids, times, kinds, parents, status and the exception event", () => {
    const spans = collect(varied(1))
    const [child, server] = tracesJson(resource, scope, spans).resourceSpans[0]!.scopeSpans[0]!.spans
    expect(server).toMatchObject({
      traceId: remoteParent.traceId,
      parentSpanId: remoteParent.spanId,
      name: "GET /v1/projects/:id #1",
      kind: 2,
      status: { code: 2, message: "boom 1" }
    })
    expect(server!.spanId).toMatch(/^[0-9a-f]{16}$/)
    expect(BigInt(server!.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(server!.startTimeUnixNano))
    expect(server!.attributes).toContainEqual({ key: "big", value: { intValue: 2 ** 40 + 1 } })
    expect(server!.attributes).toContainEqual({ key: "ratio", value: { doubleValue: 1 / 3 } })
    expect(server!.events.map((event) => event.name)).toEqual(["checkpoint", "bare", "exception"])
    expect(server!.events[2]!.attributes).toContainEqual({ key: "exception.message", value: { stringValue: "boom 1" } })
    expect(child).toMatchObject({ name: "child", kind: 3, traceId: remoteParent.traceId, parentSpanId: server!.spanId })
    expect(child!.links).toEqual([
      {
        traceId: remoteParent.traceId,
        spanId: remoteParent.spanId,
        attributes: [{ key: "why", value: { stringValue: "batch" } }],
        droppedAttributesCount: 0
      }
    ])

    const [, interrupted] = tracesJson(resource, scope, collect(varied(2))).resourceSpans[0]!.scopeSpans[0]!.spans
    expect(interrupted!.status).toEqual({ code: 1 })
    expect(interrupted!.attributes).toContainEqual({ key: "status.interrupted", value: { boolValue: true } })
  })

  test("a root span gets a new trace id; ids are hex and never all zeros", () => {
    const spans = Array.from({ length: 200 }, () => collect(Effect.void.pipe(Effect.withSpan("root")))[0]!)
    const traceIds = new Set(spans.map((span) => span.traceId))
    expect(traceIds.size).toBe(200)
    for (const span of spans) {
      expect(span.traceId).toMatch(/^(?!0+$)[0-9a-f]{32}$/)
      expect(span.spanId).toMatch(/^(?!0+$)[0-9a-f]{16}$/)
      expect(span.parent._tag).toBe("None")
    }
  })

  // Encodes several MiB twice: seconds of CPU on a loaded machine, so a time-out of its own.
  test("lengths past one varint byte and buffers past their first size are handled", () => {
    const spans = Array.from({ length: 1500 }, (_, i) => collect(varied(i * 3))).flat() // several MiB
    expect(Buffer.from(encodeTraces(resource, scope, spans)).equals(Buffer.from(libraryBytes(spans)))).toBe(true)
  }, 60_000)

  test("an attribute set twice keeps its last value, once", () => {
    const [span] = collect(
      Effect.gen(function* () {
        yield* Effect.annotateCurrentSpan("status", 200)
        yield* Effect.annotateCurrentSpan("route", "/v1/projects")
        yield* Effect.annotateCurrentSpan("status", 404)
      }).pipe(Effect.withSpan("twice-set"))
    )
    expect(span!.pairs).toEqual(["status", 404, "route", "/v1/projects"])
    expect([...span!.attributes]).toEqual([
      ["status", 404],
      ["route", "/v1/projects"]
    ])
  })

  test("a span ended twice is exported once", async () => {
    const spans: Array<EndedSpan> = []
    const tracer = makeTracer((span) => spans.push(span))
    await Effect.runPromise(
      Effect.gen(function* () {
        const span = yield* Effect.makeSpan("twice")
        const fiber = yield* Effect.fork(Effect.void)
        const exit = yield* Fiber.await(fiber)
        span.end(1n, exit)
        span.end(2n, exit)
      }).pipe(Effect.withTracer(tracer))
    )
    expect(spans.map((span) => [span.name, span.status.endTime])).toEqual([["twice", 1n]])
  })
})
