/**
 * Which errors an endpoint declares, so the OpenAPI document says which endpoint fails how. The pattern:
 *
 * - API-wide (src/Api.ts): what any `/v1` request can get whatever its route — 404 and 405 (unknown route or
 *   method, answered before routing), 500 and 503.
 * - The `Authentication` middleware (src/Contract/Security.ts) declares 401, 403 and 429 for every endpoint of a
 *   group that uses it.
 * - Per endpoint: `withBodyErrors` on an endpoint that takes a JSON body (400 bad_request, 413, 415, and
 *   400 validation_failed); `withParamErrors` on one with path or query parameters but no body (400
 *   validation_failed); `.addError(ApiErrors.Conflict)` where a uniqueness clash can happen; `.addError(…)` for
 *   anything else the endpoint's service can fail with.
 *
 * The server encodes an error by the union of every error declared anywhere, so declaring per endpoint changes
 * only the document, never an answer.
 */
import type * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import { ApiErrors } from "../Domain/Errors.js"

/** 400 `bad_request`, 400 `validation_failed`, 413 and 415: the checks on a JSON body, and its decoding. */
export const withBodyErrors = <
  Name extends string,
  Method extends HttpMethod,
  Path,
  UrlParams,
  Payload,
  Headers,
  Success,
  Error,
  R,
  RE
>(
  endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>
) =>
  endpoint
    .addError(ApiErrors.BadRequest)
    .addError(ApiErrors.ValidationFailed)
    .addError(ApiErrors.PayloadTooLarge)
    .addError(ApiErrors.UnsupportedMediaType)

/** 400 `validation_failed`: a path or query parameter that does not decode (or a rule the service checks). */
export const withParamErrors = <
  Name extends string,
  Method extends HttpMethod,
  Path,
  UrlParams,
  Payload,
  Headers,
  Success,
  Error,
  R,
  RE
>(
  endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, Payload, Headers, Success, Error, R, RE>
) => endpoint.addError(ApiErrors.ValidationFailed)
