/**
 * The API reference, served from this origin alone, so it works offline and behind a strict proxy:
 *
 *   GET /v1/openapi.json   the OpenAPI 3.1 document (`OpenApi.ts`), for this server's address
 *   GET /docs              the reference rendered as plain HTML from that document (`DocsPage.ts`): no script,
 *                          no font, nothing fetched after the page itself
 *
 * Both are sent as `StaticAsset.ts` sends a body: brotli- or gzip-compressed when the client accepts it, with an
 * `ETag`, 304 when it is unchanged.
 */

import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { makeCurrentIssuer } from "../Auth/Issuer.js"
import { renderReference } from "./DocsPage.js"
import { openApiDocument } from "./OpenApi.js"
import * as StaticAsset from "./StaticAsset.js"

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
    const make = (
      baseUrl: string,
      offer: (contentType: string, raw: Uint8Array<ArrayBuffer>) => Effect.Effect<StaticAsset.StaticAsset>
    ) =>
      Effect.gen(function* () {
        const document = openApiDocument({ baseUrl, authUrl: `${baseUrl}/oauth` })
        return {
          json: yield* offer("application/json", encode(JSON.stringify(document))),
          page: yield* offer("text/html; charset=utf-8", encode(renderReference(document, baseUrl)))
        }
      })
    // Kept and compressed for the first few addresses; past them, built per request and sent uncompressed, so a
    // client sending a new `Host` each time costs a document's JSON, not its compression too.
    const documentFor = memo(
      (baseUrl: string) => make(baseUrl, StaticAsset.make).pipe(Effect.cached, Effect.runSync),
      (baseUrl: string) =>
        make(baseUrl, (contentType, raw) => Effect.succeed(StaticAsset.makeUncompressed(contentType, raw)))
    )
    const current = Effect.flatMap(currentIssuer, (issuer) => documentFor(issuer.baseUrl))

    yield* router.get(
      "/v1/openapi.json",
      Effect.flatMap(current, (made) =>
        StaticAsset.respond(made.json, { "cache-control": "no-cache", "access-control-allow-origin": "*" })
      )
    )
    yield* router.get(
      "/docs",
      Effect.flatMap(current, (made) =>
        StaticAsset.respond(made.page, {
          "cache-control": "no-cache",
          "content-security-policy": contentSecurityPolicy,
          "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer"
        })
      )
    )
  })
)
