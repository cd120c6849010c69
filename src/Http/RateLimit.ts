/**
 * Rate limits on `/v1`. A request is counted once: against its credential when it authenticates (in the bearer
 * middleware, the only place that knows the credential), otherwise against its client IP (around the API, once
 * the outcome is known: 401, 404, 405, 400/413/415 before authentication, the OpenAPI document). Every `/v1`
 * response carries `X-RateLimit-Limit`, `-Remaining` and `-Reset` of the bucket it was counted against; a 429 adds
 * `Retry-After`.
 *
 * So that guessing keys is slow, a bearer token is not even looked at while its client IP's bucket is empty: the
 * request is refused with 429 (and counted against the IP) whether or not the token is valid.
 *
 * The client IP is the socket's peer address (`X-Forwarded-For` is not trusted).
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Duration, Effect, Metric, Option } from "effect"
import { RateLimited } from "../Domain/Errors.js"
import type { Principal } from "../Domain/Principal.js"
import { rateLimitRejections } from "../Observability/Metrics.js"
import type { Decision, RateLimitService } from "../RateLimit/RateLimit.js"
import type { RequestState } from "./RequestState.js"

const isV1 = (url: string) => url === "/v1" || url.startsWith("/v1/") || url.startsWith("/v1?")

const clientKey = (request: HttpServerRequest.HttpServerRequest) =>
  `ip:${Option.getOrElse(request.remoteAddress, () => "unknown")}`

/** One bucket per API key and per OAuth token; one per user for JWTs (a user may hold many at once). */
export const credentialKey = (principal: Principal): string =>
  principal.credential.kind === "jwt"
    ? `jwt:${principal.userId}`
    : `${principal.credential.kind}:${principal.credential.id}`

/** The bucket's headers, for whatever response the request gets. */
const rateLimitHeaders = (state: RequestState | undefined, decision: Decision, refused: boolean): void => {
  if (state === undefined) return
  state.headers["x-ratelimit-limit"] = String(decision.limit)
  state.headers["x-ratelimit-remaining"] = String(decision.remaining)
  state.headers["x-ratelimit-reset"] = String(decision.resetAt)
  if (refused) state.headers["retry-after"] = String(Math.max(1, decision.retryAfter))
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
const consume = <A, E>(
  limits: RateLimitService,
  key: string,
  limit: number,
  decided: (decision: Decision) => Effect.Effect<A, E>
): Effect.Effect<A, E> =>
  limits.inProcess !== undefined
    ? decided(limits.inProcess.consume(key, limit, limits.settings.window))
    : Effect.flatMap(limits.consume(key, limit, limits.settings.window), decided)

/** In the bearer middleware, once the credential is known: spend one of its tokens. */
export const limitCredential = (
  limits: RateLimitService,
  state: RequestState | undefined,
  principal: Principal
): Effect.Effect<Principal, RateLimited> => {
  if (!limits.settings.enabled) return Effect.succeed(principal)
  if (state !== undefined) state.countedToCredential = true
  return consume(limits, credentialKey(principal), limits.settings.perCredential, (decision) => {
    rateLimitHeaders(state, decision, !decision.allowed)
    return decision.allowed ? Effect.succeed(principal) : refusal(decision, limits.settings.window)
  })
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

/** Around the API: a `/v1` request that was not counted against a credential is counted against its client IP. */
export const limitUnauthenticated =
  (limits: RateLimitService) =>
  <E, R>(
    request: HttpServerRequest.HttpServerRequest,
    state: RequestState,
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E | RateLimited, R> => {
    if (!limits.settings.enabled || !isV1(request.url)) return app
    /** Once the outcome is known: count it against the client IP, unless the credential's bucket took it. */
    const count = <A, E2>(outcome: Effect.Effect<A, E2>, refusedAlready: boolean): Effect.Effect<A, E2 | RateLimited> =>
      consume(
        limits,
        clientKey(request),
        limits.settings.perClientIp,
        (decision): Effect.Effect<A, E2 | RateLimited> => {
          rateLimitHeaders(state, decision, !decision.allowed || refusedAlready)
          return decision.allowed ? outcome : refusal(decision, limits.settings.window)
        }
      )
    return Effect.matchCauseEffect(app, {
      onSuccess: (response) =>
        state.countedToCredential ? Effect.succeed(response) : count(Effect.succeed(response), false),
      onFailure: (cause) => {
        if (state.countedToCredential || Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
        const failure = Cause.failureOption(cause)
        return count(Effect.failCause(cause), Option.isSome(failure) && failure.value instanceof RateLimited)
      }
    })
  }
