/**
 * Before routing (and so before authentication): one path form, 405 for a known path with another method, and
 * the limits on what a request may carry (query text, body media type, size and shape). Plain functions of the
 * request and what the server knows of it (`ServedRequest`: the route matched once, src/Http/Routes.ts): they
 * answer the check to run, or `undefined` when there is none, so a request with nothing to check costs no step.
 *
 * What a request body (or query) may be, checked before any schema sees it, so the cost of a bad request is
 * bounded by these limits rather than by the 1 MiB body limit:
 *
 * - `application/json` only (`application/*+json` is 415 too: the contract speaks plain JSON), at most 1 MiB,
 *   valid JSON, a JSON object;
 * - nested at most `MAX_DEPTH` levels (deeper is 400 `bad_request`);
 * - at most `MAX_ARRAY_ITEMS` elements in any array and `MAX_OBJECT_FIELDS` fields in any object
 *   (`validation_failed` naming the field);
 * - no NUL character and no lone UTF-16 surrogate in any string or field name (`validation_failed`), so both
 *   engines store exactly what was sent — PostgreSQL cannot store NUL, and a lone surrogate is not Unicode.
 *
 * The body of an endpoint that takes one is parsed here, once: the parsed object is what the endpoint decodes its
 * payload from (`RequestBody`, src/Contract/Request.ts).
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Either, Option } from "effect"
import {
  BadRequest,
  type FieldIssue,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  UnsupportedMediaType,
  ValidationFailed
} from "../Domain/Errors.js"
import { isCanonical, onFailureResponse, queryOf, type RouteMatch, type ServedRequest } from "./Routes.js"

export const MAX_BODY_BYTES = 1024 * 1024
export const MAX_DEPTH = 32
export const MAX_ARRAY_ITEMS = 100
export const MAX_OBJECT_FIELDS = 100
/** A shape check stops after this many problems; they are reported as a validation failure. */
const MAX_SHAPE_PROBLEMS = 100

/** The media type of a `Content-Type` value, lower-cased, without its parameters (`; charset=utf-8`). */
const mediaType = (value: string | undefined): string => (value ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? ""

/** `application/json`, with or without parameters (`; charset=utf-8`). */
export const isJsonContentType = (value: string | undefined): boolean => mediaType(value) === "application/json"

/** NUL, or a UTF-16 surrogate that is not half of a pair: text no engine can store faithfully. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding NUL is this pattern's purpose.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Why `text` cannot be stored as sent, or undefined when it can. */
export const unstorable = (text: string): string | undefined => {
  const found = UNSTORABLE.exec(text)
  if (found === null) return undefined
  return found[0] === "\u0000"
    ? "must not contain a NUL character (U+0000)"
    : "must be valid Unicode (it contains a lone surrogate)"
}

/** A name as it can be quoted back in `details`: unstorable text replaced by U+FFFD. */
export const quotableName = (name: string): string => name.replace(UNSTORABLE, "\ufffd")

const fieldName = (path: ReadonlyArray<string | number>) => path.join(".")

/**
 * Walks a parsed JSON value once: depth, array and object sizes, and unstorable text. Iterative, so a deeply
 * nested value cannot overflow the stack.
 */
export const checkShape = (value: unknown): Effect.Effect<void, BadRequest | ValidationFailed> => {
  const problems: Array<FieldIssue> = []
  const stack: Array<{ readonly value: unknown; readonly path: ReadonlyArray<string | number> }> = [{ value, path: [] }]
  for (let next = stack.pop(); next !== undefined && problems.length < MAX_SHAPE_PROBLEMS; next = stack.pop()) {
    const { path, value } = next
    if (path.length > MAX_DEPTH) {
      return Effect.fail(new BadRequest({ message: `The body is nested deeper than ${MAX_DEPTH} levels` }))
    }
    if (typeof value === "string") {
      const why = unstorable(value)
      if (why !== undefined) problems.push({ field: fieldName(path), message: why })
    } else if (Array.isArray(value)) {
      if (value.length > MAX_ARRAY_ITEMS) {
        problems.push({
          field: fieldName(path),
          message: `must have at most ${MAX_ARRAY_ITEMS} items (got ${value.length})`
        })
        continue
      }
      value.forEach((item, i) => {
        stack.push({ value: item, path: [...path, i] })
      })
    } else if (value !== null && typeof value === "object") {
      const entries = Object.entries(value)
      if (entries.length > MAX_OBJECT_FIELDS) {
        problems.push({
          field: fieldName(path),
          message: `must have at most ${MAX_OBJECT_FIELDS} fields (got ${entries.length})`
        })
        continue
      }
      for (const [key, item] of entries) {
        const why = unstorable(key)
        if (why !== undefined) problems.push({ field: fieldName([...path, key]), message: `name ${why}` })
        else stack.push({ value: item, path: [...path, key] })
      }
    }
  }
  return problems.length === 0 ? Effect.void : Effect.fail(ValidationFailed.of(problems))
}

/** Query values (repeated keys included), checked for unstorable text; the field is the parameter's name. */
export const checkQuery = (query: string): Effect.Effect<void, ValidationFailed> => {
  if (query === "") return Effect.void
  const problems: Array<FieldIssue> = []
  for (const [key, value] of new URLSearchParams(query)) {
    const why = unstorable(key) ?? unstorable(value)
    if (why !== undefined) problems.push({ field: quotableName(key), message: why })
    if (problems.length >= MAX_SHAPE_PROBLEMS) break
  }
  return problems.length === 0 ? Effect.void : Effect.fail(ValidationFailed.of(problems))
}

const tooLarge = () => new PayloadTooLarge({ message: `The body is over ${MAX_BODY_BYTES} bytes (1 MiB)` })

/**
 * Content type, size and JSON shape of a `/v1` body, checked before any handler reads it. Answers the parsed
 * object, which the server then carries in the request's `Context` (`RequestBody`, src/Contract/Request.ts) for
 * the endpoint's payload: the one parse of the body.
 */
export const readJsonBody: (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<unknown, BadRequest | PayloadTooLarge | UnsupportedMediaType | ValidationFailed> = Effect.fnUntraced(
  function* (request: HttpServerRequest.HttpServerRequest) {
    const length = request.headers["content-length"]
    const declared = length === undefined ? undefined : Number(length)
    const hasBody = request.headers["transfer-encoding"] !== undefined || (declared !== undefined && declared > 0)
    if (!hasBody) {
      return yield* new BadRequest({ message: "A JSON object body is required" })
    }
    if (!isJsonContentType(request.headers["content-type"])) {
      return yield* new UnsupportedMediaType({ message: "Send the body as application/json" })
    }
    if (declared !== undefined && declared > MAX_BODY_BYTES) return yield* tooLarge()
    const text = yield* Effect.mapError(request.text, () => new BadRequest({ message: "The body could not be read" }))
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) return yield* tooLarge()
    const parsed = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: () => new BadRequest({ message: "The body is not valid JSON" })
    })
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      return yield* new BadRequest({ message: "The body must be a JSON object" })
    }
    yield* checkShape(parsed)
    return parsed
  }
)

