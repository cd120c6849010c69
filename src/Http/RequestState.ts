/**
 * What the server knows about the request it is serving: built once when the request arrives (src/Http.ts) and
 * shared by every layer after it, so nothing is worked out twice — the request id, the path, the contract route it
 * matched (matched once), and the headers the response must carry (`X-Request-Id`, the rate-limit headers,
 * `Allow`, `WWW-Authenticate`, `Retry-After`), which one pre-response handler puts on whatever response is sent.
 *
 * It lives in one FiberRef of the request's own fiber, set once; layers write to it as plain JS, not by
 * appending pre-response handlers or setting FiberRefs of their own (each of those is a copy of the fiber's refs).
 * That FiberRef is the Domain's `CurrentRequestIdentity`, which the envelopes read the request id from.
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, type Fiber, FiberRef } from "effect"
import { CurrentRequestIdentity, type RequestIdentity } from "../Domain/RequestId.js"
import { RETRY_AFTER_SECONDS } from "./ErrorTranslation.js"
import { lookup, NO_ROUTE, pathOf, type RouteMatch } from "./Routes.js"

export interface RequestState extends RequestIdentity {
  /** `req_<uuid>` (see src/Domain/RequestId.ts). */
  readonly id: string
  /** The path part of the URL, as the router matches it. */
  readonly path: string
  /** The contract routes of a `/v1` path (none for any other path). */
  readonly match: RouteMatch
  /** Headers the response must carry, whatever it is; set by whichever layer learns them. */
  readonly headers: Record<string, string>
  /** The bearer middleware counted the request against its credential's bucket (else the client IP's). */
  countedToCredential: boolean
  /** The request failed with one of our errors: a 503 then says when to retry. */
  failed: boolean
}

class State implements RequestState {
  readonly headers: Record<string, string>
  countedToCredential = false
  failed = false
  constructor(
    readonly id: string,
    readonly path: string,
    readonly match: RouteMatch
  ) {
    this.headers = { "x-request-id": id }
  }
}

/** Where the state is set (once per request, by src/Http.ts). */
export const CurrentRequest = CurrentRequestIdentity

const stateOf = (identity: RequestIdentity | undefined): RequestState | undefined =>
  identity instanceof State ? identity : undefined

export const makeRequestState = (request: HttpServerRequest.HttpServerRequest, id: string): RequestState => {
  const path = pathOf(request.url)
  return new State(id, path, path.startsWith("/v1/") ? lookup(request.method, path) : NO_ROUTE)
}

/** The state of the request a fiber serves; outside the server (no request) none. */
export const requestStateOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): RequestState | undefined =>
  stateOf(fiber.getFiberRef(CurrentRequestIdentity))

/** The state of the request being served; outside the server (no request) none. */
export const currentRequest: Effect.Effect<RequestState | undefined> = Effect.map(
  FiberRef.get(CurrentRequestIdentity),
  stateOf
)

/**
 * The one pre-response handler: the state's headers on the response, and `Retry-After` on a 503 that answers a
 * failure (a 503 `/health/ready` is an answer, not a failure, and has none).
 */
export const withStateHeaders = (
  _request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse
): Effect.Effect<HttpServerResponse.HttpServerResponse> =>
  Effect.map(currentRequest, (state) => {
    if (state === undefined) return response
    if (state.failed && response.status === 503 && state.headers["retry-after"] === undefined) {
      state.headers["retry-after"] = String(RETRY_AFTER_SECONDS)
    }
    return HttpServerResponse.setHeaders(response, state.headers)
  })
