/**
 * Server wiring: the contract's handlers, the middleware around them, docs, health, and the Bun server.
 */
import { HttpApiBuilder, HttpApiScalar, HttpApp, HttpServer, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Layer } from "effect"
import { Api } from "./Api.js"
import { ApiKeysHttp } from "./ApiKeys/Http.js"
import { AuthenticationLive } from "./Auth/Http.js"
import { ServerConfig } from "./Config.js"
import { CurrentRequestId, requestIdFrom } from "./Domain/RequestId.js"
import { ApiMiddlewareLive } from "./Http/Failures.js"
import { GracefulShutdown, Lifecycle } from "./Http/Lifecycle.js"
import { ProjectsHttp } from "./Projects/Http.js"
import { TeamsHttp } from "./Teams/Http.js"
import { UsersHttp } from "./Users/Http.js"
import { WebhooksHttp } from "./Webhooks/Http.js"

/** Bun's own cap: far above ours, so a declared oversize body still gets our 413 envelope. */
const BUN_MAX_BODY_BYTES = 16 * 1024 * 1024

const isHealth = (url: string) => url.startsWith("/health/")

/**
 * Around everything: the request id (in a FiberRef for the envelopes, in the logs, in `X-Request-Id`),
 * the in-flight count for graceful shutdown, and one access-log line. The response is sent inside `app`,
 * so headers go on through a pre-response handler, not by changing the returned response.
 */
const serveMiddleware = (app: HttpApp.Default) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const lifecycle = yield* Lifecycle
    const requestId = requestIdFrom(request.headers["x-request-id"])
    const started = performance.now()
    yield* HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", requestId))
    )
    return yield* lifecycle.track(app).pipe(
      Effect.tap((response) =>
        isHealth(request.url) ? Effect.void : Effect.logInfo("request", {
          method: request.method,
          path: request.url.split("?")[0],
          status: response.status,
          duration_ms: Math.round((performance.now() - started) * 100) / 100
        })
      ),
      Effect.locally(CurrentRequestId, requestId),
      Effect.annotateLogs("request_id", requestId)
    )
  })

const HealthRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const lifecycle = yield* Lifecycle
    yield* router.get("/health/live", HttpServerResponse.json({ status: "ok" }))
    yield* router.get(
      "/health/ready",
      Effect.gen(function*() {
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
  Layer.provide([ProjectsHttp, UsersHttp, TeamsHttp, ApiKeysHttp, WebhooksHttp]),
  Layer.provide(AuthenticationLive)
)

const BunServerLive = Layer.unwrapEffect(
  Effect.map(Effect.orDie(ServerConfig), ({ host, port }) =>
    BunHttpServer.layer({ port, hostname: host, maxRequestBodySize: BUN_MAX_BODY_BYTES }))
)

/** The HTTP server and everything it serves; drains in-flight requests before it stops. */
export const HttpLive = GracefulShutdown.pipe(
  Layer.provide(
    HttpApiBuilder.serve(serveMiddleware).pipe(
      Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
      Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/v1/openapi.json" })),
      Layer.provide(ApiMiddlewareLive),
      Layer.provide(HealthRoutes),
      Layer.provide(ApiLive),
      HttpServer.withLogAddress,
      Layer.provide(BunServerLive)
    )
  ),
  Layer.provideMerge(Lifecycle.Default)
)
