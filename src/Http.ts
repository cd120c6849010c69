/**
 * Server wiring: the contract's handlers, the middleware around them, docs, health, and the HTTP server
 * (`node:http` on Bun, below).
 */
import { createServer, type IncomingMessage, type Server, ServerResponse } from "node:http"
import type { Socket } from "node:net"
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

const isCallback = (arg: unknown): arg is () => void => typeof arg === "function"

/**
 * The server's response (`makeNodeServer` below). Bun 1.4.5's `node:http` never calls `end`'s callback once the
 * connection is closed (the client went away, or the parser refused the rest of the request after its headers), nor
 * emits `finish` or `error`. The platform sends every answer by `end(body, callback)` and waits for the callback, in
 * a region that cannot be interrupted: the request would wait forever, counted as in flight, and shutdown would
 * wait for it. This response calls the callback when the connection closes if it has not been called by then, and
 * at once if it was already closed.
 */
class SettlingResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override end(callback?: () => void): this
  override end(chunk: unknown, callback?: () => void): this
  override end(chunk: unknown, encoding: BufferEncoding, callback?: () => void): this
  override end(first?: unknown, second?: unknown, third?: unknown): this {
    const given = isCallback(first) ? first : isCallback(second) ? second : isCallback(third) ? third : undefined
    if (given === undefined) return this.endWith(first, second, undefined)
    let called = false
    // Idempotent, so it can stay registered: `close` comes once for every response, and removes it.
    const settle = () => {
      if (called) return
      called = true
      given()
    }
    if (this.destroyed) {
      // Already closed: nothing will be written, and nothing would call back.
      super.end()
      queueMicrotask(settle)
      return this
    }
    this.once("close", settle)
    return this.endWith(first === given ? undefined : first, second === given ? undefined : second, settle)
  }

  private endWith(chunk: unknown, encoding: unknown, callback: (() => void) | undefined): this {
    if (chunk === undefined) return super.end(callback)
    if (typeof encoding === "string" && Buffer.isEncoding(encoding)) return super.end(chunk, encoding, callback)
    return super.end(chunk, callback)
  }
}

/**
 * The HTTP server, `node:http` as Bun implements it, rather than `Bun.serve`: Bun 1.4.5's `Bun.serve` answers
 * neither of two pipelined requests when the first one's handler awaits anything (scripts/bun-pipelining-repro.ts),
 * while its `node:http` answers them in order, for a few microseconds more per request.
 *
 * - Time-out: `HTTP_IDLE_TIMEOUT` (10 s, as Bun.serve's default `idleTimeout` was) is the socket time-out, which
 *   Bun's `node:http` honours: a connection is closed when no request has been completed and no answer written for
 *   that long, so a client sending its headers slowly (slowloris) is cut off, as is an idle keep-alive connection
 *   and a request still unanswered (Bun.serve did the same). Bun 1.4.5 ignores `headersTimeout` and
 *   `requestTimeout`; they are set for Node's sake.
 * - Duplicate headers are joined (`a, b`), as Bun.serve did, rather than all but the first dropped: two
 *   `Authorization` headers are no credential, not the first of them.
 * - A response whose connection is gone settles (`SettlingResponse`).
 */
export const makeNodeServer =
  (options: { readonly idleTimeout: Duration.Duration }) =>
  (): Server<typeof IncomingMessage, typeof SettlingResponse> => {
    const millis = Duration.toMillis(options.idleTimeout)
    const server = createServer({
      ServerResponse: SettlingResponse,
      headersTimeout: millis,
      requestTimeout: 3 * millis,
      keepAliveTimeout: millis,
      joinDuplicateHeaders: true
    })
    // Armed once per connection: the socket's own time-out resets on every read and write all the same, while Bun's
    // `server.timeout` would re-arm it on every request, work that buys nothing.
    server.on("connection", (socket: Socket) => {
      socket.setTimeout(millis, () => socket.destroy())
    })
    return server
  }

/** The `node:http` server (above: why, its time-outs and headers). */
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
