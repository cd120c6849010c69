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
 * sent as `StaticAsset.ts` sends a body: its `ETag`, 304 when unchanged, brotli or gzip as the client accepts. A strict
 * Content-Security-Policy (`default-src 'self'`, no inline scripts or styles, Trusted Types) and the usual security
 * headers go on every dashboard response.
 */

import { join } from "node:path"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Data, Effect } from "effect"
import * as StaticAsset from "./StaticAsset.js"

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

interface Bundle {
  readonly shell: StaticAsset.StaticAsset
  /** By file name under /dashboard/assets/. */
  readonly assets: ReadonlyMap<string, StaticAsset.StaticAsset>
  readonly buildMs: number
}

export class DashboardBuildFailed extends Data.TaggedError("DashboardBuildFailed")<{ readonly cause: unknown }> {}

/** Builds `dashboard/index.html` and what it references; the shell comes back with hashed asset URLs. */
export const buildDashboard = Effect.gen(function* () {
  const started = performance.now()
  const outputs = yield* Effect.tryPromise({
    try: async () => {
      const result = await Bun.build({
        entrypoints: [SOURCE],
        target: "browser",
        minify: true,
        publicPath: ASSETS,
        naming: { entry: "[name]-[hash].[ext]", chunk: "[name]-[hash].[ext]", asset: "[name]-[hash].[ext]" }
      })
      return Promise.all(
        result.outputs.map(async (output) => ({
          name: output.path.replace(/^\.\//, ""),
          type: output.type,
          bytes: new Uint8Array(await output.arrayBuffer())
        }))
      )
    },
    catch: (cause) => new DashboardBuildFailed({ cause })
  })
  let shell: StaticAsset.StaticAsset | undefined
  const assets = new Map<string, StaticAsset.StaticAsset>()
  for (const { name, type, bytes } of outputs) {
    if (name.endsWith(".html")) shell = yield* StaticAsset.make("text/html; charset=utf-8", bytes)
    else assets.set(name, yield* StaticAsset.make(type, bytes))
  }
  if (shell === undefined) {
    return yield* new DashboardBuildFailed({ cause: new Error("the dashboard build produced no HTML shell") })
  }
  const bundle: Bundle = { shell, assets, buildMs: performance.now() - started }
  return bundle
})

const send = (file: StaticAsset.StaticAsset, cacheControl: string) =>
  StaticAsset.respond(file, { ...securityHeaders, "cache-control": cacheControl })

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
