/**
 * The API reference, served from this origin alone, so it works offline and behind a strict proxy:
 *
 *   GET /v1/openapi.json                 the OpenAPI 3.1 document (`OpenApi.ts`), for this server's address
 *   GET /docs                            the Scalar API reference page, the document inline
 *   GET /docs/assets/scalar.<hash>.js    Scalar's standalone bundle, as `@effect/platform` ships it
 *
 * `HttpApiScalar.layer` inlines the 3.4 MB bundle into every page (uncached) and Scalar then loads its fonts from
 * a third-party host. Here the bundle is a separate asset whose URL carries its content hash (cached for a year),
 * the page asks for no default fonts, and a Content-Security-Policy allows this origin only. Everything is sent
 * brotli- or gzip-compressed when the client accepts it, with an `ETag`. The request dialog starts with bearer
 * authentication selected.
 */

import { createHash } from "node:crypto"
import { promisify } from "node:util"
import { brotliCompress, constants, gzip } from "node:zlib"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, Option } from "effect"
import { makeCurrentIssuer } from "../Auth/Issuer.js"
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

/** Scalar's standalone bundle, from the `@effect/platform` package this service already depends on. */
const loadScalarBundle = Effect.gen(function* () {
  const entry = import.meta.resolve("@effect/platform/HttpApiScalar")
  const internal = new URL(`./internal/httpApiScalar${entry.endsWith(".ts") ? ".ts" : ".js"}`, entry).href
  const module: unknown = yield* Effect.promise(() => import(internal))
  const source = module !== null && typeof module === "object" && "javascript" in module ? module.javascript : undefined
  if (typeof source !== "string") return yield* Effect.dieMessage(`Scalar's bundle was not found in ${internal}`)
  // Its source map is not shipped; a browser's developer tools would ask for it.
  return new TextEncoder().encode(source.replace(/\n\/\/# sourceMappingURL=\S+\s*$/, "\n"))
})

const escapeAttribute = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;")

/** JSON inside `<script type="application/json">`: no `<` can close the element early. */
const scriptJson = (value: unknown) =>
  JSON.stringify(value)
    .replace(/</g, "\\u003c")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029")

/** Scalar's options: https://github.com/scalar/scalar/blob/main/documentation/configuration.md */
const scalarConfiguration = {
  _integration: "html",
  // The default fonts come from a third-party host; the CSP would block them anyway.
  withDefaultFonts: false,
  // No toolbar ("Share", "Generate SDKs": links to the vendor's site) and no usage reports.
  showToolbar: "never",
  telemetry: false,
  // The request dialog starts with bearer authentication selected.
  authentication: { preferredSecurityScheme: "bearer" },
  defaultOpenAllTags: false
}

/**
 * This origin only. Scalar injects its styles, hence `'unsafe-inline'` for styles (never for scripts), and
 * compiles a WebAssembly module, hence `'wasm-unsafe-eval'` (WebAssembly only: JavaScript `eval` stays refused).
 */
const contentSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

const page = (document: ReturnType<typeof openApiDocument>, scriptUrl: string) => `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="icon" href="data:," />
    <title>${escapeAttribute(document.info.title)}</title>
    <meta name="description" content="${escapeAttribute(document.info.description ?? "")}" />
  </head>
  <body>
    <script id="api-reference" type="application/json" data-configuration="${escapeAttribute(JSON.stringify(scalarConfiguration))}">${scriptJson(
      document
    )}</script>
    <script src="${escapeAttribute(scriptUrl)}"></script>
  </body>
</html>
`

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
    // Scalar's bundle (3.4 MB) is read, hashed and encoded on the first request for the docs, not at start-up: a
    // server that never serves them never holds it. A bundle that cannot be read is that request's 500.
    const assets = yield* Effect.cached(
      Effect.flatMap(loadScalarBundle, (bundle) =>
        Effect.map(variants(bundle), (bundleVariants) => ({
          scriptUrl: `/docs/assets/scalar.${createHash("sha256").update(bundle).digest("hex").slice(0, 16)}.js`,
          bundleVariants
        }))
      )
    )

    const encode = (text: string) => new TextEncoder().encode(text)
    const make = (baseUrl: string, offer: (raw: Uint8Array<ArrayBuffer>) => Effect.Effect<Variants>) =>
      Effect.gen(function* () {
        const { scriptUrl } = yield* assets
        const document = openApiDocument({ baseUrl, authUrl: `${baseUrl}/oauth` })
        return {
          json: yield* offer(encode(JSON.stringify(document))),
          page: yield* offer(encode(page(document, scriptUrl)))
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
    yield* router.get(
      "/docs/assets/:asset",
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const path = Option.getOrElse(Option.fromNullable(request.url.split("?")[0]), () => request.url)
        const { scriptUrl, bundleVariants } = yield* assets
        if (path !== scriptUrl) {
          return HttpServerResponse.text("Not found", { status: 404, headers: { "cache-control": "no-store" } })
        }
        return yield* respond(bundleVariants, "text/javascript; charset=utf-8", {
          "cache-control": "public, max-age=31536000, immutable",
          "x-content-type-options": "nosniff"
        })
      })
    )
  })
)
