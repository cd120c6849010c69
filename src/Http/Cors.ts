/**
 * CORS for browser applications (single-page apps: public clients with PKCE). They authenticate by bearer token or
 * by client credentials in the body, never by cookie, so any origin may call: `Access-Control-Allow-Origin: *`,
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
 * or health: they send no CORS header at all.
 *
 * A preflight (`OPTIONS`) is answered here, 204, before anything else runs (no authentication, no rate limit: a
 * browser sends one per URL it has not asked about lately). Every other response of those paths gets the
 * `Access-Control-Allow-Origin` and `Access-Control-Expose-Headers` headers through the request state.
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { RequestState } from "./RequestState.js"

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

const RESPONSE_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": EXPOSED_HEADERS.join(", ")
}

/**
 * For a path that answers CORS: the preflight's answer for an `OPTIONS` request, or `undefined` once the CORS
 * headers are in the state for whatever response the request gets. `undefined` for every other path, untouched.
 */
export const cors = (
  request: HttpServerRequest.HttpServerRequest,
  state: RequestState
): HttpServerResponse.HttpServerResponse | undefined => {
  const kind = corsKind(state.path)
  if (kind === undefined) return undefined
  if (request.method === "OPTIONS") {
    return HttpServerResponse.empty({
      status: 204,
      headers: {
        "access-control-allow-origin": "*",
        "access-control-allow-methods": METHODS[kind],
        "access-control-allow-headers": ALLOWED_HEADERS.join(", "),
        "access-control-max-age": String(PREFLIGHT_MAX_AGE_SECONDS)
      }
    })
  }
  Object.assign(state.headers, RESPONSE_HEADERS)
  return undefined
}
