/**
 * The addresses tokens are bound to. `{base_url}` is `BASE_URL` when set, else the scheme and host the client
 * used (as for `Link` headers), so a server on a port picked at start-up (`PORT=0`) still names itself
 * correctly. The same derivation is used for the metadata, the JWT `iss`/`aud` when signing, and their check.
 * In production set `BASE_URL`.
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { ServerConfig } from "../Config.js"

export interface Issuer {
  readonly baseUrl: string
  /** `{base_url}/oauth`: the OAuth issuer and the JWT `iss`. */
  readonly authUrl: string
  /** `{base_url}/v1`: the JWT `aud`. */
  readonly audience: string
}

export const issuerFor = (request: HttpServerRequest.HttpServerRequest, configured: Option.Option<URL>): Issuer => {
  const baseUrl = Option.match(configured, {
    onSome: (url) => url.toString().replace(/\/+$/, ""),
    onNone: () => {
      const proto = request.headers["x-forwarded-proto"] === "https" ? "https" : "http"
      return `${proto}://${request.headers["host"] ?? "localhost"}`
    }
  })
  return { baseUrl, authUrl: `${baseUrl}/oauth`, audience: `${baseUrl}/v1` }
}

/** The issuer for the request being served. */
export const currentIssuer = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { baseUrl } = yield* Effect.orDie(ServerConfig)
  return issuerFor(request, baseUrl)
})
