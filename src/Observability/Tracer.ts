/**
 * The tracer: Effect's spans, exported over OTLP/HTTP in batches, as the OpenTelemetry batch span processor does
 * (`OTEL_BSP_*`). It takes the place of @effect/opentelemetry's `OtlpTracer` (metrics and logs still use the
 * library) because that one keeps every ended span, with its fiber's context and its exit's value, until the next
 * export, then turns it into OTLP objects for an encoder that builds more: the garbage collector's work grows with
 * the request rate. Ours encodes each span into the current batch's buffer the moment it ends, so nothing of a
 * span outlives its request (bench/tracing.sh measures what tracing costs).
 *
 * Export failures are retried (429 after `Retry-After`), then the batch is dropped and a warning logged, at most
 * once a minute; a full queue drops new spans the same way. At shutdown the export in flight finishes and what is
 * left is sent, within the shutdown timeout.
 */

import * as OtlpResource from "@effect/opentelemetry/OtlpResource"
import type * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import { Duration, Effect, Fiber, Layer, Number as Num, Option, Schedule, Tracer } from "effect"
import { JsonSpans } from "./OtlpJson.js"
import { ProtobufSpans } from "./OtlpProtobuf.js"
import { type EndedSpan, OtlpSpan } from "./OtlpSpan.js"

export interface Options {
  readonly url: string
  readonly protocol: "http/protobuf" | "http/json"
  readonly resource: {
    readonly serviceName: string
    readonly serviceVersion: string
    readonly attributes: Record<string, unknown>
  }
  readonly headers?: Record<string, string>
  readonly scheduleDelay: Duration.DurationInput
  readonly exportTimeout: Duration.DurationInput
  readonly maxQueueSize: number
  readonly maxExportBatchSize: number
  readonly shutdownTimeout: Duration.DurationInput
}

/** Retries 1 s apart, or after `Retry-After` when the collector answers 429. */
const retryPolicy = Schedule.forever.pipe(
  Schedule.passthrough,
  Schedule.addDelay((error: unknown) =>
    HttpClientError.isHttpClientError(error) && error._tag === "ResponseError" && error.response.status === 429
      ? Duration.seconds(
          Option.getOrElse(
            Option.flatMap(Option.fromNullable(error.response.headers["retry-after"]), Num.parse),
            () => 5
          )
        )
      : Duration.seconds(1)
  )
)

const WARN_EVERY_MS = 60_000

/** Spans encoded as they end, until they are sent as one request. */
interface Batch {
  readonly count: number
  add(span: EndedSpan): void
  body(resource: OtlpResource.Resource, scopeName: string): HttpBody.HttpBody
}

export const make = Effect.fnUntraced(function* (options: Options) {
  const resource = yield* OtlpResource.fromConfig(options.resource)
  const scopeName = OtlpResource.unsafeServiceName(resource)
  const newBatch = (): Batch => (options.protocol === "http/json" ? new JsonSpans() : new ProtobufSpans())
  const client = (yield* HttpClient.HttpClient).pipe(
    HttpClient.filterStatusOk,
    HttpClient.retryTransient({ schedule: retryPolicy, times: 3 })
  )
  const request = HttpClientRequest.post(options.url, {
    headers: { ...options.headers, "user-agent": `${scopeName}/${options.resource.serviceVersion}` }
  })

  // Spans are encoded as they end into `current`; a full batch waits in `full` for the export fiber.
  let current = newBatch()
  const full: Array<Batch> = []
  let queued = 0
  let dropped = 0
  let warnedAt = -Infinity
  const wake = yield* Effect.makeLatch(false)

  const push = (span: EndedSpan) => {
    if (queued >= options.maxQueueSize) {
      dropped++
      return
    }
    try {
      current.add(span)
    } catch {
      // A span that cannot be encoded is dropped (and counted), never a failure of the request that made it.
      dropped++
      return
    }
    queued++
    if (current.count >= options.maxExportBatchSize) {
      full.push(current)
      current = newBatch()
      wake.unsafeOpen()
    }
  }

  const warnDropped = Effect.suspend(() => {
    if (dropped === 0 || Date.now() - warnedAt < WARN_EVERY_MS) return Effect.void
    const count = dropped
    dropped = 0
    warnedAt = Date.now()
    return Effect.logWarning("spans dropped: the trace exporter could not keep up or the collector failed", {
      dropped_spans: count,
      collector: options.url
    })
  })

  const send = (batch: Batch) =>
    client.execute(HttpClientRequest.setBody(request, batch.body(resource, scopeName))).pipe(
      Effect.scoped,
      Effect.timeout(options.exportTimeout),
      Effect.catchAllCause((cause) => {
        dropped += batch.count
        return Effect.logDebug("trace export failed", cause)
      }),
      Effect.ensuring(Effect.sync(() => (queued -= batch.count)))
    )

  /** Sends the batches waiting now, the one being filled included; spans that end meanwhile wait for the next round. */
  const exportPending = Effect.suspend(() => {
    if (current.count > 0) {
      full.push(current)
      current = newBatch()
    }
    const sendFirst = (n: number): Effect.Effect<void> =>
      Effect.suspend(() => {
        const batch = n > 0 ? full.shift() : undefined
        return batch === undefined ? Effect.void : Effect.zipRight(send(batch), sendFirst(n - 1))
      })
    return sendFirst(full.length)
  })

  /** Until a batch is full or the schedule delay has passed; checked and armed in one step so no wake-up is missed. */
  const waitForWork = Effect.suspend(() => {
    if (full.length > 0) return Effect.void
    wake.unsafeClose()
    return Effect.timeoutOption(wake.await, options.scheduleDelay)
  })

  let stopping = false
  const loop = yield* Effect.whileLoop({
    while: () => !stopping,
    body: () => waitForWork.pipe(Effect.zipRight(exportPending), Effect.zipRight(warnDropped)),
    step: () => {}
  }).pipe(Effect.withTracerEnabled(false), Effect.annotateLogs({ module: "Tracer" }), Effect.forkDaemon)

  // At shutdown the round in progress finishes (a batch in flight is not cut off, which could send it twice),
  // then what ended since is sent, all within the shutdown timeout.
  yield* Effect.addFinalizer(() => {
    stopping = true
    wake.unsafeOpen()
    return Fiber.await(loop).pipe(
      Effect.zipRight(exportPending),
      // The last count is told whenever the previous warning was.
      Effect.zipRight(
        Effect.suspend(() => {
          warnedAt = -Infinity
          return warnDropped
        })
      ),
      Effect.timeoutOption(options.shutdownTimeout),
      Effect.zipRight(Fiber.interrupt(loop)),
      Effect.withTracerEnabled(false)
    )
  })

  return makeTracer(push)
})

/** A tracer whose spans are handed to `onEnd` when they end (tests collect them in memory this way). */
export const makeTracer = (onEnd: (span: EndedSpan) => void): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind) =>
      new OtlpSpan(name, parent, context, links, startTime, kind, onEnd),
    context: (f) => f()
  })

/** Sets the tracer for everything it is provided to. */
export const layer = (options: Options): Layer.Layer<never, never, HttpClient.HttpClient> =>
  Layer.unwrapScoped(Effect.map(make(options), Layer.setTracer))
