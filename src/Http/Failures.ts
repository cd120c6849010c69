/**
 * The API-level middleware: everything the framework would answer on its own (unknown route, wrong method,
 * a body that is not JSON, a decode failure, a crash) becomes one of our errors, so every `/v1` response wears
 * the envelope. It runs before routing, so unknown routes and wrong methods are answered before authentication.
 */
import { HttpApiBuilder, HttpApiError, HttpApp, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Option } from "effect"
import { ApiForMiddleware as Api } from "../Api.js"
import { Lifecycle } from "./Lifecycle.js"
import { limitUnauthenticated } from "./RateLimit.js"
import { RateLimit } from "../RateLimit/RateLimit.js"
import {
  BadRequest,
  Conflict,
  Forbidden,
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

export const MAX_BODY_BYTES = 1024 * 1024

interface RouteShape {
  readonly method: string
  /** The declared path, e.g. `/v1/projects/:id`. */
  readonly path: string
  readonly segments: ReadonlyArray<string>
  readonly hasPayload: boolean
}

const routes: ReadonlyArray<RouteShape> = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({
    method: endpoint.method,
    path: endpoint.path,
    segments: endpoint.path.split("/"),
    hasPayload: Option.isSome(endpoint.payloadSchema) && endpoint.method !== "GET" && endpoint.method !== "DELETE"
  }))
)

/** The contract's routes whose path pattern matches `path` (any method). */
export const matching = (path: string): ReadonlyArray<RouteShape> => {
  const segments = path.split("/")
  return routes.filter((route) =>
    route.segments.length === segments.length &&
    route.segments.every((segment, i) => segment.startsWith(":") ? segments[i] !== "" : segment === segments[i])
  )
}

const isJsonContentType = (value: string | undefined) => {
  const type = (value ?? "").split(";")[0]!.trim().toLowerCase()
  return type === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(type)
}

/** Content type, size and JSON shape of a body, checked before any handler reads it. */
const checkBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const length = request.headers["content-length"]
    const declared = length === undefined ? undefined : Number(length)
    const hasBody = request.headers["transfer-encoding"] !== undefined || (declared !== undefined && declared > 0)
    if (!hasBody) {
      return yield* new BadRequest({ message: "A JSON object body is required" })
    }
    if (!isJsonContentType(request.headers["content-type"])) {
      return yield* new UnsupportedMediaType({ message: "Send the body as application/json" })
    }
    if (declared !== undefined && declared > MAX_BODY_BYTES) {
      return yield* new PayloadTooLarge({ message: `The body is over ${MAX_BODY_BYTES} bytes (1 MiB)` })
    }
    const text = yield* Effect.mapError(request.text, () => new BadRequest({ message: "The body could not be read" }))
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) {
      return yield* new PayloadTooLarge({ message: `The body is over ${MAX_BODY_BYTES} bytes (1 MiB)` })
    }
    const parsed = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: () => new BadRequest({ message: "The body is not valid JSON" })
    })
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      return yield* new BadRequest({ message: "The body must be a JSON object" })
    }
  })

const allowHeader = (methods: ReadonlyArray<string>) =>
  HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, "allow", methods.join(", ")))
  )

/** Before routing: 405 for a known path with another method, and the body checks for routes that take one. */
const precheck = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const path = request.url.split("?")[0] ?? request.url
  if (!path.startsWith("/v1/")) return
  const candidates = matching(path)
  if (candidates.length === 0) return // the router answers: openapi.json, or 404
  const route = candidates.find((candidate) => candidate.method === request.method)
  if (route === undefined) {
    const allowed = Array.from(new Set(candidates.map((candidate) => candidate.method)))
    yield* allowHeader(allowed)
    return yield* new MethodNotAllowed({ message: `${request.method} is not allowed here; use ${allowed.join(", ")}` })
  }
  if (route.hasPayload) yield* checkBody(request)
})

type OurError =
  | BadRequest
  | Conflict
  | ValidationFailed
  | Unauthorized
  | Forbidden
  | NotFound
  | MethodNotAllowed
  | PayloadTooLarge
  | UnsupportedMediaType
  | RateLimited
  | InternalError
  | Unavailable

