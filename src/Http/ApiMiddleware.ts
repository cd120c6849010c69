/**
 * The API-level middleware, run before routing around everything the server answers: CORS, the drain, the checks
 * before routing, the translation of every failure into one of our errors (so every `/v1` response wears the
 * envelope, and a 503 says when to retry), and the per-IP limit for requests no credential was counted for.
 *
 * One wrapper with plain JS inside: the checks are functions of what the server knows of the request
 * (`ServedRequest`, src/Http/Routes.ts) that answer `undefined` when there is nothing to run. The body of an
 * endpoint that takes one is parsed here, once, and carried in the request's `Context` (`RequestBody`) for the
 * endpoint. Conditional requests (`ETag`, `If-None-Match`, `HEAD`) are answered around the endpoint
 * (src/Http/Conditional.ts). Authentication and `Idempotency-Key` belong to the endpoint: its declared
 * `Authentication` middleware (src/Http/Authentication.ts) and the wrapper its handler opts into
 * (src/Idempotency/Http.ts), both after routing. Each header is put on the response by the step that knows it
 * (`withHeaders`, src/Http/Routes.ts); nothing is shared between them but the request's own fiber.
 *
 * CORS, for browser applications (single-page apps: public clients with PKCE). They authenticate by bearer token
 * or by client credentials in the body, never by cookie, so any origin may call: `Access-Control-Allow-Origin: *`,
 * never with credentials.
 *
 *   /v1/…                                          every method; preflight answered for any path under it
 *   /oauth/token, /oauth/revoke                    POST
 *   /.well-known/oauth-authorization-server[/…],
 *   /.well-known/oauth-protected-resource[/…],
 *   /oauth/jwks.json                               GET: public documents a browser client discovers first
 *
 * Not `/oauth/introspect`: it is for resource servers with a confidential client's secret, server to server; a
 * browser has no such secret to send. Not the dashboard, the sign-in and consent pages, `/oauth/login`, `/docs`
 * or health: they send no CORS header at all. A preflight (`OPTIONS`) is answered first, 204, before anything else
 * runs (no authentication, no rate limit: a browser sends one per URL it has not asked about lately). Every other
 * response of those paths gets `Access-Control-Allow-Origin` and `Access-Control-Expose-Headers`.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { type Cause, Context, Effect, Option } from "effect"
import { ApiForMiddleware as Api } from "../Api.js"
import { RequestBody } from "../Contract/Request.js"
import { type RateLimited, Unavailable } from "../Domain/Errors.js"
import { requestIdFrom } from "../Domain/RequestId.js"
import { RateLimit } from "../RateLimit/RateLimit.js"
import { limitUnauthenticated } from "./Authentication.js"
import { conditional } from "./Conditional.js"
import { type OurError, RETRY_AFTER_SECONDS, translate } from "./ErrorTranslation.js"
import { precheck, precheckOAuth } from "./Precheck.js"
import { isDrainRefused, Lifecycle, refusedWhileDraining } from "./RequestWrapper.js"
import { onFailureResponse, servedRequest, servedRequestOf, withHeaders } from "./Routes.js"

/** The headers a client sends that a preflight must allow (beyond the CORS-safelisted ones). */
export const ALLOWED_HEADERS = [
  "Authorization",
  "Content-Type",
  "Idempotency-Key",
  "If-Match",
  "If-None-Match",
  "X-Request-Id"
] as const

/** The response headers a browser script may read (beyond the CORS-safelisted ones). */
export const EXPOSED_HEADERS = [
  "ETag",
  "Link",
  "Retry-After",
  "X-Request-Id",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "Idempotent-Replayed",
  "WWW-Authenticate"
] as const

const PREFLIGHT_MAX_AGE_SECONDS = 600

type Kind = "api" | "token" | "document"

const METHODS: Record<Kind, string> = {
  api: "GET, HEAD, POST, PUT, DELETE",
  token: "POST",
  document: "GET, HEAD"
}

const isUnder = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`)

/** Which CORS a path answers, or `undefined` for none. */
export const corsKind = (path: string): Kind | undefined => {
  if (isUnder(path, "/v1")) return "api"
  if (path === "/oauth/token" || path === "/oauth/revoke") return "token"
  if (
    isUnder(path, "/.well-known/oauth-authorization-server") ||
    isUnder(path, "/.well-known/oauth-protected-resource") ||
    path === "/oauth/jwks.json"
  ) {
    return "document"
  }
  return undefined
}

const CORS_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": EXPOSED_HEADERS.join(", ")
}

/** A preflight's answer. */
const preflight = (kind: Kind): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.empty({
    status: 204,
    headers: {
      "access-control-allow-origin": "*",
      "access-control-allow-methods": METHODS[kind],
      "access-control-allow-headers": ALLOWED_HEADERS.join(", "),
      "access-control-max-age": String(PREFLIGHT_MAX_AGE_SECONDS)
    }
  })

/** A failure as one of our errors; a 503 it answers says when to retry (a 503 `/health/ready` is an answer). */
const failed = (cause: Cause.Cause<unknown>) =>
  Effect.tapError(translate(cause), (error) =>
    error instanceof Unavailable ? onFailureResponse({ "retry-after": String(RETRY_AFTER_SECONDS) }) : Effect.void
  )

export const ApiMiddlewareLive = HttpApiBuilder.middleware(
  Api,
  Effect.gen(function* () {
    const lifecycle = yield* Lifecycle
    // Requests no credential was counted for are counted against the client IP once their outcome is known.
    const limited = limitUnauthenticated(yield* RateLimit)
    return (app: HttpApp.Default) =>
      Effect.withFiberRuntime<
        HttpServerResponse.HttpServerResponse,
        OurError | RateLimited,
        HttpServerRequest.HttpServerRequest
      >((fiber) => {
        const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
        // Always set by the server's per-request wrapper (src/Http/RequestWrapper.ts); made here only if this runs
        // without it.
        const served = servedRequestOf(fiber) ?? servedRequest(request, requestIdFrom(undefined))
        const kind = corsKind(served.path)
        if (kind !== undefined && request.method === "OPTIONS") return Effect.succeed(preflight(kind))
        const work = ((): HttpApp.Default<unknown> => {
          if (isDrainRefused(lifecycle, request)) return refusedWhileDraining
          const checks = precheck(request, served)
          const handled = conditional(request, served, app)
          if (checks !== undefined) {
            return Effect.flatMap(checks, (json) =>
              json === undefined ? handled : Effect.provideService(handled, RequestBody, { json })
            )
          }
          if (handled !== app) return handled
          const oauth = precheckOAuth(request, served.path)
          if (oauth === undefined) return app
          return Effect.flatMap(oauth, Option.match({ onNone: () => app, onSome: Effect.succeed }))
        })()
        const answered = limited(request, Effect.catchAllCause(work, failed))
        return kind === undefined ? answered : withHeaders(answered, CORS_HEADERS)
      })
  })
)