/**
 * A form or JSON body outside `/v1` (the OAuth endpoints), checked for unstorable text only: whatever else is
 * wrong with it, the endpoint answers in its own form. The text is cached, so the endpoint reads it again.
 */
export const checkFormBody: (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<void, BadRequest | ValidationFailed> = Effect.fnUntraced(function* (
  request: HttpServerRequest.HttpServerRequest
) {
  const type = mediaType(request.headers["content-type"])
  const declared = Number(request.headers["content-length"] ?? "0")
  if (type === "" || declared > MAX_BODY_BYTES) return
  const text = yield* Effect.orElseSucceed(request.text, () => "")
  if (type === "application/x-www-form-urlencoded") return yield* checkQuery(text)
  if (type !== "application/json") return
  const parsed = yield* Effect.option(Effect.try((): unknown => JSON.parse(text)))
  if (parsed._tag === "Some") yield* checkShape(parsed.value)
})

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
  served: ServedRequest
): Effect.Effect<unknown, PrecheckError> | undefined => {
  const { path } = served
  if (!isCanonical(path)) return Effect.fail(new NotFound({ message: `No route ${request.method} ${path}` }))
  const { candidates, route } = served.match
  if (candidates.length === 0) return undefined // not a contract path: the router answers (openapi.json, or 404)
  if (route === undefined) return methodNotAllowed(request.method, served.match)

  const query = queryOf(request.url)
  const queryChecked = query === "" ? undefined : checkParams(query, route.params)
  if (!route.hasPayload) return queryChecked
  return queryChecked === undefined ? readJsonBody(request) : Effect.zipRight(queryChecked, readJsonBody(request))
}

/** 405, with the methods the path answers in `Allow`. */
const methodNotAllowed = (method: string, { candidates }: RouteMatch): Effect.Effect<never, MethodNotAllowed> => {
  const allowed = Array.from(
    new Set(candidates.flatMap(({ method }) => (method === "GET" ? ["GET", "HEAD"] : [method])))
  )
  return Effect.zipRight(
    onFailureResponse({ allow: allowed.join(", ") }),
    Effect.fail(new MethodNotAllowed({ message: `${method} is not allowed here; use ${allowed.join(", ")}` }))
  )
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
