/** The GitHub-style `Link` header of a list page. */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Option } from "effect"
import { BaseUrlConfig } from "../Config.js"
import { publicBaseUrl } from "../Domain/BaseUrl.js"
import { ValidationFailed } from "../Domain/Errors.js"
import type { CursorPage, Page } from "../Domain/Lists.js"

/**
 * The `Link` header (RFC 8288) for a page, as GitHub sends it: first, prev, next, last, keeping the other
 * query parameters as the client sent them. Without a usable base the links are relative to the request (path and
 * query only), as RFC 8288 allows.
 */
export const linkHeader = (
  requestUrl: string,
  baseUrl: Option.Option<string>,
  page: { readonly page: number; readonly per_page: number; readonly total: number }
): string => {
  const url = new URL(
    requestUrl,
    Option.getOrElse(baseUrl, () => "http://localhost")
  )
  const last = Math.max(1, Math.ceil(page.total / page.per_page))
  const at = (n: number) => {
    url.searchParams.set("page", String(n))
    url.searchParams.set("per_page", String(page.per_page))
    return Option.isSome(baseUrl) ? url.toString() : `${url.pathname}${url.search}`
  }
  const links: Array<string> = []
  if (page.page < last) links.push(`<${at(page.page + 1)}>; rel="next"`)
  if (page.page > 1) links.push(`<${at(Math.min(page.page - 1, last))}>; rel="prev"`)
  links.push(`<${at(1)}>; rel="first"`)
  links.push(`<${at(last)}>; rel="last"`)
  return links.join(", ")
}

/**
 * `withLinks(page)`: adds the `Link` header for a page to the response being built, and answers the page. Made
 * once by each handler group, which reads `BASE_URL` then: read on every page, an unset setting would cost a
 * failed lookup, and the stack trace of its error, each time.
 */
export const makeWithLinks = Effect.map(Effect.orDie(BaseUrlConfig), (baseUrl) =>
  Effect.fnUntraced(function* <A>(page: Page<A>) {
    const request = yield* HttpServerRequest.HttpServerRequest
    const link = linkHeader(request.url, publicBaseUrl(baseUrl, request.headers), page)
    yield* HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "link", link))
    )
    return page
  })
)

/**
 * The `Link` header of a cursor page: `rel="next"` with `after=<last>` (the other query parameters as the client
 * sent them) while the page is full; none once a page comes back short (there may be more later: ask again).
 */
export const cursorLinkHeader = (
  requestUrl: string,
  baseUrl: Option.Option<string>,
  last: string | undefined
): string | undefined => {
  if (last === undefined) return undefined
  const url = new URL(
    requestUrl,
    Option.getOrElse(baseUrl, () => "http://localhost")
  )
  url.searchParams.set("after", last)
  return `<${Option.isSome(baseUrl) ? url.toString() : `${url.pathname}${url.search}`}>; rel="next"`
}

/** `withCursorLinks(page, last)`: the cursor page's `Link` header (`cursorLinkHeader`), made once as `makeWithLinks`. */
export const makeWithCursorLinks = Effect.map(Effect.orDie(BaseUrlConfig), (baseUrl) =>
  Effect.fnUntraced(function* <P>(page: P, last: string | undefined) {
    const request = yield* HttpServerRequest.HttpServerRequest
    const link = cursorLinkHeader(request.url, publicBaseUrl(baseUrl, request.headers), last)
    if (link !== undefined) {
      yield* HttpApp.appendPreResponseHandler((_request, response) =>
        Effect.succeed(HttpServerResponse.setHeader(response, "link", link))
      )
    }
    return page
  })
)

/**
 * `validation_failed` naming each of the query parameters `names` (numbered paging, an order, bounds on
 * `created_at`) that a cursor request (`after`) carries: "is not allowed with after".
 */
export const refuseWithAfter = (names: ReadonlyArray<string>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const query = new URL(request.url, "http://localhost").searchParams
    const given = names.filter((name) => query.has(name))
    return given.length === 0
      ? Effect.void
      : Effect.fail(ValidationFailed.of(given.map((field) => ({ field, message: "is not allowed with after" }))))
  })

/** The id a cursor page's `rel="next"` link carries: its last item's, while the page is full. */
export const nextAfter = <A extends { readonly id: string }>(page: CursorPage<A>): string | undefined =>
  page.items.length === page.per_page ? page.items[page.items.length - 1]?.id : undefined
