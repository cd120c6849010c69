/**
 * The addresses tokens are bound to, from the public base URL (src/Domain/BaseUrl.ts): the same derivation is
 * used for the metadata, the JWT `iss`/`aud` when signing, and their check.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Option } from "effect"
import { ServerConfig } from "../Config.js"
import { publicBaseUrl } from "../Domain/BaseUrl.js"

export interface Issuer {
  readonly baseUrl: string
  /** `{base_url}/oauth`: the OAuth issuer and the JWT `iss`. */
  readonly authUrl: string
  /** `{base_url}/v1`: the JWT `aud`. */
  readonly audience: string
}

/** The issuer for the request being served. */
export const currentIssuer = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const { baseUrl: configured } = yield* Effect.orDie(ServerConfig)
  // A `Host` that is not a host name (only a hand-made request sends one) names no address: use localhost's.
  const baseUrl = Option.getOrElse(publicBaseUrl(configured, request.headers), () => "http://localhost")
  const issuer: Issuer = { baseUrl, authUrl: `${baseUrl}/oauth`, audience: `${baseUrl}/v1` }
  return issuer
})
