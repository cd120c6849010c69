/**
 * Before routing (and so before authentication): one path form, 405 for a known path with another method, and
 * the limits on what a request may carry (query text, body media type, size and shape; see `BodyChecks.ts`).
 * Plain functions of the request and its state (the route is matched once, in src/Http/RequestState.ts): they
 * answer the check to run, or `undefined` when there is none, so a request with nothing to check costs no step.
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Either, Option } from "effect"
import {
  type BadRequest,
  type FieldIssue,
  MethodNotAllowed,
  NotFound,
  type PayloadTooLarge,
  type UnsupportedMediaType,
  ValidationFailed
} from "../Domain/Errors.js"
import { checkFormBody, checkQuery, quotableName, readJsonBody } from "./BodyChecks.js"
import type { RequestState } from "./RequestState.js"
import { isCanonical, queryOf } from "./Routes.js"

export type PrecheckError =
  | NotFound
  | MethodNotAllowed
  | BadRequest
  | PayloadTooLarge
  | UnsupportedMediaType
  | ValidationFailed

/**
 * The `/v1` checks: the failure, the check still to run (a body to read: it answers the parsed body, else
 * `undefined`), or `undefined` to go on to the router.
 */
export const precheck = (
  request: HttpServerRequest.HttpServerRequest,
  state: RequestState
): Effect.Effect<unknown, PrecheckError> | undefined => {
  const { path } = state
  if (!isCanonical(path)) return Effect.fail(new NotFound({ message: `No route ${request.method} ${path}` }))
  const { candidates, route } = state.match
  if (candidates.length === 0) return undefined // not a contract path: the router answers (openapi.json, or 404)
  if (route === undefined) {
    const allowed = Array.from(
      new Set(candidates.flatMap(({ method }) => (method === "GET" ? ["GET", "HEAD"] : [method])))
    )
    state.headers.allow = allowed.join(", ")
    return Effect.fail(
      new MethodNotAllowed({ message: `${request.method} is not allowed here; use ${allowed.join(", ")}` })
    )
  }
  const query = queryOf(request.url)
  const queryChecked = query === "" ? undefined : checkParams(query, route.params)
  if (!route.hasPayload) return queryChecked
  return queryChecked === undefined ? readJsonBody(request) : Effect.zipRight(queryChecked, readJsonBody(request))
}

/**
 * A query's parameters against those the endpoint defines: one it does not is refused, naming it, so a typo
 * (`?stauts=archived`) is not silently ignored; then the values' text (`checkQuery`).
 */
const checkParams = (query: string, known: ReadonlySet<string>): Effect.Effect<void, ValidationFailed> => {
  const unknown: Array<FieldIssue> = []
  for (const name of new URLSearchParams(query).keys()) {
    if (!known.has(name) && !unknown.some(({ field }) => field === name)) {
      unknown.push({ field: quotableName(name), message: "unknown parameter" })
    }
  }
  return unknown.length === 0 ? checkQuery(query) : Effect.fail(ValidationFailed.of(unknown))
}

/**
 * The OAuth endpoints refuse unstorable text in their query and form in their own (RFC 6749) form: a response to
 * answer with, or none. Only for `/oauth/` paths (`undefined` otherwise).
 */
export const precheckOAuth = (
  request: HttpServerRequest.HttpServerRequest,
  path: string
): Effect.Effect<Option.Option<HttpServerResponse.HttpServerResponse>> | undefined => {
  if (!path.startsWith("/oauth/")) return undefined
  return Effect.map(
    Effect.either(
      Effect.zipRight(
        checkQuery(queryOf(request.url)),
        request.method === "POST" ? checkFormBody(request) : Effect.void
      )
    ),
    (checked) =>
      Either.isRight(checked)
        ? Option.none()
        : Option.some(
            HttpServerResponse.unsafeJson(
              { error: "invalid_request", error_description: checked.left.message },
              { status: 400, headers: { "cache-control": "no-store", pragma: "no-cache" } }
            )
          )
  )
}
