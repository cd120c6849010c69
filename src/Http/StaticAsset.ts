/**
 * A body served as it is from memory (the dashboard's files, the OpenAPI document, the `/docs` page), one way for
 * all of them:
 *
 * - a strong `ETag` of its bytes (the same for every encoding of them, `Vary: Accept-Encoding`);
 * - `If-None-Match` naming it (or `*`) → 304 with no body (weak comparison, RFC 9110 §13.1.2);
 * - brotli or gzip, whichever the client's `Accept-Encoding` takes (`q=0` refuses one), each compressed off the
 *   event loop once, on the first request that wants it; `identity` otherwise.
 *
 * `make` offers the body compressed; `makeUncompressed` offers only its bytes, for a body made per request, where
 * compressing it too would double what each such request costs.
 */
import { createHash } from "node:crypto"
import { promisify } from "node:util"
import { brotliCompress, constants, gzip } from "node:zlib"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"

export type Encoding = "br" | "gzip" | "identity"

/** The best encoding the client accepts: brotli, then gzip (also for `*`), else the bytes as they are. */
export const negotiate = (acceptEncoding: string | undefined): Encoding => {
  const accepted = new Set(
    (acceptEncoding ?? "").split(",").flatMap((part) => {
      const [token = "", ...params] = part.trim().toLowerCase().split(";")
      const q = params.map((param) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(param)).find((match) => match !== null)
      return q !== undefined && q !== null && Number(q[1]) === 0 ? [] : [token.trim()]
    })
  )
  if (accepted.has("br")) return "br"
  if (accepted.has("gzip") || accepted.has("*")) return "gzip"
  return "identity"
}

/** One body, ready to send in each encoding it is offered in. */
export interface StaticAsset {
  readonly contentType: string
  /** Strong: `"<sha-256 of the bytes, base64url>"`. */
  readonly etag: string
  /** Whether it is offered compressed; if not, every request gets its bytes as they are. */
  readonly compressed: boolean
  readonly body: (encoding: Encoding) => Effect.Effect<Uint8Array<ArrayBuffer>>
}

export const etagOf = (bytes: Uint8Array): string =>
  `"${createHash("sha256").update(bytes).digest("base64url").slice(0, 27)}"`

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

/**
 * The body, compressed when first asked for in an encoding (gzip at level 9, brotli at quality 6: brotli's top
 * quality saves little more on these bodies for many times the time, and the `/docs` page and the document are
 * made per address served).
 */
export const make = (contentType: string, bytes: Uint8Array<ArrayBuffer>): Effect.Effect<StaticAsset> =>
  Effect.map(
    Effect.all({
      gzip: Effect.cached(Effect.promise(() => gzipAsync(bytes, { level: 9 }))),
      br: Effect.cached(
        Effect.promise(() =>
          brotliAsync(bytes, {
            params: { [constants.BROTLI_PARAM_QUALITY]: 6, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength }
          })
        )
      )
    }),
    (compressed): StaticAsset => ({
      contentType,
      etag: etagOf(bytes),
      compressed: true,
      body: (encoding) =>
        encoding === "identity"
          ? Effect.succeed(bytes)
          : Effect.map(compressed[encoding], (made) => new Uint8Array(made))
    })
  )

/** The body offered as it is only. */
export const makeUncompressed = (contentType: string, bytes: Uint8Array<ArrayBuffer>): StaticAsset => ({
  contentType,
  etag: etagOf(bytes),
  compressed: false,
  body: () => Effect.succeed(bytes)
})

/** Whether an `If-None-Match` names this tag (or is `*`). */
export const matches = (ifNoneMatch: string | undefined, etag: string): boolean => {
  if (ifNoneMatch === undefined) return false
  const bare = (tag: string) => tag.trim().replace(/^W\//, "")
  return ifNoneMatch.split(",").some((tag) => tag.trim() === "*" || bare(tag) === bare(etag))
}

/** The response to the current request: 304 when its `If-None-Match` names the asset, else the body. */
export const respond = Effect.fnUntraced(function* (asset: StaticAsset, headers: Record<string, string>) {
  const request = yield* HttpServerRequest.HttpServerRequest
  const common = { ...headers, etag: asset.etag, vary: "Accept-Encoding" }
  if (matches(request.headers["if-none-match"], asset.etag)) {
    return HttpServerResponse.empty({ status: 304, headers: common })
  }
  const encoding = asset.compressed ? negotiate(request.headers["accept-encoding"]) : "identity"
  return HttpServerResponse.uint8Array(yield* asset.body(encoding), {
    contentType: asset.contentType,
    headers: encoding === "identity" ? common : { ...common, "content-encoding": encoding }
  })
})
