/**
 * Every error the API answers with, declared once. The classes are what services fail with; `ApiErrors` are
 * the wire schemas that encode them into the error envelope
 * `{ error: { code, message, status, request_id, details? } }` with the HTTP status as an annotation.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Effect, ParseResult, Schema } from "effect"
import { currentRequestId } from "./RequestId.js"

export const FieldIssue = Schema.Struct({
  field: Schema.String.annotations({ description: "Dotted path of the offending field, e.g. `events.1`" }),
  message: Schema.String
}).annotations({ identifier: "FieldIssue" })
export type FieldIssue = typeof FieldIssue.Type

export class BadRequest extends Schema.TaggedError<BadRequest>()("BadRequest", {
  message: Schema.String
}) {}

export class ValidationFailed extends Schema.TaggedError<ValidationFailed>()("ValidationFailed", {
  message: Schema.String,
  details: Schema.Array(FieldIssue)
}) {
  static field(field: string, message: string): ValidationFailed {
    return new ValidationFailed({ message: `${field} ${message}`, details: [{ field, message }] })
  }
  /** At most this many `details` entries are answered; the message counts the rest. */
  static readonly maxDetails = 50

  /**
   * The failure for a list of field problems: the first `maxDetails` of them in `details`, and the message says
   * how many were left out (`atLeast` when the list itself was cut short, so the true count is not known).
   */
  static of(details: ReadonlyArray<FieldIssue>, options?: { readonly atLeast?: boolean }): ValidationFailed {
    const first = details[0]
    const shown = details.slice(0, ValidationFailed.maxDetails)
    const more = options?.atLeast === true ? "or more " : ""
    const message =
      first === undefined
        ? "The request is invalid"
        : details.length === 1 && more === ""
          ? `${first.field === "" ? "body" : first.field} ${first.message}`
          : shown.length < details.length || more !== ""
            ? `${details.length} ${more}fields are invalid; the first ${shown.length} are in details, ${
                details.length - shown.length
              } ${more}left out`
            : `${details.length} fields are invalid; see details`
    return new ValidationFailed({ message, details: shown })
  }
}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}) {
  static resource(kind: string, id: string): NotFound {
    return new NotFound({ message: `No ${kind} with id ${id}` })
  }
}

/** A feed cursor (`after`) naming a row that retention has removed: start again from `created_after`. */
export class CursorExpired extends Schema.TaggedError<CursorExpired>()("CursorExpired", {
  message: Schema.String
}) {}

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", {
  message: Schema.String
}) {}

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String
}) {}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  message: Schema.String
}) {}

export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", {
  message: Schema.String
}) {}

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  message: Schema.String
}) {}

export class IdempotencyKeyInUse extends Schema.TaggedError<IdempotencyKeyInUse>()("IdempotencyKeyInUse", {
  message: Schema.String
}) {}

export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  message: Schema.String
}) {}

export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: Schema.String
}) {
  static readonly default = "An internal error occurred; quote the request id when reporting it"
}

export class Unavailable extends Schema.TaggedError<Unavailable>()("Unavailable", {
  message: Schema.String
}) {}

interface ErrorFields {
  readonly _tag: string
  readonly message: string
  readonly details?: ReadonlyArray<FieldIssue>
}

/** The wire form of one error class: the envelope, with its status for HttpApi and OpenAPI. */
const envelope = <A, I extends ErrorFields, const Code extends string, const Status extends number>(
  errorClass: Schema.Schema<A, I>,
  tag: I["_tag"],
  code: Code,
  status: Status,
  description: string
) =>
  Schema.transformOrFail(
    Schema.Struct({
      error: Schema.Struct({
        code: Schema.Literal(code),
        message: Schema.String,
        status: Schema.Literal(status),
        request_id: Schema.String,
        details: Schema.optional(Schema.Array(FieldIssue))
      })
    }),
    errorClass,
    {
      strict: false,
      decode: ({ error }) =>
        ParseResult.succeed({
          _tag: tag,
          message: error.message,
          ...(error.details !== undefined ? { details: error.details } : {})
        }),
      encode: (fields: I) =>
        Effect.map(currentRequestId, (request_id) => ({
          error: {
            code,
            message: fields.message,
            status,
            request_id,
            ...(fields.details !== undefined ? { details: fields.details } : {})
          }
        }))
    }
  ).annotations({
    ...HttpApiSchema.annotations({ status }),
    identifier: `${tag}Error`,
    description
  })

export const ApiErrors = {
  BadRequest: envelope(BadRequest, "BadRequest", "bad_request", 400, "The body is not JSON, or not a JSON object"),
  ValidationFailed: envelope(
    ValidationFailed,
    "ValidationFailed",
    "validation_failed",
    400,
    "A field, path or query value is invalid; `details` names each one"
  ),
  Unauthorized: envelope(
    Unauthorized,
    "Unauthorized",
    "unauthorized",
    401,
    "Credentials missing, unknown, expired or revoked"
  ),
  Forbidden: envelope(Forbidden, "Forbidden", "forbidden", 403, "The credential lacks the scope the message names"),
  NotFound: envelope(NotFound, "NotFound", "not_found", 404, "No such route, or no such resource visible to you"),
  CursorExpired: envelope(
    CursorExpired,
    "CursorExpired",
    "cursor_expired",
    410,
    "The `after` cursor names a row retention has removed; start again from `created_after`"
  ),
  MethodNotAllowed: envelope(
    MethodNotAllowed,
    "MethodNotAllowed",
    "method_not_allowed",
    405,
    "The path exists but not with this method; see the `Allow` header"
  ),
  Conflict: envelope(Conflict, "Conflict", "conflict", 409, "A uniqueness clash"),
  PayloadTooLarge: envelope(PayloadTooLarge, "PayloadTooLarge", "payload_too_large", 413, "The body is over 1 MiB"),
  UnsupportedMediaType: envelope(
    UnsupportedMediaType,
    "UnsupportedMediaType",
    "unsupported_media_type",
    415,
    "A POST or PUT body that is not application/json"
  ),
  RateLimited: envelope(
    RateLimited,
    "RateLimited",
    "rate_limited",
    429,
    "Over the rate limit; see the `Retry-After` header"
  ),
  IdempotencyKeyInUse: envelope(
    IdempotencyKeyInUse,
    "IdempotencyKeyInUse",
    "idempotency_key_in_use",
    409,
    "A request with the same `Idempotency-Key` is still being processed; retry after `Retry-After` seconds"
  ),
  IdempotencyKeyReused: envelope(
    IdempotencyKeyReused,
    "IdempotencyKeyReused",
    "idempotency_key_reused",
    422,
    "The `Idempotency-Key` was already used with another method, path or body"
  ),
  InternalError: envelope(InternalError, "InternalError", "internal_error", 500, "Something unexpected failed"),
  Unavailable: envelope(
    Unavailable,
    "Unavailable",
    "unavailable",
    503,
    "Shutting down, or the database does not answer"
  )
}
