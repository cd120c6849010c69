/**
 * The per-request wrapper: what the server does around every request it answers — what the server knows of the
 * request (`ServedRequest`: id, path, contract route, worked out once; src/Http/Routes.ts), the request id for the
 * envelopes and the logs, the in-flight count for graceful shutdown, the duration metric, one access-log line, and
 * the server span when the request is traced. The response is sent inside `app`: its `X-Request-Id` comes through
 * the one pre-response handler installed with the server (`withRequestId`).
 *
 * The in-flight count is the `Lifecycle` service below, with whether the process is draining: on shutdown the
 * server stops taking new `/v1` work (503 `unavailable`: health answers for itself, OAuth in its own RFC form) and
 * waits for what is in flight to finish before anything else is torn down.
 *
 * Two implementations with the same behaviour, chosen by `FAST_PATHS` (`request-wrapper`; docs/fast-paths.md):
 * `idiomatic`, written as the Effect docs write a middleware, and `fast`, the same steps as plain JS inside one
 * `withFiberRuntime`: each layer of `Effect.gen`, `locally` and annotation costs fiber steps and a copy of the
 * fiber's refs, on every request. Both run under the same tests (test/observability/access-log.test.ts,
 * test/observability/telemetry.test.ts, and the graceful-shutdown test in test/e2e/platform.test.ts).
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import {
  Cause,
  Context,
  Duration,
  Effect,
  type Fiber,
  FiberRef,
  FiberRefs,
  HashMap,
  HashSet,
  Layer,
  Logger,
  LogLevel,
  Metric,
  MetricLabel,
  Option,
  Schedule,
  Tracer
} from "effect"
import { type FastPath, ServerConfig } from "../Config.js"
import { Unavailable } from "../Domain/Errors.js"
import { CurrentRequestIdentity, requestIdFrom } from "../Domain/RequestId.js"
import { jsonLogger, writeJsonLine } from "../Observability/Logging.js"
import { requestDuration, updateInPlace } from "../Observability/Metrics.js"
import type { TraceSampler } from "../Observability/Sampling.js"
import { routeOf, type ServedRequest, servedRequest } from "./Routes.js"

export class Lifecycle extends Effect.Service<Lifecycle>()("Lifecycle", {
  effect: Effect.gen(function* () {
    // Plain counters: every request touches them, and a `Ref` plus `acquireUseRelease` cost several fiber steps
    // each; one thread updates them, and the mask keeps the count exact under interruption.
    let inFlight = 0
    let drainingNow = false
    const currentInFlight = Effect.sync(() => inFlight)
    const draining = {
      get: Effect.sync(() => drainingNow),
      set: Effect.sync(() => {
        drainingNow = true
      })
    }
    const leave = Effect.sync(() => {
      inFlight--
    })

    /** Runs one request's work, counted, so shutdown can wait for it. */
    const track = <A, E, R>(work: Effect.Effect<A, E, R>) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.suspend(() => {
          inFlight++
          return Effect.ensuring(restore(work), leave)
        })
      )

    /**
     * The same count as plain calls, for the server's per-request wrapper, which runs uninterruptibly (the
     * platform serves each request in an uninterruptible region) and calls `exit` once its work has ended.
     */
    const unsafe = {
      enter: (): void => {
        inFlight++
      },
      exit: (): void => {
        inFlight--
      },
      isDraining: (): boolean => drainingNow
    } as const

    const drain = (timeout: Duration.Duration) =>
      Effect.gen(function* () {
        yield* draining.set
        const waiting = yield* currentInFlight
        yield* Effect.logInfo("draining", { in_flight: waiting })
        const idle = Effect.repeat(currentInFlight, {
          until: (n) => n === 0,
          schedule: Schedule.spaced(Duration.millis(20))
        })
        // Finalizers run uninterruptibly: the wait must be interruptible for the time-out to end it.
        const finished = yield* Effect.timeout(Effect.interruptible(idle), timeout).pipe(Effect.option)
        if (finished._tag === "None") yield* Effect.logWarning("shutdown timeout reached with requests in flight")
      })

    return { track, unsafe, drain, isDraining: draining.get } as const
  })
}) {}

