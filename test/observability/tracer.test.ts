// engine-independent: no database
/**
 * The trace exporter against a collector on loopback (OTLP/JSON so the test can read it): batches, the flush at
 * shutdown, retries, a collector that is down, and a queue that overflows.
 */

import { afterAll, beforeEach, describe, expect, test } from "bun:test"
import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer, Logger } from "effect"
import * as OtlpTracer from "../../src/Observability/Tracer.ts"

interface Received {
  readonly spans: Array<{ name: string; traceId: string; spanId: string; parentSpanId?: string }>
  readonly resource: Array<{ key: string; value: { stringValue?: string } }>
}

const requests: Array<Received> = []
/** Protobuf requests, as received. */
const protobufBodies: Array<Buffer> = []
/** Statuses the collector answers with, first to last; 200 once they run out. */
let answers: Array<number> = []
/** How long the collector takes to answer. */
let delay = 0
const collector = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const status = answers.shift() ?? 200
    if (delay > 0) await Bun.sleep(delay)
    if (request.headers.get("content-type") === "application/x-protobuf") {
      if (status === 200) protobufBodies.push(Buffer.from(await request.arrayBuffer()))
      return new Response("{}", { status })
    }
    const body = (await request.json()) as any
    if (status === 200) {
      requests.push({
        spans: body.resourceSpans[0].scopeSpans[0].spans,
        resource: body.resourceSpans[0].resource.attributes
      })
    }
    return new Response("{}", { status, headers: { "content-type": "application/json" } })
  }
})
afterAll(() => collector.stop(true), 20_000)
beforeEach(() => {
  requests.length = 0
  protobufBodies.length = 0
  answers = []
  delay = 0
})

const options = (overrides: Partial<OtlpTracer.Options> = {}): OtlpTracer.Options => ({
  url: `http://127.0.0.1:${collector.port}/v1/traces`,
  protocol: "http/json",
  resource: { serviceName: "tracer-test", serviceVersion: "1.2.3", attributes: { "deployment.environment": "test" } },
  scheduleDelay: "50 millis",
  exportTimeout: "5 seconds",
  maxQueueSize: 1000,
  maxExportBatchSize: 10,
  shutdownTimeout: "5 seconds",
  ...overrides
})

/** Runs `program` with the exporter, shuts it down, and returns what it answered and what was logged as a warning. */
const runWith = async <A>(config: OtlpTracer.Options, program: Effect.Effect<A>) => {
  const warnings: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel._tag === "Warning") warnings.push(JSON.stringify(message))
  })
  const value = await Effect.runPromise(
    Effect.scoped(
      program.pipe(
        Effect.provide(OtlpTracer.layer(config).pipe(Layer.provide(FetchHttpClient.layer))),
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
    )
  )
  return { value, warnings }
}
const run = async <A>(config: OtlpTracer.Options, program: Effect.Effect<A>) =>
  (await runWith(config, program)).warnings

const spans = (n: number, prefix = "span") =>
  Effect.forEach(
    Array.from({ length: n }, (_, i) => i),
    (i) => Effect.void.pipe(Effect.withSpan(`${prefix} ${i}`)),
    {
      discard: true
    }
  )

const received = () => requests.flatMap((request) => request.spans.map((span) => span.name))

