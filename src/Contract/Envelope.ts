/**
 * The success and list envelopes, as schemas: handlers return the bare record (or a `Page`), and encoding
 * wraps it with `meta`, reading the request id of the request being served.
 */
import { Effect, ParseResult, Schema } from "effect"
import { currentRequestId } from "../Domain/RequestId.js"

/** `{ data: <object>, meta: { request_id } }` */
export const Success = <A, I>(data: Schema.Schema<A, I>) =>
  Schema.transformOrFail(
    Schema.Struct({ data, meta: Schema.Struct({ request_id: Schema.String }) }),
    Schema.typeSchema(data),
    {
      strict: true,
      decode: (envelope) => ParseResult.succeed(envelope.data),
      encode: (value) => Effect.map(currentRequestId, (request_id) => ({ data: value, meta: { request_id } }))
    }
  )

/** `{ data: [<object>…], meta: { total, page, per_page, request_id } }` */
export const List = <A, I>(item: Schema.Schema<A, I>) =>
  Schema.transformOrFail(
    Schema.Struct({
      data: Schema.Array(item),
      meta: Schema.Struct({
        total: Schema.Int,
        page: Schema.Int,
        per_page: Schema.Int,
        request_id: Schema.String
      })
    }),
    Schema.Struct({
      items: Schema.Array(Schema.typeSchema(item)),
      total: Schema.Int,
      page: Schema.Int,
      per_page: Schema.Int
    }),
    {
      strict: true,
      decode: ({ data, meta }) =>
        ParseResult.succeed({ items: data, total: meta.total, page: meta.page, per_page: meta.per_page }),
      encode: (page) =>
        Effect.map(currentRequestId, (request_id) => ({
          data: page.items,
          meta: { total: page.total, page: page.page, per_page: page.per_page, request_id }
        }))
    }
  )