/** Built after the server, so its finalizer (the drain) runs before the server's own. */
export const GracefulShutdown = Layer.scopedDiscard(
  Effect.gen(function* () {
    const lifecycle = yield* Lifecycle
    const { shutdownTimeout } = yield* Effect.orDie(ServerConfig)
    yield* Effect.addFinalizer(() => lifecycle.drain(shutdownTimeout))
  })
)

/** Whether this request is refused because the process is draining. */
export const isDrainRefused = (lifecycle: Lifecycle, request: HttpServerRequest.HttpServerRequest): boolean =>
  lifecycle.unsafe.isDraining() && request.url.startsWith("/v1/")

/** A fresh error per refusal (an error carries the span it failed in). */
export const refusedWhileDraining = Effect.failSync(
  () => new Unavailable({ message: "The server is shutting down; retry shortly" })
)

/** Wraps the whole app the server serves. */
export type RequestWrapper = (app: HttpApp.Default) => HttpApp.Default

/**
 * The one pre-response handler installed with the server: `X-Request-Id` on whatever response the request gets
 * (the response is sent inside the app, where this wrapper cannot reach it). Others a step adds for a failure's
 * response (`onFailureResponse`, src/Http/Routes.ts) run after it.
 */
export const withRequestId = (
  _request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.map(FiberRef.get(CurrentRequestIdentity), (identity) =>
    identity === undefined ? response : HttpServerResponse.setHeader(response, "x-request-id", identity.id)
  )

const isHealth = (path: string) => path.startsWith("/health/")

/**
 * The request-duration labels for one method, route and status, built once: the histogram keeps its tagged
 * instruments by the identity of the label array, so a new array per request (as `Metric.tagged` makes) means a
 * new metric key, hashed and looked up, on every update. Methods come from clients, so the table stops growing at
 * a bound and anything past it is labelled afresh per request.
 */
const durationLabels = new Map<string, ReadonlyArray<MetricLabel.MetricLabel>>()
const labelsOf = (method: string, route: string, status: number): ReadonlyArray<MetricLabel.MetricLabel> => {
  const key = `${method} ${route} ${status}`
  const known = durationLabels.get(key)
  if (known !== undefined) return known
  const labels = [
    MetricLabel.make("http.request.method", method),
    MetricLabel.make("http.route", route),
    MetricLabel.make("http.response.status_code", String(status))
  ]
  if (durationLabels.size < 1000) durationLabels.set(key, labels)
  return labels
}

/** The access line's fields (annotations of the log record: attributes of the OTLP record, not a JSON string). */
const accessFields = (request: HttpServerRequest.HttpServerRequest, path: string, status: number, started: number) => ({
  method: request.method,
  path,
  status,
  duration_ms: Math.round((performance.now() - started) * 100) / 100
})

/** The server span's name and attributes: named by route (`GET /v1/projects/:id`), continuing `traceparent`. */
const spanOptions = (
  request: HttpServerRequest.HttpServerRequest,
  state: ServedRequest,
  route: string | undefined,
  parent: Option.Option<Tracer.ExternalSpan>
) => ({
  name: route === undefined ? request.method : `${request.method} ${route}`,
  options: {
    kind: "server" as const,
    captureStackTrace: false,
    ...Option.match(parent, { onNone: () => ({}), onSome: (parent) => ({ parent }) }),
    attributes: {
      "http.request.method": request.method,
      "url.path": state.path,
      "request.id": state.id,
      ...(route !== undefined ? { "http.route": route } : {}),
      ...(request.headers["user-agent"] !== undefined ? { "user_agent.original": request.headers["user-agent"] } : {})
    }
  }
})

// --- idiomatic ------------------------------------------------------------------------------------------------

/**
 * The wrapper as a middleware written the way the Effect docs write one. Its steps are generator functions made
 * once per app, not per request (see the README's layout: the JIT drops code tied to a generator function that died).
 */
export const idiomaticRequestWrapper =
  (lifecycle: Lifecycle, sampler: TraceSampler): RequestWrapper =>
  (app) => {
    /** The app's answer, then its duration in the metric and its access line. */
    const serve = Effect.fnUntraced(function* (
      request: HttpServerRequest.HttpServerRequest,
      state: ServedRequest,
      route: string | undefined
    ) {
      const started = performance.now()
      const response = yield* app
      yield* Metric.update(
        Metric.taggedWithLabels(requestDuration, labelsOf(request.method, route ?? "unmatched", response.status)),
        (performance.now() - started) / 1000
      )
      yield* Effect.logInfo("request").pipe(
        Effect.annotateLogs(accessFields(request, state.path, response.status, started))
      )
      return response
    })
    /** `served` in the request's server span when tracing is on and the sampler keeps it. */
    const traceOf = Effect.fnUntraced(function* (
      request: HttpServerRequest.HttpServerRequest,
      state: ServedRequest,
      route: string | undefined,
      served: HttpApp.Default
    ) {
      if (!(yield* FiberRef.get(FiberRef.currentTracerEnabled))) return served
      const parent = HttpTraceContext.fromHeaders(request.headers)
      // A request the sampler leaves out makes no spans at all.
      if (!sampler.shouldSample(parent)) return Effect.withTracerEnabled(served, false)
      const { name, options } = spanOptions(request, state, route, parent)
      return served.pipe(
        Effect.tap((response) => Effect.annotateCurrentSpan("http.response.status_code", response.status)),
        Effect.withSpan(name, options)
      )
    })
    return Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const state = servedRequest(request, requestIdFrom(request.headers["x-request-id"]))
      if (isHealth(state.path)) return yield* lifecycle.track(Effect.locally(app, CurrentRequestIdentity, state))
      const route = routeOf(state.match, state.path)
      const traced = yield* traceOf(request, state, route, serve(request, state, route))
      return yield* traced.pipe(
        Effect.annotateLogs({ request_id: state.id }),
        Effect.locally(CurrentRequestIdentity, state),
        lifecycle.track
      )
    })
  }

