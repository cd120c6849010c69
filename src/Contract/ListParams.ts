/**
 * The query parameters of every list endpoint: page/per_page, sort/order, search, created_after/before and a
 * status filter drawn from the resource's own states. Values arrive as query strings and decode to a `ListQuery`.
 */
import { ParseResult, Schema } from "effect"
import { Order, oneOf } from "../Domain/Lists.js"
import { optional } from "../Domain/Payload.js"
import { InstantCeilFromString, InstantFromString } from "../Domain/Time.js"

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

export const SearchText = Schema.String.pipe(Schema.maxLength(200, { message: () => "must be at most 200 characters" }))

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
>(options: {
  readonly sort: Sort
  readonly status: Status
}) => Schema.Struct({ ...commonListFields(options.sort), status: optional(oneOf(...options.status)) })

/** A list query without a status filter (teams, members). */
export const listParamsNoStatus = <const Sort extends readonly [string, ...Array<string>]>(options: {
  readonly sort: Sort
}) => Schema.Struct(commonListFields(options.sort))
