/**
 * The dashboard (`dashboard/`): a web app at `/dashboard` that signs in through `{auth_url}/login` and then calls the
 * public `/v1` API like any other client. Served here:
 *
 *   GET /                      302 to /dashboard
 *   GET /dashboard[/…]         the HTML shell (client-side routing: every deep link gets it), `no-cache` + ETag
 *   GET /dashboard/assets/…    content-hashed scripts and styles, cached for a year, `immutable`
 *
 * Bun's bundler builds the app on the first dashboard request and the result is kept in memory (a build takes
 * tens of milliseconds, so servers that only answer the API — most of the tests — never pay for it). Each file is
 * compressed once, with brotli and gzip, and sent in the encoding the client accepts. A strict
 * Content-Security-Policy (`default-src 'self'`, no inline scripts or styles, Trusted Types) and the usual security
 * headers go on every dashboard response.
 */

import { createHash } from "node:crypto"
import { join } from "node:path"
import { brotliCompressSync, gzipSync, constants as zlib } from "node:zlib"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Data, Effect } from "effect"

const SOURCE = join(import.meta.dir, "..", "..", "dashboard", "index.html")
const ASSETS = "/dashboard/assets/"

export const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'"
].join("; ")

const securityHeaders = {
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()"
}

/** One file, ready to send in each encoding. */
interface Asset {
  readonly type: string
  readonly etag: string
  readonly identity: Uint8Array
  readonly gzip: Uint8Array
  readonly br: Uint8Array
}

interface Bundle {
  readonly shell: Asset
  /** By file name under /dashboard/assets/. */
  readonly assets: ReadonlyMap<string, Asset>
  readonly buildMs: number
}

export class DashboardBuildFailed extends Data.TaggedError("DashboardBuildFailed")<{ readonly cause: unknown }> {}

const asset = (type: string, identity: Uint8Array): Asset => ({
  type,
  etag: `"${createHash("sha256").update(identity).digest("base64url").slice(0, 22)}"`,
  identity,
  gzip: gzipSync(identity, { level: 9 }),
  br: brotliCompressSync(identity, {
    params: { [zlib.BROTLI_PARAM_QUALITY]: 11, [zlib.BROTLI_PARAM_SIZE_HINT]: identity.byteLength }
  })
})

/** Builds `dashboard/index.html` and what it references; the shell comes back with hashed asset URLs. */
export const buildDashboard = Effect.tryPromise({
  try: async (): Promise<Bundle> => {
    const started = performance.now()
    const result = await Bun.build({
      entrypoints: [SOURCE],
      target: "browser",
      minify: true,
      publicPath: ASSETS,
      naming: { entry: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]" }
    })
    let shell: Asset | undefined
    const assets = new Map<string, Asset>()
    for (const output of result.outputs) {
      const bytes = new Uint8Array(await output.arrayBuffer())
      const name = output.path.replace(/^\.\//, "")
      if (name.endsWith(".html")) shell = asset("text/html; charset=utf-8", bytes)
      else assets.set(name, asset(output.type, bytes))
    }
    if (shell === undefined) throw new Error("the dashboard build produced no HTML shell")
    return { shell, assets, buildMs: performance.now() - started }
  },
  catch: (cause) => new DashboardBuildFailed({ cause })
})

/** The encodings a client takes (`br`, `gzip`), from its `Accept-Encoding`; `q=0` refuses one. */
export const acceptedEncodings = (header: string | undefined): ReadonlySet<string> => {
  const accepted = new Set<string>()
  for (const part of (header ?? "").split(",")) {
    const [name = "", ...params] = part.trim().toLowerCase().split(";")
    const q = params.map((param) => /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(param)).find((match) => match !== null)
    if (name !== "" && (q === undefined || Number(q?.[1]) > 0)) accepted.add(name.trim())
  }
  return accepted
}

const send = (file: Asset, cacheControl: string) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    const headers = { ...securityHeaders, "cache-control": cacheControl, etag: file.etag, vary: "Accept-Encoding" }
    const ifNoneMatch = request.headers["if-none-match"]
    if (ifNoneMatch?.split(",").some((tag) => tag.trim().replace(/^W\//, "") === file.etag)) {
      return HttpServerResponse.empty({ status: 304, headers })
    }
    const accepted = acceptedEncodings(request.headers["accept-encoding"])
    const [encoding, body] = accepted.has("br")
      ? (["br", file.br] as const)
      : accepted.has("gzip")
        ? (["gzip", file.gzip] as const)
        : ([undefined, file.identity] as const)
    return HttpServerResponse.uint8Array(body, {
      contentType: file.type,
      headers: encoding === undefined ? headers : { ...headers, "content-encoding": encoding }
    })
  })

const notFound = HttpServerResponse.text("Not found", {
  status: 404,
  headers: { ...securityHeaders, "cache-control": "no-cache" }
})

const failed = (error: DashboardBuildFailed) =>
  Effect.as(
    Effect.logError("the dashboard could not be built", error.cause),
    HttpServerResponse.text("The dashboard could not be built; see the server log.", {
      status: 500,
      headers: { ...securityHeaders, "cache-control": "no-store" }
    })
  )

export const DashboardRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    // Built once, on first use; every later request shares the result.
    const bundle = yield* Effect.cached(
      Effect.tap(buildDashboard, (built) =>
        Effect.logInfo("dashboard built", {
          build_ms: Math.round(built.buildMs),
          files: [...built.assets.keys()]
        })
      )
    )
    const shell = Effect.flatMap(bundle, (built) => send(built.shell, "no-cache")).pipe(Effect.catchAll(failed))

    yield* router.get("/", HttpServerResponse.empty({ status: 302, headers: { location: "/dashboard" } }))
    yield* router.get("/dashboard", shell)
    yield* router.get(
      "/dashboard/*",
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const path = request.url.split("?")[0] ?? request.url
        if (!path.startsWith(ASSETS)) return yield* shell
        const built = yield* bundle
        const file = built.assets.get(path.slice(ASSETS.length))
        return file === undefined ? notFound : yield* send(file, "public, max-age=31536000, immutable")
      }).pipe(Effect.catchAll(failed))
    )
  })
)