// --- fast -----------------------------------------------------------------------------------------------------

const annotate = (
  annotations: HashMap.HashMap<string, unknown>,
  fields: Readonly<Record<string, unknown>>
): HashMap.HashMap<string, unknown> =>
  // One mutable build, not a persistent map per field.
  HashMap.mutate(annotations, (annotated) => {
    for (const key in fields) HashMap.set(annotated, key, fields[key])
  })

const ACCESS_MESSAGE: ReadonlyArray<string> = ["request"]

/**
 * The access line, at info, given to the fiber's loggers as `Effect.logInfo` would with these fields added to the
 * fiber's annotations, but without writing them to the fiber: that write copies the fiber's refs and hashes both
 * annotation maps (every character of the path and request id) to compare them. The JSON logger (the default,
 * and the only one unless logs are exported) takes the fields as they are; any other logger gets them in a new
 * annotation map, built once; the tracer's logger, which only adds an event to the current span, is skipped when
 * there is none (tracing off, or the request not sampled).
 */
const accessLine = (fiber: Fiber.RuntimeFiber<unknown, unknown>, fields: Readonly<Record<string, unknown>>): void => {
  if (LogLevel.greaterThan(fiber.getFiberRef(FiberRef.currentMinimumLogLevel), LogLevel.Info)) return
  const loggers = fiber.getFiberRef(FiberRef.currentLoggers)
  if (HashSet.size(loggers) === 0) return
  const record = {
    fiberId: fiber.id(),
    logLevel: LogLevel.Info,
    message: ACCESS_MESSAGE,
    cause: Cause.empty,
    context: fiber.getFiberRefs(),
    spans: fiber.getFiberRef(FiberRef.currentLogSpan),
    annotations: fiber.getFiberRef(FiberRef.currentLogAnnotations),
    date: new Date()
  }
  let annotated: typeof record | undefined
  for (const logger of loggers) {
    if (logger === jsonLogger) {
      writeJsonLine(record, fields)
    } else if (
      logger !== Logger.tracerLogger ||
      Option.isSome(Context.getOption(fiber.currentContext, Tracer.ParentSpan))
    ) {
      annotated ??= { ...record, annotations: annotate(record.annotations, fields) }
      logger.log(annotated)
    }
  }
}

