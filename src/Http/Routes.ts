/**
 * The contract's route table, built once, and the one path form the server serves. The router is made strict
 * (case-sensitive, no trailing-slash or duplicate-slash folding) and a path that spells an unreserved character
 * as a percent escape (`/%761/projects`) is refused before routing, so `/V1/projects`, `/v1//projects`,
 * `/v1/projects/` and `/%761/projects` are unknown paths (404) like any other: nothing is served past the checks
 * that apply to `/v1`.
 */
import { HttpRouter } from "@effect/platform"
import { Option } from "effect"
import type * as AST from "effect/SchemaAST"
import { Api } from "../Api.js"

export interface RouteShape {
  readonly method: string
  /** The declared path, e.g. `/v1/projects/:id`. */
  readonly path: string
  readonly segments: ReadonlyArray<string>
  readonly hasPayload: boolean
  /** The endpoint's schemas, to decode a refused request again for the structure of its failure. */
  readonly schemas: {
    readonly path: Option.Option<AST.AST>
    readonly payload: Option.Option<AST.AST>
    readonly headers: Option.Option<AST.AST>
    readonly urlParams: Option.Option<AST.AST>
  }
}

const astOf = (schema: Option.Option<{ readonly ast: AST.AST }>) => Option.map(schema, ({ ast }) => ast)

export const routes: ReadonlyArray<RouteShape> = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({
    method: endpoint.method,
    path: endpoint.path,
    segments: endpoint.path.split("/"),
    hasPayload: Option.isSome(endpoint.payloadSchema) && endpoint.method !== "GET" && endpoint.method !== "DELETE",
    schemas: {
      path: astOf(endpoint.pathSchema),
      payload: astOf(endpoint.payloadSchema),
      headers: astOf(endpoint.headersSchema),
      urlParams: astOf(endpoint.urlParamsSchema)
    }
  }))
)

/** The contract's routes whose path pattern matches `path` exactly (any method). */
export const matching = (path: string): ReadonlyArray<RouteShape> => {
  const segments = path.split("/")
  return routes.filter(
    (route) =>
      route.segments.length === segments.length &&
      route.segments.every((segment, i) => (segment.startsWith(":") ? segments[i] !== "" : segment === segments[i]))
  )
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
export const routeOf = (method: string, path: string): string | undefined =>
  path.startsWith("/v1/")
    ? matching(path).find((route) => route.method === method)?.path
    : path.startsWith("/dashboard/")
      ? "/dashboard/*"
      : path

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
