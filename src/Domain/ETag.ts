/**
 * Entity tags (RFC 9110 §8.8.3): what a resource's `ETag` is, and how `If-Match` and `If-None-Match` compare with it.
 * A resource's tag is a hash of its representation: the JSON of `data` in its success envelope, byte for byte as it
 * is sent. The server puts it on the answers it sends (src/Http/ApiMiddleware.ts); a conditional write computes the
 * same tag from the record it is about to change, as the record's schema encodes it (src/Sql/Preconditions.ts), so
 * the two agree without a column of their own, and the tag changes whenever anything the client sees does.
 */
import { Context, Effect, Option, Schema } from "effect"

const utf8 = new TextEncoder()

/** The strong entity tag of a representation: `"` + 128 bits of its SHA-256, base64url + `"`. */
export const etagOf = (representation: Uint8Array): string =>
  `"${new Bun.CryptoHasher("sha256").update(representation).digest("base64url").slice(0, 22)}"`

/** The tag of `record` as `schema` encodes it for the wire (the `data` of its success envelope). */
export const etagOfRecord = <A, I>(schema: Schema.Schema<A, I>, record: A): Effect.Effect<string> =>
  Effect.map(Effect.orDie(Schema.encode(schema)(record)), (encoded) => etagOf(utf8.encode(JSON.stringify(encoded))))

/** An `If-Match` / `If-None-Match` value: `*`, or its entity tags as sent (`W/` kept). */
export type TagList = "*" | ReadonlyArray<string>

const ENTITY_TAG = /(?:W\/)?"[^"]*"/g

/** The tags of a header value (`"a", W/"b"`), or `*`; text that is not a tag is left out. */
export const parseTagList = (value: string): TagList => {
  if (value.trim() === "*") return "*"
  return value.match(ENTITY_TAG) ?? []
}

/** `If-Match` holds: `*`, or one of the tags equals `current` by the strong comparison (a weak tag never does). */
export const ifMatchHolds = (list: TagList, current: string): boolean =>
  list === "*" || list.some((tag) => tag === current)

/** `If-None-Match` fails (the client has it): `*`, or one of the tags equals `current` by the weak comparison. */
export const noneMatchFails = (list: TagList, current: string): boolean =>
  list === "*" || list.some((tag) => (tag.startsWith("W/") ? tag.slice(2) : tag) === current)

/**
 * The `If-Match` of the request being served, carried in its `Context` (the server provides it for a `/v1` route
 * whose request has one: src/Http/ApiMiddleware.ts). A write that honours it (src/Sql/Preconditions.ts) reads it
 * here, so a service's signature need not carry it; outside a request (the CLI, a worker) there is none.
 */
export class RequestIfMatch extends Context.Tag("RequestIfMatch")<RequestIfMatch, TagList>() {}

/** The request's `If-Match`, if it has one. */
export const currentIfMatch: Effect.Effect<TagList | undefined> = Effect.map(
  Effect.serviceOption(RequestIfMatch),
  Option.getOrUndefined
)