/**
 * The same steps as `idiomaticRequestWrapper`, as plain JS inside one `withFiberRuntime`. It counts on what the
 * platform guarantees: each request runs on its own fiber (so the refs it sets need no restoring) and
 * uninterruptibly (so the in-flight count is left exactly once, when the work ends).
 */
export const fastRequestWrapper =
  (lifecycle: Lifecycle, sampler: TraceSampler): RequestWrapper =>
  (app) =>
    Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>(
      (fiber) => {
        const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
        const state = servedRequest(request, requestIdFrom(request.headers["x-request-id"]))
        const { path } = state
        lifecycle.unsafe.enter()
        if (isHealth(path)) {
          return Effect.zipRight(
            FiberRef.set(CurrentRequestIdentity, state),
            Effect.onExit(app, () => Effect.sync(lifecycle.unsafe.exit))
          )
        }
        const started = performance.now()
        const route = routeOf(state.match, path)
        const served = Effect.matchCauseEffect(app, {
          onFailure: (cause) => {
            lifecycle.unsafe.exit()
            return Effect.failCause(cause)
          },
          onSuccess: (response) => {
            lifecycle.unsafe.exit()
            updateInPlace(
              requestDuration,
              (performance.now() - started) / 1000,
              labelsOf(request.method, route ?? "unmatched", response.status),
              fiber
            )
            accessLine(fiber, accessFields(request, path, response.status, started))
            return Effect.succeed(response)
          }
        })
        // The request's state, its id for the envelopes and for the logs (and the tracer switched off for a
        // request the sampler leaves out): one write of the fiber's refs, where each `FiberRef.set` is a fiber
        // step and a copy of them.
        const setUp = (untraced: boolean) =>
          Effect.updateFiberRefs((id, refs) => {
            const set = FiberRefs.updateManyAs(refs, {
              entries: [
                [CurrentRequestIdentity, [[id, state]]],
                [
                  FiberRef.currentLogAnnotations,
                  [
                    [
                      id,
                      annotate(FiberRefs.getOrDefault(refs, FiberRef.currentLogAnnotations), { request_id: state.id })
                    ]
                  ]
                ]
              ]
            })
            return untraced
              ? FiberRefs.updateAs(set, { fiberId: id, fiberRef: FiberRef.currentTracerEnabled, value: false })
              : set
          })
        // With tracing off (the default) there is no span to make, sampled or not.
        if (!fiber.getFiberRef(FiberRef.currentTracerEnabled)) return Effect.zipRight(setUp(false), served)
        const parent = HttpTraceContext.fromHeaders(request.headers)
        if (!sampler.shouldSample(parent)) return Effect.zipRight(setUp(true), served)
        const { name, options } = spanOptions(request, state, route, parent)
        return Effect.zipRight(
          setUp(false),
          Effect.useSpan(name, options, (span) =>
            served.pipe(
              Effect.withParentSpan(span),
              Effect.tap((response) => span.attribute("http.response.status_code", response.status))
            )
          )
        )
      }
    )

/** The wrapper `FAST_PATHS` names. */
export const makeRequestWrapper = (
  fastPaths: ReadonlySet<FastPath>,
  lifecycle: Lifecycle,
  sampler: TraceSampler
): RequestWrapper =>
  fastPaths.has("request-wrapper")
    ? fastRequestWrapper(lifecycle, sampler)
    : idiomaticRequestWrapper(lifecycle, sampler)
