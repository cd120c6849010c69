/**
 * The contract's route table, built once; the one path form the server serves; what the server knows of a request
 * (`ServedRequest`, matched once) and how a step puts what it learns on the response (`withHeaders`). The router
 * is made strict (case-sensitive, no trailing-slash or duplicate-slash folding) and a path that spells an
 * unreserved character as a percent escape (`/%761/projects`) is refused before routing, so `/V1/projects`, `/v1//projects`,
 * `/v1/projects/` and `/%761/projects` are unknown paths (404) like any other: nothing is served past the checks
 * that apply to `/v1`.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, type Fiber, Option } from "effect"
import * as AST from "effect/SchemaAST"
import { Api } from "../Api.js"
import { CurrentRequestIdentity, type RequestIdentity } from "../Domain/RequestId.js"

export interface RouteShape {
  readonly method: string
  /** The declared path, e.g. `/v1/projects/:id`. */
  readonly path: string
  readonly segments: ReadonlyArray<string>
  readonly hasPayload: boolean
  /** The query parameters the endpoint defines (its `urlParams` schema's fields); any other is refused. */
  readonly params: ReadonlySet<string>
  /** The endpoint's schemas, to decode a refused request again for the structure of its failure. */
  readonly schemas: {
    readonly path: Option.Option<AST.AST>
    readonly headers: Option.Option<AST.AST>
    readonly urlParams: Option.Option<AST.AST>
  }
}

const astOf = (schema: Option.Option<{ readonly ast: AST.AST }>) => Option.map(schema, ({ ast }) => ast)

/** The names a query may use: the fields of the encoded side of the endpoint's `urlParams` schema (none without). */
const paramsOf = (urlParams: Option.Option<AST.AST>): ReadonlySet<string> =>
  new Set(
    Option.match(urlParams, {
      onNone: () => [],
      onSome: (ast) => AST.getPropertySignatures(AST.encodedAST(ast)).map(({ name }) => String(name))
    })
  )

export const routes: ReadonlyArray<RouteShape> = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({
    method: endpoint.method,
    path: endpoint.path,
    segments: endpoint.path.split("/"),
    hasPayload: Option.isSome(endpoint.payloadSchema) && endpoint.method !== "GET" && endpoint.method !== "DELETE",
    params: paramsOf(astOf(endpoint.urlParamsSchema)),
    schemas: {
      path: astOf(endpoint.pathSchema),
      headers: astOf(endpoint.headersSchema),
      urlParams: astOf(endpoint.urlParamsSchema)
    }
  }))
)

/** The routes by their number of segments: a path is compared only with patterns as long as itself. */
const bySegmentCount: ReadonlyMap<number, ReadonlyArray<RouteShape>> = (() => {
  const table = new Map<number, Array<RouteShape>>()
  for (const route of routes) table.set(route.segments.length, [...(table.get(route.segments.length) ?? []), route])
  return table
})()

const matches = (route: RouteShape, segments: ReadonlyArray<string>): boolean => {
  for (let i = 0; i < segments.length; i++) {
    const pattern = route.segments[i] ?? ""
    if (pattern.startsWith(":") ? segments[i] === "" : pattern !== segments[i]) return false
  }
  return true
}

const NONE: ReadonlyArray<RouteShape> = []

/** The contract's routes whose path pattern matches `path` exactly (any method). */
export const matching = (path: string): ReadonlyArray<RouteShape> => {
  const segments = path.split("/")
  const sameLength = bySegmentCount.get(segments.length)
  if (sameLength === undefined) return NONE
  const found: Array<RouteShape> = []
  for (const route of sameLength) if (matches(route, segments)) found.push(route)
  return found.length === 0 ? NONE : found
}

/** A `/v1` path matched once against the contract: every route of the path, and the one for the method. */
export interface RouteMatch {
  /** The routes whose pattern matches the path, any method (empty: not a contract path). */
  readonly candidates: ReadonlyArray<RouteShape>
  /** The route for the request's method, if the path has one. */
  readonly route: RouteShape | undefined
}

export const NO_ROUTE: RouteMatch = { candidates: NONE, route: undefined }

/** The method whose route serves a request: `HEAD` is answered wherever `GET` is, by its route (RFC 9110 §9.3.2). */
export const routedMethod = (method: string): string => (method === "HEAD" ? "GET" : method)

