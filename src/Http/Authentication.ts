import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Context, Effect, Layer, Option } from "effect"
import { Api } from "../Api.js"
import { ApiKeys, KEY_PREFIX } from "../ApiKeys/ApiKeys.js"
import { type Issuer, makeCurrentIssuer, makeIssuerOf, PROTECTED_RESOURCE_METADATA_PATH } from "../Auth/Issuer.js"
import { SigningKeys } from "../Auth/Jwt.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { Forbidden, type RateLimited, Unauthorized } from "../Domain/Errors.js"
import type { Principal } from "../Domain/Principal.js"
import { hasAnyScope, type Scope } from "../Domain/Scopes.js"
import { ACCESS_PREFIX, OAuthTokens } from "../OAuth/Tokens.js"
import { RateLimit } from "../RateLimit/RateLimit.js"
import { Sessions } from "../Sessions/Sessions.js"
import { guardClient, limitCredential } from "./RateLimit.js"
import { type RequestState, requestStateOf } from "./RequestState.js"

/** `METHOD /path` → the scopes its endpoint declares. Built once from the contract. */
const scopesByRoute: ReadonlyMap<string, ReadonlyArray<Scope>> = (() => {
  const table = new Map<string, ReadonlyArray<Scope>>()
  for (const group of Object.values(Api.groups)) {
    for (const endpoint of Object.values(group.endpoints)) {
      const scopes = Context.getOption(endpoint.annotations, RequiredScopes)
      if (Option.isSome(scopes)) table.set(`${endpoint.method} ${endpoint.path}`, scopes.value)
    }
  }
  return table
})()

/**
 * The `Bearer` challenge (RFC 6750 §3, RFC 9728 §5.1) of every `/v1` 401 and of a 403 refused for scope: all of them
 * are answered by the bearer check below, so this is the one place the header is written. A 401 says
 * `error="invalid_token"` when a token was sent (none when no credential was); a scope refusal says
 * `error="insufficient_scope"` and the scopes that would do (any one of them); both name the resource's metadata.
 */
export const bearerChallenge = (
  issuer: Issuer,
  refusal: { readonly error?: "invalid_token" | "insufficient_scope"; readonly scopes?: ReadonlyArray<Scope> }
): string =>
  [
    `Bearer realm="api"`,
    ...(refusal.error === undefined ? [] : [`error="${refusal.error}"`]),
    ...(refusal.scopes === undefined ? [] : [`scope="${refusal.scopes.join(" ")}"`]),
    `resource_metadata="${issuer.baseUrl}${PROTECTED_RESOURCE_METADATA_PATH}"`
  ].join(", ")

/** The endpoints an OAuth access token never reaches, whatever its scopes (their services refuse it with 403). */
const NEVER_OAUTH = /^\/v1\/(api-keys|oauth-clients)(\/|$)/

/** What a bearer check fails with. */
export type BearerError = Unauthorized | Forbidden | RateLimited

/**
 * The bearer check of a `/v1` request: its credential, the rate limit, the endpoint's scopes. The endpoint's
 * `Authentication` middleware runs it, once, after routing.
 */
export class Bearer extends Effect.Service<Bearer>()("Bearer", {
  effect: Effect.gen(function* () {
    const apiKeys = yield* ApiKeys
    const oauth = yield* OAuthTokens
    const keys = yield* SigningKeys
    const sessions = yield* Sessions
    const limits = yield* RateLimit
    const currentIssuer = yield* makeCurrentIssuer
    const issuerOf = yield* makeIssuerOf

    /** `WWW-Authenticate` on whatever response the request gets. */
    const challenge = (
      state: RequestState | undefined,
      request: HttpServerRequest.HttpServerRequest,
      refusal: Parameters<typeof bearerChallenge>[1]
    ): void => {
      if (state === undefined) return
      state.headers["www-authenticate"] = bearerChallenge(issuerOf(request.headers), refusal)
    }

    /**
     * `pcs_…` API key, `pco_…` OAuth access token, `x.y.z` JWT (verified against the request's issuer, then its
     * session: live, its user there and not suspended).
     */
    const authenticate = (
      token: string
    ): Effect.Effect<Principal, Unauthorized, HttpServerRequest.HttpServerRequest> => {
      if (token.startsWith(KEY_PREFIX)) return apiKeys.authenticate(token)
      if (token.startsWith(ACCESS_PREFIX)) return oauth.authenticate(token)
      if (token.split(".").length === 3) {
        return Effect.flatMap(currentIssuer, (issuer) =>
          Effect.flatMap(keys.verify(token, issuer), sessions.authenticate)
        )
      }
      return Effect.fail(new Unauthorized({ message: "The bearer token is not a credential this service issued" }))
    }

    /**
     * Each endpoint's `RequiredScopes`: the credential must hold one of them. No declaration, no access (and then
     * no scope would do, so no challenge names one).
     */
    const authorize = (
      request: HttpServerRequest.HttpServerRequest,
      route: { readonly method: string; readonly path: string },
      state: RequestState | undefined,
      principal: Principal
    ) => {
      const needed = scopesByRoute.get(`${route.method} ${route.path}`) ?? []
      if (hasAnyScope(principal.scopes, needed)) return Effect.succeed(principal)
      const curable = needed.length > 0 && !(principal.credential.kind === "oauth" && NEVER_OAUTH.test(route.path))
      if (curable) challenge(state, request, { error: "insufficient_scope", scopes: needed })
      return Effect.fail(
        new Forbidden({
          message:
            needed.length === 0
              ? "This endpoint declares no scope; access is denied"
              : `This credential lacks the scope needed: ${needed.join(" or ")}`
        })
      )
    }

    /**
     * The framework's bearer decoder slices the header blindly; read it properly (scheme is case-insensitive).
     * Plain JS up to what must be an effect: the rate-limit buckets and the credential lookup.
     */
    const check = (
      request: HttpServerRequest.HttpServerRequest,
      route: { readonly method: string; readonly path: string },
      state: RequestState | undefined
    ): Effect.Effect<Principal, BearerError, HttpServerRequest.HttpServerRequest> => {
      const token = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? "")?.[1] ?? ""
      if (token === "") {
        challenge(state, request, {})
        return Effect.fail(new Unauthorized({ message: "Send credentials as Authorization: Bearer <token>" }))
      }
      // Rate limits (src/Http/RateLimit.ts): no token is checked while the client IP's bucket is empty; a
      // valid credential then spends one of its own tokens, before its scopes are checked.
      const authenticated = Effect.mapError(authenticate(token), (error) => {
        challenge(state, request, { error: "invalid_token" })
        return error
      })
      const guard = guardClient(limits, request)
      return Effect.flatMap(
        Effect.flatMap(guard === undefined ? authenticated : Effect.zipRight(guard, authenticated), (principal) =>
          limitCredential(limits, state, principal)
        ),
        (principal) => authorize(request, route, state, principal)
      )
    }

    return { check } as const
  })
}) {}

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(Bearer, (bearer) => ({
    // One step for the request and its state (read from the fiber, not as services).
    bearer: () =>
      Effect.withFiberRuntime<Principal, BearerError, HttpServerRequest.HttpServerRequest>((fiber) => {
        const context = fiber.currentContext
        const state = requestStateOf(fiber)
        const request = Context.unsafeGet(context, HttpServerRequest.HttpServerRequest)
        const { route } = Context.unsafeGet(context, HttpRouter.RouteContext)
        return bearer.check(request, route, state)
      })
  }))
).pipe(Layer.provide(Bearer.Default))
