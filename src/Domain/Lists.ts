/**
 * What a list is, whatever the resource: the query a repository runs (page, sort, order, search, creation bounds,
 * a status drawn from the resource's own states) and the page it answers. The query-string form of these is in
 * src/Contract/ListParams.ts.
 */
import { Schema } from "effect"

export const oneOf = <const L extends readonly [string, ...Array<string>]>(...values: L) =>
  Schema.Literal(...values).annotations({ message: () => `must be one of: ${values.join(", ")}` })

export const Order = oneOf("asc", "desc")
export type Order = typeof Order.Type

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

/** One page of a list, as repositories and services return it. */
export interface Page<A> {
  readonly items: ReadonlyArray<A>
  readonly total: number
  readonly page: number
  readonly per_page: number
}

/** A page read with a cursor (`after`): the items after it, oldest first, up to `per_page`. */
export interface CursorPage<A> {
  readonly items: ReadonlyArray<A>
  readonly per_page: number
}