describe("the trace exporter", () => {
  test("sends every span in batches of at most OTEL_BSP_MAX_EXPORT_BATCH_SIZE, with the resource", async () => {
    await run(options(), Effect.zipRight(spans(25), Effect.sleep("200 millis")))
    expect(received().sort()).toEqual(Array.from({ length: 25 }, (_, i) => `span ${i}`).sort())
    expect(requests.length).toBeGreaterThanOrEqual(3)
    for (const request of requests) expect(request.spans.length).toBeLessThanOrEqual(10)
    expect(requests[0]!.resource).toContainEqual({ key: "service.name", value: { stringValue: "tracer-test" } })
    expect(requests[0]!.resource).toContainEqual({ key: "service.version", value: { stringValue: "1.2.3" } })
    expect(requests[0]!.resource).toContainEqual({ key: "deployment.environment", value: { stringValue: "test" } })
  })

  test("what is still queued at shutdown is sent before the scope closes", async () => {
    await run(options({ scheduleDelay: "1 hour", maxExportBatchSize: 1000 }), spans(7, "late"))
    expect(received()).toEqual(Array.from({ length: 7 }, (_, i) => `late ${i}`))
  })

  test("a parent and its children share the trace; the children name the parent", async () => {
    await run(options({ scheduleDelay: "1 hour" }), spans(2, "child").pipe(Effect.withSpan("parent")))
    const all = requests.flatMap((request) => request.spans)
    const parent = all.find((span) => span.name === "parent")!
    const children = all.filter((span) => span.name.startsWith("child"))
    expect(children).toHaveLength(2)
    for (const child of children) {
      expect(child.traceId).toBe(parent.traceId)
      expect(child.parentSpanId).toBe(parent.spanId)
    }
    expect(parent.parentSpanId).toBeUndefined()
  })

  test("a collector that answers 503 is retried; nothing is lost", async () => {
    answers = [503, 503]
    const warnings = await run(options({ scheduleDelay: "1 hour" }), spans(3, "retried"))
    expect(received()).toEqual(["retried 0", "retried 1", "retried 2"])
    expect(warnings).toEqual([])
  })

  test("a collector that keeps failing: the batch is dropped with a warning that counts it, and the service goes on", async () => {
    answers = [500, 500, 500, 500] // the first try and three retries, a second apart
    const warnings = await run(
      options(),
      Effect.gen(function* () {
        yield* spans(4, "doomed")
        yield* Effect.sleep("4 seconds")
        yield* spans(2, "after")
      })
    )
    expect(received()).toEqual(["after 0", "after 1"])
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain("spans dropped")
    expect(warnings[0]).toContain('"dropped_spans":4')
  })

  test("a span that cannot be encoded is dropped and counted; the request and the batch around it are unharmed", async () => {
    const hostile = {
      toJSON: () => {
        throw new Error("no JSON")
      },
      toString: () => {
        throw new Error("no string")
      }
    }
    const program = Effect.gen(function* () {
      yield* Effect.void.pipe(Effect.withSpan("before"))
      yield* Effect.void.pipe(Effect.withSpan("hostile", { attributes: { value: hostile } }))
      yield* Effect.void.pipe(Effect.withSpan("after"))
      return "served"
    })
    const json = await runWith(options({ scheduleDelay: "1 hour" }), program)
    expect(json.value).toBe("served")
    expect(received()).toEqual(["before", "after"])
    expect(json.warnings.join("\n")).toContain('"dropped_spans":1')

    const protobuf = await runWith(options({ scheduleDelay: "1 hour", protocol: "http/protobuf" }), program)
    expect(protobuf.value).toBe("served")
    expect(protobufBodies).toHaveLength(1)
    const text = protobufBodies[0]!.toString("latin1")
    expect(text).toContain("before")
    expect(text).toContain("after")
    expect(text).not.toContain("hostile")
    expect(protobuf.warnings.join("\n")).toContain('"dropped_spans":1')
  })

  test("drops are told at most once a minute while running, and the last count at shutdown", async () => {
    delay = 300 // a full batch is in flight while the rest of each flood ends
    const warnings = await run(
      options({ maxQueueSize: 5, maxExportBatchSize: 5 }),
      Effect.gen(function* () {
        yield* spans(10, "first")
        yield* Effect.sleep("600 millis")
        yield* spans(10, "second")
      })
    )
    expect(warnings).toHaveLength(2)
    for (const warning of warnings) expect(warning).toContain('"dropped_spans":5')
    expect(received()).toHaveLength(10)
  })

  test("a full queue drops new spans, counts them, and keeps the ones it has", async () => {
    // The first full batch is still being sent (and still counts against the queue) while the rest end; it is in
    // flight at shutdown, which lets it finish rather than cut it off and send it again.
    delay = 500
    const warnings = await run(
      options({ scheduleDelay: "1 hour", maxQueueSize: 20, maxExportBatchSize: 20 }),
      spans(50, "flood")
    )
    expect(received()).toEqual(Array.from({ length: 20 }, (_, i) => `flood ${i}`))
    expect(warnings.join("\n")).toContain('"dropped_spans":30')
  })
})