/** Matches a `/v1` path once, for everyone after (the precheck, the scope check, spans and metrics). */
export const lookup = (method: string, path: string): RouteMatch => {
  if (!path.startsWith("/v1/")) return NO_ROUTE
  const candidates = matching(path)
  if (candidates.length === 0) return NO_ROUTE
  const routed = routedMethod(method)
  return { candidates, route: candidates.find((candidate) => candidate.method === routed) }
}

/** The path part of a request URL (what the router matches). */
export const pathOf = (url: string): string => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/** The query part of a request URL, without the `?`. */
export const queryOf = (url: string): string => {
  const query = url.indexOf("?")
  return query === -1 ? "" : url.slice(query + 1)
}

/** `GET /v1/projects/:id`: the route template, so spans and metrics group by endpoint, not by id. */
export const routeOf = (match: RouteMatch, path: string): string | undefined =>
  path.startsWith("/v1/") ? match.route?.path : path.startsWith("/dashboard/") ? "/dashboard/*" : path

/** `%41`–`%5A`, `%61`–`%7A`, `%30`–`%39`, `%2D`, `%2E`, `%5F`, `%7E`: escapes of characters that need none. */
const ESCAPED_UNRESERVED = /%(?:[46][1-9A-Fa-f]|[57][0-9Aa]|3[0-9]|2[DdEe]|5[Ff]|7[Ee])/

/**
 * Whether `path` is written the one way the server serves it: no percent escape of an unreserved character
 * (RFC 3986 §2.3 says such a URI is equivalent to the unescaped one, so the router would serve it), and no empty
 * segment (`//`, or a trailing `/`, which the router would take as an empty parameter). Case is left to the
 * strict router below, which does not fold it.
 */
export const isCanonical = (path: string): boolean =>
  !ESCAPED_UNRESERVED.test(path) && !path.includes("//") && (path === "/" || !path.endsWith("/"))

/** The router matches paths exactly as written: `/V1/projects`, `/v1//projects` and `/v1/projects/` are unknown. */
export const StrictRouting = HttpRouter.setRouterConfig({
  caseSensitive: true,
  ignoreTrailingSlash: false,
  ignoreDuplicateSlashes: false
})

/**
 * What the server knows of a request as it arrives, worked out once (src/Http/RequestWrapper.ts) and never changed:
 * its id, its path and the contract route it matches. It is the value of the request fiber's `CurrentRequestIdentity`
 * (the envelopes read the id there), so it costs no FiberRef of its own. Nothing is written to it: what a layer
 * learns of the answer it puts on the response (or, for a failure, on the response the platform makes of it:
 * `withHeaders`, below).
 */
export interface ServedRequest extends RequestIdentity {
  /** `req_<uuid>` (see src/Domain/RequestId.ts). */
  readonly id: string
  /** The path part of the URL, as the router matches it. */
  readonly path: string
  /** The contract routes of a `/v1` path (none for any other path). */
  readonly match: RouteMatch
}

class Served implements ServedRequest {
  constructor(
    readonly id: string,
    readonly path: string,
    readonly match: RouteMatch
  ) {}
}

export const servedRequest = (request: HttpServerRequest.HttpServerRequest, id: string): ServedRequest => {
  const path = pathOf(request.url)
  return new Served(id, path, path.startsWith("/v1/") ? lookup(request.method, path) : NO_ROUTE)
}

/** The request a fiber serves, as the server's per-request wrapper set it; outside the server none. */
export const servedRequestOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): ServedRequest | undefined => {
  const identity = fiber.getFiberRef(CurrentRequestIdentity)
  return identity instanceof Served ? identity : undefined
}

/**
 * `headers` on the response the platform makes of this request's failure: the failure leaves the API as it is and
 * is encoded outside it, so they go through the platform's pre-response handler of the request's fiber.
 */
export const onFailureResponse = (headers: Readonly<Record<string, string>>): Effect.Effect<void> =>
  HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeaders(response, headers))
  )

/**
 * `headers` on whatever response the request gets: on the answer itself, or (`onFailureResponse`) on the one the
 * platform makes of its failure. What a layer learns of the response, it puts there so, not in a shared object.
 */
export const withHeaders = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  headers: Readonly<Record<string, string>>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.matchCauseEffect(app, {
    onSuccess: (response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)),
    onFailure: (cause) => Effect.zipRight(onFailureResponse(headers), Effect.failCause(cause))
  })
