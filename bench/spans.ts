/**
 * What one span costs, in a loop, under each tracer: switched off, one that drops its spans, ours keeping ended
 * spans for a second (what `OtlpTracer` does until it exports), ours exporting, and @effect/opentelemetry's
 * `OtlpTracer` exporting; then what encoding one span costs, as protobuf and as JSON.
 * Usage: taskset -c 0 bun bench/spans.ts   (the exports go to a sink process on core 1)
 */

import { OtlpSerialization, OtlpTracer } from "@effect/opentelemetry"
import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer, Tracer } from "effect"
import { spanJson } from "../src/Observability/OtlpJson.ts"
import { ProtobufSpans } from "../src/Observability/OtlpProtobuf.ts"
import type { EndedSpan } from "../src/Observability/OtlpSpan.ts"
import * as OurTracer from "../src/Observability/Tracer.ts"

const SPANS = 200_000
const attributes = {
  "db.system.name": "sqlite",
  "db.query.text":
    "SELECT id, org_id, name, description, created_at, updated_at FROM projects WHERE id = ? AND org_id = ?"
}
const spanned = Effect.succeed(1).pipe(
  Effect.withSpan("sql.execute", { kind: "client", attributes, captureStackTrace: false })
)

/** µs per span over SPANS spans, giving the event loop a turn every 500 so exporters can send. */
const perSpan = Effect.gen(function* () {
  const start = performance.now()
  for (let i = 0; i < SPANS; i++) {
    yield* spanned
    if (i % 500 === 0) yield* Effect.promise(() => new Promise((resolve) => setImmediate(resolve)))
  }
  return ((performance.now() - start) * 1000) / SPANS
})
const best = (program: Effect.Effect<number>) =>
  Effect.map(Effect.all([program, program, program]), (runs) => `${Math.min(...runs).toFixed(2)} µs`)

// The collector is another process, on core 1, so its work is not counted here.
const SINK_PORT = 4398
const sink = Bun.spawn([
  "taskset",
  "-c",
  "1",
  "bun",
  "-e",
  `Bun.serve({ hostname: "127.0.0.1", port: ${SINK_PORT}, async fetch(r) { await r.arrayBuffer(); return new Response("{}") } }); await Bun.sleep(1e9)`
])
for (
  let i = 0;
  i < 100 &&
  !(await fetch(`http://127.0.0.1:${SINK_PORT}/`).then(
    () => true,
    () => false
  ));
  i++
)
  await Bun.sleep(50)
const url = `http://127.0.0.1:${SINK_PORT}/v1/traces`
const resource = { serviceName: "bench", serviceVersion: "0", attributes: {} }

const dropping = Tracer.make({
  span: (name, parent, context, links, startTime, kind) => {
    const span: Tracer.Span = {
      _tag: "Span",
      name,
      parent,
      context,
      links,
      kind,
      sampled: true,
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      attributes: new Map(),
      status: { _tag: "Started", startTime },
      attribute: () => {},
      event: () => {},
      addLinks: () => {},
      end: () => {}
    }
    return span
  },
  context: (f) => f()
})
let kept: Array<EndedSpan> = []
const clearKept = setInterval(() => (kept = []), 1000)

const run = async (label: string, program: Effect.Effect<string, never, never>) =>
  console.log(label.padEnd(52), await Effect.runPromise(program))

await run("tracer off", best(perSpan).pipe(Effect.withTracerEnabled(false)))
await run("a tracer that drops its spans", best(perSpan).pipe(Effect.withTracer(dropping)))
await run(
  "ours, ended spans kept for a second",
  best(perSpan).pipe(Effect.withTracer(OurTracer.makeTracer((span) => kept.push(span))))
)
await run(
  "ours, exporting protobuf",
  Effect.scoped(
    best(perSpan).pipe(
      Effect.provide(
        OurTracer.layer({
          url,
          protocol: "http/protobuf",
          resource,
          scheduleDelay: "1 second",
          exportTimeout: "30 seconds",
          maxQueueSize: 32_768,
          maxExportBatchSize: 4096,
          shutdownTimeout: "5 seconds"
        }).pipe(Layer.provide(FetchHttpClient.layer))
      )
    )
  )
)
await run(
  "@effect/opentelemetry OtlpTracer, exporting protobuf",
  Effect.scoped(
    best(perSpan).pipe(
      Effect.provide(
        OtlpTracer.layer({ url, resource, exportInterval: "1 second" }).pipe(
          Layer.provide(OtlpSerialization.layerProtobuf),
          Layer.provide(FetchHttpClient.layer)
        )
      )
    )
  )
)
clearInterval(clearKept)

// Encoding: 1,000 recorded spans like a request's, encoded 100 times over.
const recorded: Array<EndedSpan> = []
Effect.runSync(
  Effect.forEach(
    Array.from({ length: 1000 }, (_, i) => i),
    (i) =>
      spanned.pipe(
        Effect.withSpan("GET /v1/projects/:id", {
          kind: "server",
          attributes: { "http.route": "/v1/projects/:id", n: i }
        })
      ),
    {
      discard: true
    }
  ).pipe(Effect.withTracer(OurTracer.makeTracer((span) => recorded.push(span))))
)
const encode = (label: string, f: () => void) => {
  let fastest = Infinity
  for (let round = 0; round < 5; round++) {
    const start = performance.now()
    for (let i = 0; i < 100; i++) f()
    fastest = Math.min(fastest, ((performance.now() - start) * 1000) / (100 * recorded.length))
  }
  console.log(label.padEnd(52), `${fastest.toFixed(2)} µs a span`)
}
encode("encode as protobuf", () => {
  const batch = new ProtobufSpans()
  for (const span of recorded) batch.add(span)
})
encode("encode as JSON", () => {
  for (const span of recorded) JSON.stringify(spanJson(span))
})
sink.kill()
process.exit(0)
