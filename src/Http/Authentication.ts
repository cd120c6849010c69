/**
 * Who is calling a `/v1` endpoint, and how much they may: the endpoint's declared `Authentication` middleware
 * (the bearer check: its credential, the rate limit, the endpoint's scopes; once, after routing), and the rate
 * limits themselves.
 *
 * Rate limits on `/v1`. A request is counted once: against its credential when it authenticates (in the bearer
 * check, the only place that knows the credential), otherwise against its client IP (around the API, once the
 * outcome is known: 401, 404, 405, 400/413/415 before authentication, the OpenAPI document). Every `/v1` response
 * carries `X-RateLimit-Limit`, `-Remaining` and `-Reset` of the bucket it was counted against; a 429 adds
 * `Retry-After`.
 *
 * So that guessing keys is slow, a bearer token is not even looked at while its client IP's bucket is empty: the
 * request is refused with 429 (and counted against the IP) whether or not the token is valid.
 *
 * The client IP is the socket's peer address (`X-Forwarded-For` is not trusted).
 */
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Context, Duration, Effect, Exit, FiberRef, Layer, Metric, Option } from "effect"
import { Api } from "../Api.js"
import { ApiKeys, KEY_PREFIX } from "../ApiKeys/ApiKeys.js"
import { type Issuer, makeCurrentIssuer, makeIssuerOf, PROTECTED_RESOURCE_METADATA_PATH } from "../Auth/Issuer.js"
import { SigningKeys } from "../Auth/Jwt.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { Forbidden, RateLimited, Unauthorized } from "../Domain/Errors.js"
import type { Principal } from "../Domain/Principal.js"
import { hasAnyScope, type Scope } from "../Domain/Scopes.js"
import { ACCESS_PREFIX, OAuthTokens } from "../OAuth/Tokens.js"
import { rateLimitRejections } from "../Observability/Metrics.js"
import { type Decision, RateLimit, type RateLimitService } from "../RateLimit/RateLimit.js"
import { Sessions } from "../Sessions/Sessions.js"
import { onFailureResponse, withHeaders } from "./Routes.js"

// --- rate limits ------------------------------------------------------------------------------------------------

const isV1 = (url: string) => url === "/v1" || url.startsWith("/v1/") || url.startsWith("/v1?")

const clientKey = (request: HttpServerRequest.HttpServerRequest) =>
  `ip:${Option.getOrElse(request.remoteAddress, () => "unknown")}`

/** One bucket per API key and per OAuth token; one per user for JWTs (a user may hold many at once). */
export const credentialKey = (principal: Principal): string =>
  principal.credential.kind === "jwt"
    ? `jwt:${principal.userId}`
    : `${principal.credential.kind}:${principal.credential.id}`

/**
 * The credential's bucket as the endpoint's `Authentication` counted the request against it: carried in the
 * request's fiber (a value set once, never changed) to the API middleware, which answers with its headers and so
 * knows not to count the request against the client IP too. Unset for a request no credential counted.
 */
const CountedToCredential: FiberRef.FiberRef<Decision | undefined> = FiberRef.unsafeMake<Decision | undefined>(
  undefined
)

/** The bucket's headers, for whatever response the request gets. */
const rateLimitHeaders = (decision: Decision, refused: boolean): Record<string, string> => {
  const headers: Record<string, string> = {
    "x-ratelimit-limit": String(decision.limit),
    "x-ratelimit-remaining": String(decision.remaining),
    "x-ratelimit-reset": String(decision.resetAt)
  }
  if (refused) headers["retry-after"] = String(Math.max(1, decision.retryAfter))
  return headers
}

/** A 429, counted in `http.rate_limit.rejections`. */
const refusal = (decision: Decision, window: Duration.Duration) =>
  Effect.zipRight(
    Metric.increment(rateLimitRejections),
    Effect.failSync(
      () =>
        new RateLimited({
          message: `Rate limit of ${decision.limit} requests per ${Duration.format(window)} exceeded; retry in ${Math.max(
            1,
            decision.retryAfter
          )} s`
        })
    )
  )

