/**
 * Server wiring: the contract's handlers, the middleware around them, docs, health, and the HTTP server
 * (`node:http` on Bun; see src/Http/NodeServer.ts).
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as SqlClient from "@effect/sql/SqlClient"
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
  MetricLabel,
  Option,
  Tracer
} from "effect"
import { Api } from "./Api.js"
import { ApiKeysHttp } from "./ApiKeys/Http.js"
import { ServerConfig } from "./Config.js"
import { DeploymentsHttp } from "./Deployments/Http.js"
import { requestIdFrom } from "./Domain/RequestId.js"
import { EventsHttp } from "./Events/Http.js"
import { ApiMiddlewareLive } from "./Http/ApiMiddleware.js"
import { AuthenticationLive } from "./Http/Authentication.js"
import { type TrustedProxies, trustedProxies } from "./Http/ClientAddress.js"
import { DashboardRoutes } from "./Http/Dashboard.js"
import { DocsRoutes } from "./Http/Docs.js"
import { GracefulShutdown, Lifecycle } from "./Http/Lifecycle.js"
import { makeNodeServer } from "./Http/NodeServer.js"
import { CurrentRequest, makeRequestState, withStateHeaders } from "./Http/RequestState.js"
import { routeOf, StrictRouting } from "./Http/Routes.js"
import { AuthorizationsHttp, OAuthClientsHttp } from "./OAuth/Apps/Http.js"
import { OAuthRoutes } from "./OAuth/Http.js"
import { jsonLogger, writeJsonLine } from "./Observability/Logging.js"
import { requestDuration, updateInPlace } from "./Observability/Metrics.js"
import { TraceSampler } from "./Observability/Sampling.js"
import { ProjectsHttp } from "./Projects/Http.js"
import { InvitationsHttp, TeamsHttp } from "./Teams/Http.js"
import { UsersHttp } from "./Users/Http.js"
import { WebhooksHttp } from "./Webhooks/Http.js"

/**
 * The most body the server reads into memory for any request: a backstop far above our own 1 MiB (src/Http/
 * BodyChecks.ts), so a body declared too large still gets our 413 envelope without being read, and one sent
 * chunked gets it once read; past this the read fails and the connection is cut (Bun.serve's own cap was the same).
 */
