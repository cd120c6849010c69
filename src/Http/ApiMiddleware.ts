/**
 * The API-level middleware, run before routing around everything the server answers: CORS, the drain, the checks
 * before routing, the translation of every failure into one of our errors (so every `/v1` response wears the
 * envelope, and a 503 says when to retry), and the per-IP limit for requests no credential was counted for.
 *
 * One wrapper with plain JS inside: the checks are functions of what the server knows of the request
 * (`ServedRequest`, src/Http/Routes.ts) that answer `undefined` when there is nothing to run. The body of an
 * endpoint that takes one is parsed here, once, and carried in the request's `Context` (`RequestBody`) for the
 * endpoint. Conditional requests (`ETag`, `If-None-Match`, `HEAD`) are answered around the endpoint (below).
 * Authentication and `Idempotency-Key` belong to the endpoint: its declared `Authentication` middleware
 * (src/Http/Authentication.ts) and the wrapper its handler opts into (src/Idempotency/Http.ts), both after routing. Each header is put on the response by the step that knows it
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
 *
 * Conditional requests (RFC 9110 §13), for every `/v1` route in one place, around the endpoint's answer:
 *
 * - A `200` whose body is a success envelope holding one record (`{"data":{…},"meta":{…}}`), answering a `GET`,
 *   `HEAD` or `PUT` of a path that has a `GET`, carries an `ETag`: the hash of its `data` as sent (src/Domain/ETag.ts).
 * - `GET`/`HEAD` with `If-None-Match` naming it (or `*`): `304` with the same headers and no body; with `If-Match`
 *   naming none of it: `412`.
 * - `HEAD` is routed as `GET` (src/Http/Routes.ts); its answer keeps `GET`'s status and headers (`Content-Type`,
 *   `Content-Length` too), and the server sends no body.
 * - `If-Match` on a `PUT` or `DELETE` is compared by the write itself, in its transaction (src/Sql/Preconditions.ts),
 *   once it has found the resource and checked the caller's right to it, so a `401`, `403` or `404` comes first (RFC
 *   9110 §13.2.1). Where the path has no `GET`, so no `ETag`, a list of tags never matches there (`412`); `*` goes on.
 *
 * Requests with none of these headers on other methods pass through untouched.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { type Cause, Context, Effect, Option } from "effect"
import { ApiForMiddleware as Api } from "../Api.js"
import { RequestBody } from "../Contract/Request.js"
import { PreconditionFailed, type RateLimited, Unavailable } from "../Domain/Errors.js"
import { etagOf, ifMatchHolds, noneMatchFails, parseTagList, RequestIfMatch } from "../Domain/ETag.js"
import { requestIdFrom } from "../Domain/RequestId.js"
import { RateLimit } from "../RateLimit/RateLimit.js"
import { limitUnauthenticated } from "./Authentication.js"
import { type OurError, RETRY_AFTER_SECONDS, translate } from "./ErrorTranslation.js"
import { precheck, precheckOAuth } from "./Precheck.js"
import { isDrainRefused, Lifecycle, refusedWhileDraining } from "./RequestWrapper.js"
import { onFailureResponse, type ServedRequest, servedRequest, servedRequestOf, withHeaders } from "./Routes.js"

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

// --- conditional requests ---------------------------------------------------------------------------------------

const utf8 = new TextEncoder()

/** `{"data":` — the start of every success envelope. */
const PREFIX = utf8.encode('{"data":')
const OPEN_BRACE = 0x7b

const startsWithPrefix = (bytes: Uint8Array): boolean => {
  for (let i = 0; i < PREFIX.length; i++) if (bytes[i] !== PREFIX[i]) return false
  return bytes[PREFIX.length] === OPEN_BRACE
}

const endsWith = (bytes: Uint8Array, suffix: Uint8Array): boolean => {
  const offset = bytes.length - suffix.length
  if (offset < 0) return false
  for (let i = 0; i < suffix.length; i++) if (bytes[offset + i] !== suffix[i]) return false
  return true
}