const isOurs = (error: unknown): error is OurError =>
  error instanceof BadRequest || error instanceof ValidationFailed || error instanceof Unauthorized ||
  error instanceof Forbidden || error instanceof NotFound || error instanceof MethodNotAllowed ||
  error instanceof Conflict ||
  error instanceof PayloadTooLarge || error instanceof UnsupportedMediaType ||
  error instanceof RateLimited || error instanceof InternalError || error instanceof Unavailable

type Issue = HttpApiError.HttpApiDecodeError["issues"][number]

const tidyMessage = (issue: Issue): string => {
  switch (issue._tag) {
    case "Missing":
      return "is required"
    case "Unexpected":
      return "is not allowed (unknown or read-only field)"
    default: {
      const expected = /^Expected (.+), actual (.+)$/s.exec(issue.message)
      return expected === null ? issue.message : `must be ${expected[1]} (got ${expected[2]})`
    }
  }
}

/**
 * One entry per field: a union reports one issue per member (`must be "a"`, `must be "b"`…), merged here into
 * `must be one of: "a", "b" (got "c")`.
 */
const fieldIssues = (issues: ReadonlyArray<Issue>) => {
  const byField = new Map<string, Array<string>>()
  for (const issue of issues) {
    const field = issue.path.join(".")
    byField.set(field, [...(byField.get(field) ?? []), tidyMessage(issue)])
  }
  return Array.from(byField, ([field, messages]) => {
    if (messages.length === 1) return { field, message: messages[0]! }
    const alternatives = messages.map((message) => /^must be (.+) \(got (.+)\)$/s.exec(message))
    const got = alternatives[0]?.[2]
    if (alternatives.every((match) => match !== null && match[2] === got)) {
      return { field, message: `must be one of: ${alternatives.map((match) => match![1]).join(", ")} (got ${got})` }
    }
    return { field, message: messages.join("; or ") }
  })
}

/** SQLite busy or a PostgreSQL that does not answer: the client may retry, so 503 rather than 500. */
const isUnavailable = (defect: unknown) => {
  if (!(defect instanceof SqlError)) return false
  const cause = defect.cause
  const code = cause !== null && typeof cause === "object" && "code" in cause ? String(cause.code) : ""
  return code === "SQLITE_BUSY" || code === "ECONNREFUSED" || code === "CONNECTION_CLOSED" ||
    code === "CONNECT_TIMEOUT" || code === "CONNECTION_ENDED" || code === "57P01" || code === "57P03"
}

const translate = (cause: Cause.Cause<unknown>): Effect.Effect<never, OurError> => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (isOurs(error)) return Effect.fail(error)
    if (error instanceof HttpApiError.HttpApiDecodeError) return Effect.fail(ValidationFailed.of(fieldIssues(error.issues)))
    if (error instanceof HttpServerError.RouteNotFound) {
      return Effect.fail(new NotFound({ message: `No route ${error.request.method} ${error.request.url.split("?")[0]}` }))
    }
    if (error instanceof HttpServerError.RequestError) {
      return Effect.fail(new BadRequest({ message: "The request could not be read" }))
    }
  }
  if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
  const defect = Option.getOrUndefined(Cause.dieOption(cause))
  if (isUnavailable(defect)) {
    return Effect.zipRight(
      Effect.logWarning("database unavailable", cause),
      Effect.fail(new Unavailable({ message: "The database does not answer; retry shortly" }))
    )
  }
  return Effect.zipRight(
    Effect.logError("unexpected failure", cause),
    Effect.fail(new InternalError({ message: InternalError.default }))
  )
}

export const ApiMiddlewareLive = HttpApiBuilder.middleware(
  Api,
  Effect.gen(function*() {
    const lifecycle = yield* Lifecycle
    // Requests that do not authenticate are counted against the client IP once their outcome is known.
    const limitByClient = limitUnauthenticated(yield* RateLimit)
    // Only `/v1` work is refused while draining: health answers for itself, OAuth in its own RFC form.
    const refuseWhileDraining = Effect.flatMap(
      Effect.zip(lifecycle.isDraining, HttpServerRequest.HttpServerRequest),
      ([draining, request]) =>
        draining && request.url.startsWith("/v1/")
          ? Effect.fail(new Unavailable({ message: "The server is shutting down; retry shortly" }))
          : Effect.void
    )
    return (app: HttpApp.Default) =>
      limitByClient(refuseWhileDraining.pipe(Effect.zipRight(precheck), Effect.zipRight(app), Effect.catchAllCause(translate)))
  })
)
