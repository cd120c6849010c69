/**
 * Framework failures → our errors, so every `/v1` response wears the envelope. Decode failures are translated
 * from the structure of the `ParseIssue` (its tags, paths and the schemas' own message annotations), never by
 * rewriting the formatted English text; the walk stops after `MAX_PROBLEMS` problems, so a body with a hundred
 * thousand bad elements costs no more than one with a few hundred.
 */
import * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Either, Option, ParseResult, Schema } from "effect"
import * as AST from "effect/SchemaAST"
import {
  BadRequest,
  Conflict,
  CursorExpired,
  type FieldIssue,
  Forbidden,
  IdempotencyKeyInUse,
  IdempotencyKeyReused,
  InternalError,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  Unauthorized,
  Unavailable,
  UnsupportedMediaType,
  ValidationFailed
} from "../Domain/Errors.js"
import { isUnavailable } from "../Sql/Errors.js"
import { matching, pathOf, queryOf, type RouteShape } from "./Routes.js"

/** The walk over a decode failure stops after this many problems. */
export const MAX_PROBLEMS = 300
/** Seconds a client is told to wait after a 503 (src/Http/RequestState.ts sets `Retry-After`). */
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
  error instanceof InternalError ||
  error instanceof Unavailable

/** A problem found in a decode failure: a type mismatch keeps its parts, so a union's can be merged. */
type Problem =
  | {
      readonly path: ReadonlyArray<PropertyKey>
      readonly expected: string
      readonly got: string
      readonly alternatives?: boolean
    }
  | { readonly path: ReadonlyArray<PropertyKey>; readonly message: string }

interface Walk {
  readonly problems: Array<Problem>
  cut: boolean
}

/** At most this many characters of a value are quoted back. */
const MAX_QUOTE = 60

const quote = (actual: unknown): string => {
  const text =
    actual === undefined
      ? "undefined"
      : Either.getOrElse(
          Either.try(() => JSON.stringify(actual)),
          () => String(actual)
        )
  return text.length > MAX_QUOTE ? `${text.slice(0, MAX_QUOTE)}…` : text
}

/** What a schema expects, as ParseResult names it: its description, title or identifier, else the schema. */
const expectedOf = (ast: AST.AST): string =>
  AST.getDescriptionAnnotation(ast).pipe(
    Option.orElse(() => AST.getTitleAnnotation(ast)),
    Option.orElse(() => AST.getIdentifierAnnotation(ast)),
    Option.getOrElse(() => String(ast))
  )

/** The message the schema itself gives for this issue (its `message` annotation), if it has one. */
const annotated = (issue: ParseResult.ParseIssue): string | undefined => {
  if (!("ast" in issue) || Option.isNone(AST.getMessageAnnotation(issue.ast))) return undefined
  return ParseResult.ArrayFormatter.formatIssueSync(issue)[0]?.message
}

const walk = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>, acc: Walk): void => {
  if (acc.problems.length >= MAX_PROBLEMS) {
    acc.cut = true
    return
  }
  switch (issue._tag) {
    case "Pointer":
      walk(issue.issue, path.concat(issue.path), acc)
      return
    case "Missing":
      acc.problems.push({ path, message: "is required" })
      return
    case "Unexpected":
      acc.problems.push({ path, message: "is not allowed (unknown or read-only field)" })
      return
    case "Forbidden":
      acc.problems.push({ path, message: "could not be checked" })
      return
    case "Type": {
      const message = issue.message ?? annotated(issue)
      acc.problems.push(
        message !== undefined ? { path, message } : { path, expected: expectedOf(issue.ast), got: quote(issue.actual) }
      )
      return
    }
    case "Refinement": {
      const message = issue.kind === "Predicate" ? annotated(issue) : undefined
      if (message !== undefined) acc.problems.push({ path, message })
      else walk(issue.issue, path, acc)
      return
    }
    case "Transformation": {
      const message = issue.kind === "Transformation" ? annotated(issue) : undefined
      if (message !== undefined) acc.problems.push({ path, message })
      else walk(issue.issue, path, acc)
      return
    }
    case "Composite": {
      const inner = Array.isArray(issue.issues) ? issue.issues : [issue.issues]
      if (!AST.isUnion(issue.ast)) {
        for (const each of inner) walk(each, path, acc)
        return
      }
      // A union reports one problem per member: merged into `must be one of: "a", "b" (got "c")`.
      const members: Walk = { problems: [], cut: false }
      for (const each of inner) walk(each, path, members)
      const first = members.problems[0]
      const samePlace = members.problems.every((problem) => fieldOf(problem.path) === fieldOf(path))
      if (first !== undefined && "expected" in first && samePlace && members.problems.every((p) => "expected" in p)) {
        const expected = members.problems.flatMap((problem) => ("expected" in problem ? [problem.expected] : []))
        acc.problems.push({ path, expected: expected.join(", "), got: first.got, alternatives: expected.length > 1 })
        return
      }
      acc.problems.push(...members.problems.slice(0, MAX_PROBLEMS - acc.problems.length))
      acc.cut ||= members.cut
      return
    }
  }
}

