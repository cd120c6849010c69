/**
 * The API reference, served from this origin alone, so it works offline and behind a strict proxy:
 *
 *   GET /v1/openapi.json   the OpenAPI 3.1 document (`OpenApi.ts`), for this server's address
 *   GET /docs              the reference rendered as plain HTML from that document (`DocsPage.ts`): no script,
 *                          no font, nothing fetched after the page itself
 *
 * Both are sent brotli- or gzip-compressed when the client accepts it, with an `ETag`.
 */

import { createHash } from "node:crypto"
import { promisify } from "node:util"
import { brotliCompress, constants, gzip } from "node:zlib"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"
import { makeCurrentIssuer } from "../Auth/Issuer.js"
import { renderReference } from "./DocsPage.js"
import { openApiDocument } from "./OpenApi.js"

type Encoding = "br" | "gzip" | "identity"

/** The best encoding the client accepts (`q=0` refuses one). */
export const negotiate = (acceptEncoding: string | undefined): Encoding => {
  const accepted = new Set(
    (acceptEncoding ?? "").split(",").flatMap((part) => {
      const [token = "", ...params] = part.trim().toLowerCase().split(";")
      const q = params.map((param) => /^\s*q=([0-9.]+)\s*$/.exec(param)).find((match) => match !== null)
      return q !== undefined && q !== null && Number(q[1]) === 0 ? [] : [token.trim()]
    })
  )
  if (accepted.has("br")) return "br"
  if (accepted.has("gzip") || accepted.has("*")) return "gzip"
  return "identity"
}

/** The bytes of a body in each encoding it is offered in, made when first asked for. */
interface Variants {
  readonly etag: string
  /** Whether it is offered compressed; if not, every request gets the identity bytes. */
  readonly compressed: boolean
  readonly body: (encoding: Encoding) => Effect.Effect<Uint8Array<ArrayBuffer>>
}

/** Weak: the same validator for every encoding of the same content (`Vary: Accept-Encoding`). */
const etagOf = (bytes: Uint8Array) => `W/"${createHash("sha256").update(bytes).digest("base64url").slice(0, 27)}"`

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

/**
 * Compressed off the event loop, once per encoding, on first request. Brotli at quality 6 and gzip at 9: brotli's
 * top quality gains little on the bundle for many times the compression time.
 */
const variants = (raw: Uint8Array<ArrayBuffer>) =>
  Effect.map(
    Effect.all({
      gzip: Effect.cached(Effect.promise(() => gzipAsync(raw, { level: 9 }))),
      br: Effect.cached(
        Effect.promise(() =>
          brotliAsync(raw, {
            params: { [constants.BROTLI_PARAM_QUALITY]: 6, [constants.BROTLI_PARAM_SIZE_HINT]: raw.byteLength }
          })
        )
      )
    }),
    (compressed): Variants => ({
      etag: etagOf(raw),
      compressed: true,
      body: (encoding) =>
        encoding === "identity"
          ? Effect.succeed(raw)
          : Effect.map(compressed[encoding], (bytes) => new Uint8Array(bytes))
    })
  )

/** Offered as they are: for bodies made per request, where compressing them too would double what each costs. */
const identityOnly = (raw: Uint8Array<ArrayBuffer>): Variants => ({
  etag: etagOf(raw),
  compressed: false,
  body: () => Effect.succeed(raw)
})

const respond = Effect.fnUntraced(function* (made: Variants, contentType: string, headers: Record<string, string>) {
  const request = yield* HttpServerRequest.HttpServerRequest
  const common = { ...headers, etag: made.etag, vary: "Accept-Encoding" }
  const ifNoneMatch = request.headers["if-none-match"]
  const bare = (tag: string) => tag.trim().replace(/^W\//, "")
  if (ifNoneMatch?.split(",").some((tag) => bare(tag) === bare(made.etag))) {
    return HttpServerResponse.empty({ status: 304, headers: common })
  }
  const encoding = made.compressed ? negotiate(request.headers["accept-encoding"]) : "identity"
  return HttpServerResponse.uint8Array(yield* made.body(encoding), {
    contentType,
    headers: encoding === "identity" ? common : { ...common, "content-encoding": encoding }
  })
})

/**
 * This origin only, and no script at all: the page is HTML and one inline style sheet (`DocsPage.ts`).
 */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'none'",
  "style-src 'unsafe-inline'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

/**
 * A few base URLs at most (one, with `BASE_URL` set): past that, made again per request by `overflow` rather than
 * kept. Without `BASE_URL` the base URL comes from the `Host` header, which any client can vary.
 */
const memo = <A>(make: (key: string) => A, overflow: (key: string) => A, size = 8) => {
  const cache = new Map<string, A>()
  return (key: string): A => {
    const hit = cache.get(key)
    if (hit !== undefined) return hit
    if (cache.size >= size) return overflow(key)
    const made = make(key)
    cache.set(key, made)
    return made
  }
}

export const DocsRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const currentIssuer = yield* makeCurrentIssuer

    const encode = (text: string) => new TextEncoder().encode(text)
    const make = (baseUrl: string, offer: (raw: Uint8Array<ArrayBuffer>) => Effect.Effect<Variants>) =>
      Effect.gen(function* () {
        const document = openApiDocument({ baseUrl, authUrl: `${baseUrl}/oauth` })
        return {
          json: yield* offer(encode(JSON.stringify(document))),
          page: yield* offer(encode(renderReference(document, baseUrl)))
        }
      })
    // Kept and compressed for the first few addresses; past them, built per request and sent uncompressed, so a
    // client sending a new `Host` each time costs a document's JSON, not its compression too.
    const documentFor = memo(
      (baseUrl: string) => make(baseUrl, variants).pipe(Effect.cached, Effect.runSync),
      (baseUrl: string) => make(baseUrl, (raw) => Effect.succeed(identityOnly(raw)))
    )
    const current = Effect.flatMap(currentIssuer, (issuer) => documentFor(issuer.baseUrl))

    yield* router.get(
      "/v1/openapi.json",
      Effect.flatMap(current, (made) =>
        respond(made.json, "application/json", { "cache-control": "no-cache", "access-control-allow-origin": "*" })
      )
    )
    yield* router.get(
      "/docs",
      Effect.flatMap(current, (made) =>
        respond(made.page, "text/html; charset=utf-8", {
          "cache-control": "no-cache",
          "content-security-policy": contentSecurityPolicy,
          "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer"
        })
      )
    )
  })
)