/**
 * The `ETag` of a response: the hash of the bytes of its `data`, when it is a `200` success envelope of one record
 * (`{"data":{…},"meta":{"request_id":"<this request's>"}}`, as src/Contract/Envelope.ts encodes it); else none.
 */
export const etagOfResponse = (
  response: HttpServerResponse.HttpServerResponse,
  requestId: string
): string | undefined => {
  const { body } = response
  if (response.status !== 200 || body._tag !== "Uint8Array") return undefined
  const bytes = body.body
  if (!startsWithPrefix(bytes)) return undefined
  const suffix = utf8.encode(`,"meta":{"request_id":${JSON.stringify(requestId)}}}`)
  if (!endsWith(bytes, suffix)) return undefined
  return etagOf(bytes.subarray(PREFIX.length, bytes.length - suffix.length))
}

const preconditionFailed = () => new PreconditionFailed({ message: PreconditionFailed.default })

/** `GET` and `HEAD`: the `ETag`, then `If-Match` / `If-None-Match` against it, and `HEAD`'s entity headers. */
const read = (request: HttpServerRequest.HttpServerRequest, served: ServedRequest, app: HttpApp.Default) =>
  Effect.flatMap(app, (response) => {
    const etag = etagOfResponse(response, served.id)
    if (etag === undefined) return Effect.succeed(headWithEntityHeaders(request, response))
    const ifMatch = request.headers["if-match"]
    if (ifMatch !== undefined && !ifMatchHolds(parseTagList(ifMatch), etag)) return Effect.fail(preconditionFailed())
    const ifNoneMatch = request.headers["if-none-match"]
    if (ifNoneMatch !== undefined && noneMatchFails(parseTagList(ifNoneMatch), etag)) {
      return Effect.succeed(HttpServerResponse.empty({ status: 304, headers: { etag } }))
    }
    return Effect.succeed(headWithEntityHeaders(request, HttpServerResponse.setHeader(response, "etag", etag)))
  })

/** A `HEAD` answer says what `GET`'s body would be: its type and length (the server sends headers only). */
const headWithEntityHeaders = (
  request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse
): HttpServerResponse.HttpServerResponse => {
  const { body } = response
  if (request.method !== "HEAD" || body._tag !== "Uint8Array") return response
  return HttpServerResponse.setHeaders(response, {
    "content-type": body.contentType,
    "content-length": String(body.body.length)
  })
}

/** A `PUT`'s answer is the new representation: its `ETag`, for the next `If-Match`. */
const written = (served: ServedRequest, app: HttpApp.Default) =>
  Effect.map(app, (response) => {
    const etag = etagOfResponse(response, served.id)
    return etag === undefined ? response : HttpServerResponse.setHeader(response, "etag", etag)
  })

/**
 * `app` with the conditional rules of its route, or `app` itself when none applies. A request with `If-Match`
 * carries it in its `Context` (`RequestIfMatch`) to the write that compares it.
 */
export const conditional = (
  request: HttpServerRequest.HttpServerRequest,
  served: ServedRequest,
  app: HttpApp.Default
): HttpApp.Default<PreconditionFailed> => {
  const { route } = served.match
  if (route === undefined) return app
  const ifMatch = request.headers["if-match"]
  return ifMatch === undefined
    ? rulesOf(request, served, app)
    : Effect.provideService(rulesOf(request, served, app), RequestIfMatch, parseTagList(ifMatch))
}

const rulesOf = (
  request: HttpServerRequest.HttpServerRequest,
  served: ServedRequest,
  app: HttpApp.Default
): HttpApp.Default<PreconditionFailed> => {
  const method = request.method
  if (method === "GET" || method === "HEAD") return read(request, served, app)
  // A `PUT` of a path that has a `GET` answers the new representation's tag.
  return method === "PUT" && served.match.candidates.some((candidate) => candidate.method === "GET")
    ? written(served, app)
    : app
}

// --- the middleware ---------------------------------------------------------------------------------------------

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
