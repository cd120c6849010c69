/**
 * Framework failures → our errors, so every `/v1` response wears the envelope. Decode failures are translated
 * from the structure of the `ParseIssue` (src/Contract/DecodeFailure.ts).
 */
import * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Either, Option, ParseResult, Schema } from "effect"
import type * as AST from "effect/SchemaAST"
import { MAX_PROBLEMS, validationFailed } from "../Contract/DecodeFailure.js"
import {
  BadRequest,
  Conflict,
  CursorExpired,
  Forbidden,
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
  InternalError,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  PreconditionFailed,
  RateLimited,
  Unauthorized,
  Unavailable,
  UnsupportedMediaType,
  ValidationFailed
} from "../Domain/Errors.js"
import { isUnavailable } from "../Sql/Errors.js"
import { matching, pathOf, queryOf, type RouteShape, routedMethod } from "./Routes.js"

/** Seconds a client is told to wait after a 503 that answers a failure (src/Http/ApiMiddleware.ts sets `Retry-After`). */
export const RETRY_AFTER_SECONDS = 1

export type OurError =
  | BadRequest
  | Conflict
  | CursorExpired
  | ValidationFailed
  | Unauthorized
  | Forbidden
  | NotFound
  | MethodNotAllowed
  | PayloadTooLarge
  | UnsupportedMediaType
  | RateLimited
  | IdempotencyKeyInUse
  | IdempotencyKeyReused
  | PreconditionFailed
  | InternalError
  | Unavailable

const isOurs = (error: unknown): error is OurError =>
  error instanceof BadRequest ||
  error instanceof ValidationFailed ||
  error instanceof Unauthorized ||
  error instanceof Forbidden ||
  error instanceof NotFound ||
  error instanceof MethodNotAllowed ||
  error instanceof Conflict ||
  error instanceof CursorExpired ||
  error instanceof PayloadTooLarge ||
  error instanceof UnsupportedMediaType ||
  error instanceof RateLimited ||
  error instanceof IdempotencyKeyInUse ||
  error instanceof IdempotencyKeyReused ||
  error instanceof PreconditionFailed ||
  error instanceof InternalError ||
  error instanceof Unavailable

/**
 * The framework's own decode error (only the formatted issues survive in it): translated by the issue's tag and
 * path; the message is the schema's, as formatted.
 */
const fromFrameworkDecodeError = (error: HttpApiError.HttpApiDecodeError): ValidationFailed => {
  const details = error.issues.slice(0, MAX_PROBLEMS).map((issue) => ({
    field: issue.path.map(String).join("."),
    message:
      issue._tag === "Missing"
        ? "is required"
        : issue._tag === "Unexpected"
          ? "is not allowed (unknown or read-only field)"
          : issue.message
  }))
  return ValidationFailed.of(details, error.issues.length > MAX_PROBLEMS ? { atLeast: true } : undefined)
}

const decodeParam = (segment: string): string =>
  Either.getOrElse(
    Either.try(() => decodeURIComponent(segment)),
    () => segment
  )

const searchRecord = (query: string): Record<string, string | Array<string>> => {
  const record: Record<string, string | Array<string>> = {}
  for (const [key, value] of new URLSearchParams(query)) {
    const seen = record[key]
    record[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return record
}

const firstFailure = (
  ast: Option.Option<AST.AST>,
  input: () => unknown,
  fieldName?: (field: string) => string
): Option.Option<ValidationFailed> =>
  Option.flatMap(ast, (ast) =>
    Either.match(Schema.decodeUnknownEither(Schema.make<unknown, unknown, never>(ast))(input()), {
      onLeft: (error) => Option.some(validationFailed(error, fieldName)),
      onRight: () => Option.none()
    })
  )

/**
 * A header as HTTP writes it (`idempotency-key` → `Idempotency-Key`): the contract declares headers in lower case,
 * as the server receives them, and the client knows them by this name (src/Http/OpenApi.ts writes them so too).
 */
export const headerName = (name: string): string =>
  name.replace(/(^|-)([a-z])/g, (_, dash: string, letter: string) => `${dash}${letter.toUpperCase()}`)

/**
 * The request decoded again as the framework decodes it (path, headers, query, in that order): its first failure
 * as `validation_failed`, or none. Only called after the framework refused the request, so the cost is the failure's own.
 * Never the body: every endpoint that takes one decodes its payload itself, from the body parsed once before
 * routing (src/Contract/Request.ts), and fails with `validation_failed` there.
 */
const decodeFailure = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = pathOf(request.url)
  const method = routedMethod(request.method)
  const route: RouteShape | undefined = matching(path).find((candidate) => candidate.method === method)
  if (route === undefined) return Option.none<ValidationFailed>()
  const { schemas } = route
  const segments = path.split("/")
  const params = () =>
    Object.fromEntries(
      route.segments.flatMap((segment, i) =>
        segment.startsWith(":") ? [[segment.slice(1), decodeParam(segments[i] ?? "")]] : []
      )
    )
  return firstFailure(schemas.path, params).pipe(
    Option.orElse(() => firstFailure(schemas.headers, () => request.headers, headerName)),
    Option.orElse(() => firstFailure(schemas.urlParams, () => searchRecord(queryOf(request.url))))
  )
})

const unavailable = (cause: Cause.Cause<unknown>) =>
  Effect.zipRight(
    Effect.logWarning("database unavailable", cause),
    Effect.fail(new Unavailable({ message: "The database does not answer; retry shortly" }))
  )

/** Any failure of a request → one of our errors (a defect is logged once and answered as `internal_error`). */
export const translate = (
  cause: Cause.Cause<unknown>
): Effect.Effect<never, OurError, HttpServerRequest.HttpServerRequest> => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (isOurs(error)) return Effect.fail(error)
    if (ParseResult.isParseError(error)) return Effect.fail(validationFailed(error))
    if (error instanceof HttpApiError.HttpApiDecodeError) {
      return Effect.flatMap(decodeFailure, (failure) =>
        Effect.fail(Option.getOrElse(failure, () => fromFrameworkDecodeError(error)))
      )
    }
    if (error instanceof HttpServerError.RouteNotFound) {
      return Effect.fail(new NotFound({ message: `No route ${error.request.method} ${pathOf(error.request.url)}` }))
    }
    if (error instanceof HttpServerError.RequestError) {
      return Effect.fail(new BadRequest({ message: "The request could not be read" }))
    }
    if (error instanceof SqlError && isUnavailable(error)) return unavailable(cause)
  }
  if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
  const defect = Option.getOrUndefined(Cause.dieOption(cause))
  if (defect instanceof SqlError && isUnavailable(defect)) return unavailable(cause)
  return Effect.zipRight(
    Effect.logError("unexpected failure", cause),
    Effect.fail(new InternalError({ message: InternalError.default }))
  )
}