/** Spends one of `key`'s `limit` tokens, then `decided`: at once with in-process buckets (the default). */
const consume = <A, E, R>(
  limits: RateLimitService,
  key: string,
  limit: number,
  decided: (decision: Decision) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  limits.inProcess !== undefined
    ? decided(limits.inProcess.consume(key, limit, limits.settings.window))
    : Effect.flatMap(limits.consume(key, limit, limits.settings.window), decided)

/** In the endpoint's `Authentication`, once the credential is known: spend one of its tokens. */
export const limitCredential = (
  limits: RateLimitService,
  principal: Principal
): Effect.Effect<Principal, RateLimited> => {
  if (!limits.settings.enabled) return Effect.succeed(principal)
  return consume(limits, credentialKey(principal), limits.settings.perCredential, (decision) =>
    Effect.zipRight(
      FiberRef.set(CountedToCredential, decision),
      decision.allowed ? Effect.succeed(principal) : refusal(decision, limits.settings.window)
    )
  )
}

/**
 * Before a bearer token is checked: refuse while the client IP has no tokens left for failed requests (`undefined`
 * when there is nothing to run: the limiter is off, or the in-process bucket has tokens).
 */
export const guardClient = (
  limits: RateLimitService,
  request: HttpServerRequest.HttpServerRequest
): Effect.Effect<void, RateLimited> | undefined => {
  if (!limits.settings.enabled) return undefined
  const key = clientKey(request)
  if (limits.inProcess !== undefined) {
    const decision = limits.inProcess.check(key, limits.settings.perClientIp, limits.settings.window)
    return decision.allowed ? undefined : refusal(decision, limits.settings.window)
  }
  return Effect.flatMap(limits.check(key, limits.settings.perClientIp, limits.settings.window), (decision) =>
    decision.allowed ? Effect.void : refusal(decision, limits.settings.window)
  )
}

/**
 * Around the API, once the outcome is known: the headers of the bucket the request was counted against, its
 * credential's (by the endpoint's `Authentication`) or else its client IP's, counted now (a 429 when it is empty).
 */
export const limitUnauthenticated =
  (limits: RateLimitService) =>
  <E, R>(
    request: HttpServerRequest.HttpServerRequest,
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E | RateLimited, R> => {
    if (!limits.settings.enabled || !isV1(request.url)) return app
    const answer = (
      outcome: Exit.Exit<HttpServerResponse.HttpServerResponse, E>,
      refusedAlready: boolean
    ): Effect.Effect<HttpServerResponse.HttpServerResponse, E | RateLimited> =>
      Effect.flatMap(FiberRef.get(CountedToCredential), (counted) => {
        if (counted !== undefined) return withHeaders(outcome, rateLimitHeaders(counted, !counted.allowed))
        return consume(
          limits,
          clientKey(request),
          limits.settings.perClientIp,
          (decision): Effect.Effect<HttpServerResponse.HttpServerResponse, E | RateLimited> =>
            withHeaders<E | RateLimited, never>(
              decision.allowed ? outcome : refusal(decision, limits.settings.window),
              rateLimitHeaders(decision, !decision.allowed || refusedAlready)
            )
        )
      })
    return Effect.matchCauseEffect(app, {
      onSuccess: (response) => answer(Exit.succeed(response), false),
      onFailure: (cause) => {
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
        const failure = Cause.failureOption(cause)
        return answer(Exit.failCause(cause), Option.isSome(failure) && failure.value instanceof RateLimited)
      }
    })
  }

// --- the bearer check ------------------------------------------------------------------------------------------

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

    /** A refusal, with its `WWW-Authenticate` on the response the platform makes of it. */
    const refuse = <E>(
      request: HttpServerRequest.HttpServerRequest,
      refusal: Parameters<typeof bearerChallenge>[1],
      error: E
    ): Effect.Effect<never, E> =>
      Effect.zipRight(
        onFailureResponse({ "www-authenticate": bearerChallenge(issuerOf(request.headers), refusal) }),
        Effect.fail(error)
      )

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
      principal: Principal
    ): Effect.Effect<Principal, Forbidden> => {
      const needed = scopesByRoute.get(`${route.method} ${route.path}`) ?? []
      if (hasAnyScope(principal.scopes, needed)) return Effect.succeed(principal)
      const curable = needed.length > 0 && !(principal.credential.kind === "oauth" && NEVER_OAUTH.test(route.path))
      const forbidden = new Forbidden({
        message:
          needed.length === 0
            ? "This endpoint declares no scope; access is denied"
            : `This credential lacks the scope needed: ${needed.join(" or ")}`
      })
      return curable
        ? refuse(request, { error: "insufficient_scope", scopes: needed }, forbidden)
        : Effect.fail(forbidden)
    }

    /**
     * The framework's bearer decoder slices the header blindly; read it properly (scheme is case-insensitive).
     * Plain JS up to what must be an effect: the rate-limit buckets and the credential lookup.
     */
    const check = (
      request: HttpServerRequest.HttpServerRequest,
      route: { readonly method: string; readonly path: string }
    ): Effect.Effect<Principal, BearerError, HttpServerRequest.HttpServerRequest> => {
      const token = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? "")?.[1] ?? ""
      if (token === "") {
        return refuse(request, {}, new Unauthorized({ message: "Send credentials as Authorization: Bearer <token>" }))
      }
      // Rate limits (above): no token is checked while the client IP's bucket is empty; a
      // valid credential then spends one of its own tokens, before its scopes are checked.
      const authenticated = Effect.catchAll(authenticate(token), (error) =>
        refuse(request, { error: "invalid_token" }, error)
      )
      const guard = guardClient(limits, request)
      return Effect.flatMap(
        Effect.flatMap(guard === undefined ? authenticated : Effect.zipRight(guard, authenticated), (principal) =>
          limitCredential(limits, principal)
        ),
        (principal) => authorize(request, route, principal)
      )
    }

    return { check } as const
  })
}) {}

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(Bearer, (bearer) => ({
    // One step for the request and its route (read from the fiber, not as services).
    bearer: () =>
      Effect.withFiberRuntime<Principal, BearerError, HttpServerRequest.HttpServerRequest>((fiber) => {
        const context = fiber.currentContext
        const request = Context.unsafeGet(context, HttpServerRequest.HttpServerRequest)
        const { route } = Context.unsafeGet(context, HttpRouter.RouteContext)
        return bearer.check(request, route)
      })
  }))
).pipe(Layer.provide(Bearer.Default))
