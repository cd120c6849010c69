/**
 * The addresses tokens are bound to, from the public base URL (src/Domain/BaseUrl.ts): the same derivation is
 * used for the metadata, the JWT `iss`/`aud` when signing, and their check.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Option } from "effect"
import { BaseUrlConfig } from "../Config.js"
import { publicBaseUrl } from "../Domain/BaseUrl.js"

export interface Issuer {
  readonly baseUrl: string
  /** `{base_url}/oauth`: the OAuth issuer and the JWT `iss`. */
  readonly authUrl: string
  /** `{base_url}/v1`: the JWT `aud`. */
  readonly audience: string
}

/** RFC 9728's place for the metadata of the resource `{base_url}/v1`; a `/v1` 401 names it. */
export const PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/v1"

/**
 * `issuerOf`: the same derivation as `currentIssuer` below, as a plain function of a request's headers (for code
 * that holds the request already and must not take an effect step for it).
 */
export const makeIssuerOf = Effect.map(
  Effect.orDie(BaseUrlConfig),
  (configured) =>
    (headers: HttpServerRequest.HttpServerRequest["headers"]): Issuer => {
      const baseUrl = Option.getOrElse(publicBaseUrl(configured, headers), () => "http://localhost")
      return { baseUrl, authUrl: `${baseUrl}/oauth`, audience: `${baseUrl}/v1` }
    }
)

/**
 * `currentIssuer`: the issuer for the request being served. Made once by each of its users (the bearer check, the
 * OAuth routes, the docs), which reads `BASE_URL` then: a setting read on every request costs, when it is unset, a
 * failed lookup and the stack trace of its error each time.
 */
export const makeCurrentIssuer = Effect.map(Effect.orDie(BaseUrlConfig), (configured) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request): Issuer => {
    // A `Host` that is not a host name (only a hand-made request sends one) names no address: use localhost's.
    const baseUrl = Option.getOrElse(publicBaseUrl(configured, request.headers), () => "http://localhost")
    return { baseUrl, authUrl: `${baseUrl}/oauth`, audience: `${baseUrl}/v1` }
  })
)
