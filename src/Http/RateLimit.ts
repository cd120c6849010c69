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
import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Duration, Effect, Exit, FiberRef, Metric, Option } from "effect"
import { RateLimited } from "../Domain/Errors.js"
import type { Principal } from "../Domain/Principal.js"
import { rateLimitRejections } from "../Observability/Metrics.js"
import type { Decision, RateLimitService } from "../RateLimit/RateLimit.js"

/** Set around each `/v1` request; the bearer middleware marks it once the request is counted to a credential. */
const CountedToCredential = FiberRef.unsafeMake<{ counted: boolean } | undefined>(undefined)

const isV1 = (url: string) => url === "/v1" || url.startsWith("/v1/") || url.startsWith("/v1?")

const clientKey = (request: HttpServerRequest.HttpServerRequest) =>
  `ip:${Option.getOrElse(request.remoteAddress, () => "unknown")}`

/** One bucket per API key and per OAuth token; one per user for JWTs (a user may hold many at once). */
export const credentialKey = (principal: Principal): string =>
  principal.credential.kind === "jwt"
    ? `jwt:${principal.userId}`
    : `${principal.credential.kind}:${principal.credential.id}`

const rateLimitHeaders = (decision: Decision, refused: boolean) =>
  HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(
      HttpServerResponse.setHeaders(response, {
        "x-ratelimit-limit": String(decision.limit),
        "x-ratelimit-remaining": String(decision.remaining),
        "x-ratelimit-reset": String(decision.resetAt),
        ...(refused ? { "retry-after": String(Math.max(1, decision.retryAfter)) } : {})
      })
    )
  )

/** A 429, counted in `http.rate_limit.rejections`. */
const refusal = (decision: Decision, window: Duration.Duration) =>
  Effect.zipRight(
    Metric.increment(rateLimitRejections),
    Effect.fail(
      new RateLimited({
        message: `Rate limit of ${decision.limit} requests per ${Duration.format(window)} exceeded; retry in ${Math.max(
          1,
          decision.retryAfter
        )} s`
      })
    )
  )

/** In the bearer middleware, once the credential is known: spend one of its tokens. */
export const limitCredential = (limits: RateLimitService, principal: Principal): Effect.Effect<void, RateLimited> =>
  limits.settings.enabled
    ? Effect.gen(function* () {
        const mark = yield* FiberRef.get(CountedToCredential)
        if (mark !== undefined) mark.counted = true
        const decision = yield* limits.consume(
          credentialKey(principal),
          limits.settings.perCredential,
          limits.settings.window
        )
        yield* rateLimitHeaders(decision, !decision.allowed)
        if (!decision.allowed) return yield* refusal(decision, limits.settings.window)
      })
    : Effect.void

/** Before a bearer token is checked: refuse while the client IP has no tokens left for failed requests. */
export const guardClient = (
  limits: RateLimitService
): Effect.Effect<void, RateLimited, HttpServerRequest.HttpServerRequest> =>
  limits.settings.enabled
    ? Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const decision = yield* limits.check(clientKey(request), limits.settings.perClientIp, limits.settings.window)
        if (!decision.allowed) return yield* refusal(decision, limits.settings.window)
      })
    : Effect.void

const isRateLimited = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && Option.exists(Cause.failureOption(exit.cause), (error) => error instanceof RateLimited)

/** Around the API: a `/v1` request that was not counted against a credential is counted against its client IP. */
export const limitUnauthenticated =
  (limits: RateLimitService) =>
  <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E | RateLimited, R | HttpServerRequest.HttpServerRequest> =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (!limits.settings.enabled || !isV1(request.url)) return yield* app
      const mark = { counted: false }
      const exit = yield* Effect.exit(Effect.locally(app, CountedToCredential, mark))
      if (mark.counted || (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause))) return yield* exit
      const decision = yield* limits.consume(clientKey(request), limits.settings.perClientIp, limits.settings.window)
      const refused = !decision.allowed || isRateLimited(exit)
      yield* rateLimitHeaders(decision, refused)
      if (!decision.allowed) return yield* refusal(decision, limits.settings.window)
      return yield* exit
    })