const MAX_READ_BODY_BYTES = 16 * 1024 * 1024

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
 * annotation maps (every character of the path and request id) to compare them, on every request. The JSON
 * logger (the default, and the only one unless logs are exported) takes the fields as they are; any other logger
 * gets them in a new annotation map, built once; the tracer's logger, which only adds an event to the current
 * span, is skipped when there is none (tracing off, or the request not sampled).
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
 * Around everything the server answers, one wrapper per request with plain JS inside (each layer of
 * `Effect.gen`, `locally` and pre-response handler costs fiber steps and a copy of the fiber's refs): the request
 * state (id, path, contract route, response headers; src/Http/RequestState.ts), the request id for the envelopes
 * and the logs, the in-flight count for graceful shutdown, the duration metric, one access-log line, and the
 * server span when the request is traced. The response is sent inside `app`; its headers come from the state
 * through the one pre-response handler installed with the server (`withStateHeaders`).
 */
const perRequest = (lifecycle: Lifecycle, sampler: TraceSampler) => (app: HttpApp.Default) =>
  Effect.withFiberRuntime<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>(
    (fiber) => {
      const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
      const state = makeRequestState(request, requestIdFrom(request.headers["x-request-id"]))
      const { path } = state
      lifecycle.unsafe.enter()
      if (isHealth(path)) {
        return Effect.zipRight(
          FiberRef.set(CurrentRequest, state),
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
          const seconds = (performance.now() - started) / 1000
          updateInPlace(
            requestDuration,
            seconds,
            labelsOf(request.method, route ?? "unmatched", response.status),
            fiber
          )
          // The fields as annotations: attributes of the OTLP log record (queryable), not a JSON string in its body.
          accessLine(fiber, {
            method: request.method,
            path,
            status: response.status,
            duration_ms: Math.round(seconds * 100_000) / 100
          })
          return Effect.succeed(response)
        }
      })
      // The request's state, its id for the envelopes and for the logs (and the tracer switched off for a request
      // the sampler leaves out): one write of the fiber's refs, where each `FiberRef.set` is a fiber step and a
      // copy of them. The fiber is the request's, so nothing is restored.
      const setUp = (untraced: boolean) =>
        Effect.updateFiberRefs((id, refs) => {
          const set = FiberRefs.updateManyAs(refs, {
            entries: [
              [CurrentRequest, [[id, state]]],
              [
                FiberRef.currentLogAnnotations,
                [[id, annotate(FiberRefs.getOrDefault(refs, FiberRef.currentLogAnnotations), { request_id: state.id })]]
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
      // A request the sampler leaves out makes no spans at all.
      if (!sampler.shouldSample(parent)) return Effect.zipRight(setUp(true), served)
      // The server span, continuing an incoming `traceparent`; named by route (`GET /v1/projects/:id`).
      return Effect.zipRight(
        setUp(false),
        Effect.useSpan(
          route === undefined ? request.method : `${request.method} ${route}`,
          {
            kind: "server",
            captureStackTrace: false,
            ...Option.match(parent, { onNone: () => ({}), onSome: (parent) => ({ parent }) }),
            attributes: {
              "http.request.method": request.method,
              "url.path": path,
              "request.id": state.id,
              ...(route !== undefined ? { "http.route": route } : {}),
              ...(request.headers["user-agent"] !== undefined
                ? { "user_agent.original": request.headers["user-agent"] }
                : {})
            }
          },
          (span) =>
            served.pipe(
              Effect.withParentSpan(span),
              Effect.tap((response) => span.attribute("http.response.status_code", response.status))
            )
        )
      )
    }
  )

/**
 * Behind trusted proxies (`TRUSTED_PROXIES`), the request's `remoteAddress` is the client's (from `X-Forwarded-For`)
 * for everything the app does with it (the per-IP rate limits); nothing changes when none is configured.
 */
const behindProxies =
  (proxies: TrustedProxies) =>
  (app: HttpApp.Default): HttpApp.Default =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const peer = Option.getOrUndefined(request.remoteAddress)
      const client = peer === undefined ? undefined : proxies.clientOf(peer, request.headers["x-forwarded-for"])
      return client === undefined || client === peer
        ? app
        : Effect.provideService(app, HttpServerRequest.HttpServerRequest, request.modify({ remoteAddress: client }))
    })

/** The server with the per-request wrapper, and the one pre-response handler its requests inherit. */
const ServeLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const lifecycle = yield* Lifecycle
    const sampler = yield* TraceSampler
    const { trustedProxies: proxies } = yield* Effect.orDie(ServerConfig)
    const wrap = perRequest(lifecycle, sampler)
    const wrapped =
      proxies.length === 0 ? wrap : (app: HttpApp.Default) => wrap(behindProxies(trustedProxies(proxies))(app))
    return HttpApiBuilder.serve(wrapped).pipe(
      Layer.locally(HttpApp.currentPreResponseHandlers, Option.some(withStateHeaders))
    )
  })
)

const HealthRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const lifecycle = yield* Lifecycle
    yield* router.get("/health/live", HttpServerResponse.json({ status: "ok" }))
    yield* router.get(
      "/health/ready",
      Effect.gen(function* () {
        const draining = yield* lifecycle.isDraining
        const answers = yield* sql`SELECT 1 AS ok`.pipe(
          Effect.timeout(Duration.seconds(2)),
          Effect.as(true),
          Effect.orElseSucceed(() => false)
        )
        return yield* answers && !draining
          ? HttpServerResponse.json({ status: "ok" })
          : HttpServerResponse.json({ status: "unavailable" }, { status: 503 })
      })
    )
  })
)

const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide([
    ProjectsHttp,
    UsersHttp,
    TeamsHttp,
    InvitationsHttp,
    DeploymentsHttp,
    ApiKeysHttp,
    WebhooksHttp,
    EventsHttp
  ]),
  Layer.provide([OAuthClientsHttp, AuthorizationsHttp]),
  Layer.provide(AuthenticationLive)
)

/** The `node:http` server (src/Http/NodeServer.ts: why, its time-outs and headers). */
const HttpServerLive = Layer.unwrapEffect(
  Effect.map(Effect.orDie(ServerConfig), ({ host, port, idleTimeout }) =>
    NodeHttpServer.layer(makeNodeServer(idleTimeout), { port, host })
  )
)

/** The body backstop, for every request the server serves (the platform reads without a bound otherwise). */
const MaxReadBodyLive = Layer.succeed(
  HttpIncomingMessage.MaxBodySize,
  Option.some(FileSystem.Size(MAX_READ_BODY_BYTES))
)

/** The HTTP server and everything it serves; drains in-flight requests before it stops. */
export const HttpLive = GracefulShutdown.pipe(
  Layer.provide(
    ServeLive.pipe(
      // `/docs`, its assets, and `/v1/openapi.json`.
      Layer.provide(DocsRoutes),
      Layer.provide(ApiMiddlewareLive),
      Layer.provide(HealthRoutes),
      Layer.provide(OAuthRoutes),
      Layer.provide(DashboardRoutes),
      Layer.provide(ApiLive),
      HttpServer.withLogAddress,
      // Our own server span (named by route) replaces the platform's.
      HttpMiddleware.withTracerDisabledWhen(() => true),
      Layer.provide(StrictRouting),
      Layer.provide(MaxReadBodyLive),
      Layer.provide(HttpServerLive)
    )
  ),
  Layer.provideMerge(Lifecycle.Default),
  Layer.provideMerge(TraceSampler.Default)
)
