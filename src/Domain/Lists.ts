/**
 * List parameters shared by every list endpoint: page/per_page, sort/order, search, created_after/before and a
 * status filter drawn from the resource's own states. Values arrive as query strings and decode to typed values.
 */
import { HttpServerRequest } from "@effect/platform"
import { ParseResult, Schema } from "effect"
import { optional } from "./Payload.js"
import { InstantCeilFromString, InstantFromString } from "./Time.js"

const intInRange = (min: number, max: number) =>
  Schema.transformOrFail(Schema.String, Schema.Int, {
    strict: true,
    decode: (input, _, ast) => {
      const n = /^\d{1,15}$/.test(input) ? Number(input) : Number.NaN
      return n >= min && n <= max
        ? ParseResult.succeed(n)
        : ParseResult.fail(
          new ParseResult.Type(
            ast,
            input,
            max === Number.MAX_SAFE_INTEGER
              ? `must be an integer of at least ${min}`
              : `must be an integer from ${min} to ${max}`
          )
        )
    },
    encode: (n) => ParseResult.succeed(String(n))
  })

export const PageNumber = intInRange(1, Number.MAX_SAFE_INTEGER).annotations({ description: "Page number, from 1" })
export const PerPage = intInRange(1, 100).annotations({ description: "Items per page, 1–100" })

export const oneOf = <const L extends readonly [string, ...Array<string>]>(...values: L) =>
  Schema.Literal(...values).annotations({ message: () => `must be one of: ${values.join(", ")}` })

export const Order = oneOf("asc", "desc")
export type Order = typeof Order.Type

export const SearchText = Schema.String.pipe(
  Schema.maxLength(200, { message: () => "must be at most 200 characters" })
)

const commonListFields = <const Sort extends readonly [string, ...Array<string>]>(sort: Sort) => ({
  page: Schema.optionalWith(PageNumber, { default: () => 1, exact: true }),
  per_page: Schema.optionalWith(PerPage, { default: () => 20, exact: true }),
  sort: Schema.optionalWith(oneOf(...sort), { default: () => sort[0], exact: true }),
  order: Schema.optionalWith(Order, { default: () => "desc" as const, exact: true }),
  search: optional(SearchText),
  created_after: optional(InstantFromString),
  created_before: optional(InstantCeilFromString)
})

/** The query schema of a list endpoint: sort fields and statuses are the resource's own. */
export const listParams = <
  const Sort extends readonly [string, ...Array<string>],
  const Status extends readonly [string, ...Array<string>]
>(options: { readonly sort: Sort; readonly status: Status }) =>
  Schema.Struct({ ...commonListFields(options.sort), status: optional(oneOf(...options.status)) })

/** A list query without a status filter (teams, members). */
export const listParamsNoStatus = <const Sort extends readonly [string, ...Array<string>]>(
  options: { readonly sort: Sort }
) => Schema.Struct(commonListFields(options.sort))

/** What a repository needs to run one list query. */
export interface ListQuery<Sort extends string = string, Status extends string = string> {
  readonly page: number
  readonly per_page: number
  readonly sort: Sort
  readonly order: Order
  readonly search?: string | undefined
  readonly created_after?: string | undefined
  readonly created_before?: string | undefined
  readonly status?: Status | undefined
}

/**
 * The `Link` header (RFC 8288) for a page, as GitHub sends it: first, prev, next, last, keeping the other
 * query parameters as the client sent them.
 */
export const linkHeader = (
  request: HttpServerRequest.HttpServerRequest,
  /** The absolute base, or undefined for links relative to the request (path and query only). */
  baseUrl: string | undefined,
  page: { readonly page: number; readonly per_page: number; readonly total: number }
): string => {
  const url = new URL(request.url, baseUrl ?? "http://localhost")
  const last = Math.max(1, Math.ceil(page.total / page.per_page))
  const at = (n: number) => {
    url.searchParams.set("page", String(n))
    url.searchParams.set("per_page", String(page.per_page))
    return baseUrl === undefined ? `${url.pathname}${url.search}` : url.toString()
  }
  const links: Array<string> = []
  if (page.page < last) links.push(`<${at(page.page + 1)}>; rel="next"`)
  if (page.page > 1) links.push(`<${at(Math.min(page.page - 1, last))}>; rel="prev"`)
  links.push(`<${at(1)}>; rel="first"`)
  links.push(`<${at(last)}>; rel="last"`)
  return links.join(", ")
}
