/**
 * The success and list envelopes, as schemas: handlers return the bare record (or a `Page`), and encoding
 * wraps it with `meta`, reading the request id of the request being served.
 */
import { Effect, Option, ParseResult, Predicate, Schema, SchemaAST } from "effect"
import { currentRequestId } from "../Domain/RequestId.js"

/**
 * The type side of an envelope: what the handler returns, taken as the `A` its type says. Encoding then walks each
 * record once, through `data`'s own schema (which checks every field and refinement as it encodes); a full
 * `typeSchema` here would walk and check every field a second time before that.
 */
const typed = <A>(record: Schema.Schema.Any, is: (u: unknown) => boolean) =>
  Schema.declare((u: unknown): u is A => is(u), {
    // Its name is the record's: the documents name a response after its type side.
    identifier: Option.getOrElse(SchemaAST.getIdentifierAnnotation(Schema.typeSchema(record).ast), () => "Record")
  })

/** `{ data: <object>, meta: { request_id } }` */
export const Success = <A, I>(data: Schema.Schema<A, I>) =>
  Schema.transformOrFail(
    Schema.Struct({ data, meta: Schema.Struct({ request_id: Schema.String }) }),
    typed<A>(data, Predicate.isObject),
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
      items: typed<ReadonlyArray<A>>(item, Array.isArray),
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

/**
 * `{ data: [<object>…], meta: { per_page, request_id } }`: a page read with a cursor (`after`), which has no page
 * number or total; the next page is the `Link` header's `rel="next"`.
 */
export const CursorList = <A, I>(item: Schema.Schema<A, I>) =>
  Schema.transformOrFail(
    Schema.Struct({
      data: Schema.Array(item),
      meta: Schema.Struct({ per_page: Schema.Int, request_id: Schema.String })
    }),
    Schema.Struct({ items: typed<ReadonlyArray<A>>(item, Array.isArray), per_page: Schema.Int }),
    {
      strict: true,
      decode: ({ data, meta }) => ParseResult.succeed({ items: data, per_page: meta.per_page }),
      encode: (page) =>
        Effect.map(currentRequestId, (request_id) => ({
          data: page.items,
          meta: { per_page: page.per_page, request_id }
        }))
    }
  )