const fieldOf = (path: ReadonlyArray<PropertyKey>) => path.map(String).join(".")

const messageOf = (problem: Problem): string =>
  "message" in problem
    ? problem.message
    : problem.alternatives === true
      ? `must be one of: ${problem.expected} (got ${problem.got})`
      : `must be ${problem.expected} (got ${problem.got})`

/** The field problems of a decode failure, one entry per field (a field's several problems joined). */
export const fieldIssues = (
  issue: ParseResult.ParseIssue
): { readonly details: Array<FieldIssue>; readonly cut: boolean } => {
  const acc: Walk = { problems: [], cut: false }
  walk(issue, [], acc)
  const byField = new Map<string, Array<string>>()
  for (const problem of acc.problems) {
    const field = fieldOf(problem.path)
    byField.set(field, [...(byField.get(field) ?? []), messageOf(problem)])
  }
  return {
    details: Array.from(byField, ([field, messages]) => ({ field, message: messages.join("; or ") })),
    cut: acc.cut
  }
}

/** A decode failure as `validation_failed`. */
export const validationFailed = (error: ParseResult.ParseError): ValidationFailed => {
  const { cut, details } = fieldIssues(error.issue)
  return ValidationFailed.of(details, cut ? { atLeast: true } : undefined)
}

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

const firstFailure = (ast: Option.Option<AST.AST>, input: () => unknown): Option.Option<ParseResult.ParseError> =>
  Option.flatMap(ast, (ast) =>
    Either.match(Schema.decodeUnknownEither(Schema.make<unknown, unknown, never>(ast))(input()), {
      onLeft: Option.some,
      onRight: () => Option.none()
    })
  )

/**
 * The request decoded again as the framework decodes it (path, body, headers, query, in that order): the first
 * `ParseError`, or none. Only called after the framework refused the request, so the cost is the failure's own.
 */
const decodeFailure = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = pathOf(request.url)
  const route: RouteShape | undefined = matching(path).find((candidate) => candidate.method === request.method)
  if (route === undefined) return Option.none<ParseResult.ParseError>()
  const { schemas } = route
  const segments = path.split("/")
  const params = () =>
    Object.fromEntries(
      route.segments.flatMap((segment, i) =>
        segment.startsWith(":") ? [[segment.slice(1), decodeParam(segments[i] ?? "")]] : []
      )
    )
  const text = route.hasPayload ? yield* Effect.orElseSucceed(request.text, () => "") : ""
  const body = () =>
    Either.getOrElse(
      Either.try((): unknown => JSON.parse(text)),
      () => undefined
    )
  return firstFailure(schemas.path, params).pipe(
    Option.orElse(() => (route.hasPayload ? firstFailure(schemas.payload, body) : Option.none())),
    Option.orElse(() => firstFailure(schemas.headers, () => request.headers)),
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
      return Effect.flatMap(decodeFailure, (parseError) =>
        Effect.fail(
          Option.match(parseError, {
            onSome: validationFailed,
            onNone: () => fromFrameworkDecodeError(error)
          })
        )
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
