/**
 * Before routing (and so before authentication): one path form, 405 for a known path with another method, and
 * the limits on what a request may carry (query text, body media type, size and shape; see `BodyChecks.ts`).
 */
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Either, Option } from "effect"
import { MethodNotAllowed, NotFound } from "../Domain/Errors.js"
import { checkFormBody, checkQuery, readJsonBody } from "./BodyChecks.js"
import { isCanonical, matching, pathOf, queryOf } from "./Routes.js"

const allowHeader = (methods: ReadonlyArray<string>) =>
  HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, "allow", methods.join(", ")))
  )

/** The `/v1` checks; succeeds when the request may go on to the router. */
export const precheck = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = pathOf(request.url)
  if (!isCanonical(path)) return yield* new NotFound({ message: `No route ${request.method} ${path}` })
  if (!path.startsWith("/v1/")) return
  const candidates = matching(path)
  if (candidates.length === 0) return // the router answers: openapi.json, or 404
  const route = candidates.find((candidate) => candidate.method === request.method)
  if (route === undefined) {
    const allowed = Array.from(new Set(candidates.map((candidate) => candidate.method)))
    yield* allowHeader(allowed)
    return yield* new MethodNotAllowed({ message: `${request.method} is not allowed here; use ${allowed.join(", ")}` })
  }
  yield* checkQuery(queryOf(request.url))
  if (route.hasPayload) yield* readJsonBody(request)
})

/** The OAuth endpoints refuse unstorable text in their query and form in their own (RFC 6749) form. */
export const precheckOAuth = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = pathOf(request.url)
  if (!path.startsWith("/oauth/")) return Option.none<HttpServerResponse.HttpServerResponse>()
  const checked = yield* Effect.either(
    Effect.zipRight(checkQuery(queryOf(request.url)), request.method === "POST" ? checkFormBody(request) : Effect.void)
  )
  if (Either.isRight(checked)) return Option.none()
  return Option.some(
    HttpServerResponse.unsafeJson(
      { error: "invalid_request", error_description: checked.left.message },
      { status: 400, headers: { "cache-control": "no-store", pragma: "no-cache" } }
    )
  )
})
