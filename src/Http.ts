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
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect, Layer, Option } from "effect"
import { Api } from "./Api.js"
import { ApiKeysHttp } from "./ApiKeys/Http.js"
import { AuditHttp } from "./Audit/Http.js"
import { FastPathsConfig, ServerConfig } from "./Config.js"
import { DeploymentsHttp } from "./Deployments/Http.js"
import { EventsHttp } from "./Events/Http.js"
import { EventTypesHttp } from "./EventTypes/Http.js"
import { ApiMiddlewareLive } from "./Http/ApiMiddleware.js"
import { AuthenticationLive } from "./Http/Authentication.js"
import { type TrustedProxies, trustedProxies } from "./Http/ClientAddress.js"
import { DashboardRoutes } from "./Http/Dashboard.js"
import { DocsRoutes } from "./Http/Docs.js"
import { makeNodeServer } from "./Http/NodeServer.js"
import { GracefulShutdown, Lifecycle, makeRequestWrapper, withRequestId } from "./Http/RequestWrapper.js"
import { StrictRouting } from "./Http/Routes.js"
import { IdempotentLive } from "./Idempotency/Http.js"
import { AuthorizationsHttp, OAuthClientsHttp } from "./OAuth/Apps/Http.js"
import { OAuthRoutes } from "./OAuth/Http.js"
import { TraceSampler } from "./Observability/Sampling.js"
import { ProjectsHttp } from "./Projects/Http.js"
import { SessionsHttp } from "./Sessions/Http.js"
import { InvitationsHttp, TeamsHttp } from "./Teams/Http.js"
import { UsersHttp } from "./Users/Http.js"
import { WebhooksHttp } from "./Webhooks/Http.js"

/**
 * The most body the server reads into memory for any request: a backstop far above our own 1 MiB (src/Http/
 * Precheck.ts), so a body declared too large still gets our 413 envelope without being read, and one sent
 * chunked gets it once read; past this the read fails and the connection is cut (Bun.serve's own cap was the same).
 */
const MAX_READ_BODY_BYTES = 16 * 1024 * 1024

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
    const wrap = makeRequestWrapper(yield* Effect.orDie(FastPathsConfig), lifecycle, sampler)
    const wrapped =
      proxies.length === 0 ? wrap : (app: HttpApp.Default) => wrap(behindProxies(trustedProxies(proxies))(app))
    return HttpApiBuilder.serve(wrapped).pipe(
      Layer.locally(HttpApp.currentPreResponseHandlers, Option.some(withRequestId))
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
    EventsHttp,
    EventTypesHttp
  ]),
  Layer.provide([OAuthClientsHttp, AuthorizationsHttp, AuditHttp]),
  Layer.provide(SessionsHttp),
  Layer.provide([AuthenticationLive, IdempotentLive])
)

/** The `node:http` server (src/Http/NodeServer.ts: why, its time-outs and headers). */
const HttpServerLive = Layer.unwrapEffect(
  Effect.map(Effect.orDie(ServerConfig), ({ host, idleTimeout, port }) =>
    NodeHttpServer.layer(makeNodeServer({ idleTimeout }), { port, host })
  )
)

/** The body backstop, for every request the server serves (the platform reads without a bound otherwise). */
const MaxReadBodyLive = Layer.succeed(
  HttpIncomingMessage.MaxBodySize,
  Option.some(FileSystem.Size(MAX_READ_BODY_BYTES))
)

/**
 * Everything the service serves, on `server`; drains in-flight requests before it stops. The service runs it on
 * `node:http` (`HttpLive`); bench/pipeline.ts on a server with no socket, to measure the app's own work.
 */
export const httpLiveOn = <ROut, E, RIn>(server: Layer.Layer<ROut, E, RIn>) =>
  GracefulShutdown.pipe(
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
        Layer.provide(server)
      )
    ),
    Layer.provideMerge(Lifecycle.Default),
    Layer.provideMerge(TraceSampler.Default)
  )

/** The HTTP server (`node:http`) and everything it serves. */
export const HttpLive = httpLiveOn(HttpServerLive)
