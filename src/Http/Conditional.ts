/**
 * Conditional requests (RFC 9110 §13), for every `/v1` route in one place, around the endpoint's answer:
 *
 * - A `200` whose body is a success envelope holding one record (`{"data":{…},"meta":{…}}`), answering a `GET`,
 *   `HEAD` or `PUT` of a path that has a `GET`, carries an `ETag`: the hash of its `data` as sent (src/Domain/ETag.ts).
 * - `GET`/`HEAD` with `If-None-Match` naming it (or `*`): `304` with the same headers and no body; with `If-Match`
 *   naming none of it: `412`.
 * - `HEAD` is routed as `GET` (src/Http/Routes.ts); its answer keeps `GET`'s status and headers (`Content-Type`,
 *   `Content-Length` too), and the server sends no body.
 * - `If-Match` on a `PUT` or `DELETE` is compared by the write itself, in its transaction (src/Sql/Preconditions.ts);
 *   here only where the path has no `GET`, so no `ETag`: a list of tags can never match there (`412` at once), `*`
 *   goes on.
 *
 * Requests with none of these headers on other methods pass through untouched.
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"
import { PreconditionFailed } from "../Domain/Errors.js"
import { etagOf, ifMatchHolds, noneMatchFails, parseTagList, RequestIfMatch } from "../Domain/ETag.js"
import type { ServedRequest } from "./Routes.js"

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
  const { candidates } = served.match
  const method = request.method
  if (method === "GET" || method === "HEAD") return read(request, served, app)
  if (method !== "PUT" && method !== "DELETE") return app
  const tagged = candidates.some((candidate) => candidate.method === "GET")
  if (!tagged) {
    const ifMatch = request.headers["if-match"]
    return ifMatch === undefined || parseTagList(ifMatch) === "*" ? app : Effect.fail(preconditionFailed())
  }
  return method === "PUT" ? written(served, app) : app
}
