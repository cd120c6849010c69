/**
 * Server wiring: the contract's handlers, the middleware around them, docs, health, and the Bun server.
 */
import {
  HttpApiBuilder,
  HttpApp,
  HttpMiddleware,
  HttpServer,
  HttpServerRequest,
  HttpServerResponse,
  HttpTraceContext
} from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer, Metric, Option } from "effect"
import { Api } from "./Api.js"
import { ApiKeysHttp } from "./ApiKeys/Http.js"
import { ServerConfig } from "./Config.js"
import { DeploymentsHttp } from "./Deployments/Http.js"
import { CurrentRequestId, requestIdFrom } from "./Domain/RequestId.js"
import { ApiMiddlewareLive } from "./Http/ApiMiddleware.js"
import { AuthenticationLive } from "./Http/Authentication.js"
import { DashboardRoutes } from "./Http/Dashboard.js"
import { DocsRoutes } from "./Http/Docs.js"
import { GracefulShutdown, Lifecycle } from "./Http/Lifecycle.js"
import { pathOf, routeOf, StrictRouting } from "./Http/Routes.js"
import { OAuthRoutes } from "./OAuth/Http.js"
import { requestDuration } from "./Observability/Metrics.js"
import { TraceSampler } from "./Observability/Sampling.js"
import { ProjectsHttp } from "./Projects/Http.js"
import { InvitationsHttp, TeamsHttp } from "./Teams/Http.js"
import { UsersHttp } from "./Users/Http.js"
import { WebhooksHttp } from "./Webhooks/Http.js"

/** Bun's own cap: far above ours, so a declared oversize body still gets our 413 envelope. */
const BUN_MAX_BODY_BYTES = 16 * 1024 * 1024

const isHealth = (url: string) => url.startsWith("/health/")

/**
 * The request-duration histogram tagged for one method, route and status, built once (tagging makes a new
 * metric key, hashed on every update, each time). Methods come from clients, so the table stops growing at a
 * bound and anything past it is tagged afresh per request.
 */
const taggedDurations = new Map<string, Metric.Metric.Histogram<number>>()
const durationOf = (method: string, route: string, status: number) => {
  const key = `${method} ${route} ${status}`
  const known = taggedDurations.get(key)
  if (known !== undefined) return known
  const tagged = requestDuration.pipe(
    Metric.tagged("http.request.method", method),
    Metric.tagged("http.route", route),
    Metric.tagged("http.response.status_code", String(status))
  )
  if (taggedDurations.size < 1000) taggedDurations.set(key, tagged)
  return tagged
}

/**
 * Around everything: the request id (in a FiberRef for the envelopes, in the logs, in `X-Request-Id`),
 * the in-flight count for graceful shutdown, and one access-log line. The response is sent inside `app`,
 * so headers go on through a pre-response handler, not by changing the returned response.
 */
const serveMiddleware = (app: HttpApp.Default) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const lifecycle = yield* Lifecycle
    const sampler = yield* TraceSampler
    const requestId = requestIdFrom(request.headers["x-request-id"])
    const started = performance.now()
    const path = pathOf(request.url)
    const route = routeOf(request.method, path)
    yield* HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId))
    )
    const served = lifecycle.track(app).pipe(
      Effect.tap((response) => {
        const seconds = (performance.now() - started) / 1000
        return Effect.zipRight(
          Metric.update(durationOf(request.method, route ?? "unmatched", response.status), seconds),
          // The fields as annotations: attributes of the OTLP log record (queryable), not a JSON string in its body.
          Effect.logInfo("request").pipe(
            Effect.annotateLogs({
              method: request.method,
              path,
              status: response.status,
              duration_ms: Math.round(seconds * 100_000) / 100
            })
          )
        )
      }),
      Effect.locally(CurrentRequestId, requestId),
      Effect.annotateLogs("request_id", requestId)
    )
    if (isHealth(path)) return yield* lifecycle.track(app)
    const parent = HttpTraceContext.fromHeaders(request.headers)
    // A request the sampler leaves out makes no spans at all.
    if (!sampler.shouldSample(parent)) return yield* Effect.withTracerEnabled(served, false)
    // The server span, continuing an incoming `traceparent`; named by route (`GET /v1/projects/:id`).
    return yield* Effect.useSpan(
      route === undefined ? request.method : `${request.method} ${route}`,
      {
        kind: "server",
        captureStackTrace: false,
        ...Option.match(parent, { onNone: () => ({}), onSome: (parent) => ({ parent }) }),
        attributes: {
          "http.request.method": request.method,
          "url.path": path,
          "request.id": requestId,
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
  })

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
  Layer.provide([ProjectsHttp, UsersHttp, TeamsHttp, InvitationsHttp, DeploymentsHttp, ApiKeysHttp, WebhooksHttp]),
  Layer.provide(AuthenticationLive)
)

const BunServerLive = Layer.unwrapEffect(
  Effect.map(Effect.orDie(ServerConfig), ({ host, port }) =>
    BunHttpServer.layer({ port, hostname: host, maxRequestBodySize: BUN_MAX_BODY_BYTES })
  )
)

/** The HTTP server and everything it serves; drains in-flight requests before it stops. */
export const HttpLive = GracefulShutdown.pipe(
  Layer.provide(
    HttpApiBuilder.serve(serveMiddleware).pipe(
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
      Layer.provide(BunServerLive)
    )
  ),
  Layer.provideMerge(Lifecycle.Default),
  Layer.provideMerge(TraceSampler.Default)
)
