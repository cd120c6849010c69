/**
 * The API-level middleware, run before routing around everything the server answers: the drain, the checks
 * before routing, the translation of every failure into one of our errors (so every `/v1` response wears the
 * envelope, and a 503 says when to retry), and the per-IP limit for requests that do not authenticate. CORS
 * preflights are answered first (src/Http/Cors.ts).
 *
 * One wrapper with plain JS inside: the checks are functions of the request state (src/Http/RequestState.ts)
 * that answer `undefined` when there is nothing to run, and the outcome is handled in one `matchCauseEffect`.
 * The body of an endpoint that takes one is parsed here, once, and carried in the request's `Context`
 * (`RequestBody`) for the endpoint. Conditional requests (`ETag`, `If-None-Match`, `HEAD`) are answered around the
 * endpoint (src/Http/Conditional.ts). Authentication and `Idempotency-Key` belong to the endpoint: its declared
 * `Authentication` middleware (src/Http/Authentication.ts) and the wrapper its handler opts into
 * (src/Idempotency/Http.ts), both after routing.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Context, Effect, Option } from "effect"
import { ApiForMiddleware as Api } from "../Api.js"
import { RequestBody } from "../Contract/Request.js"
import type { RateLimited } from "../Domain/Errors.js"
import { requestIdFrom } from "../Domain/RequestId.js"
import { RateLimit } from "../RateLimit/RateLimit.js"
import { conditional } from "./Conditional.js"
import { cors } from "./Cors.js"
import { isDrainRefused, refusedWhileDraining } from "./Draining.js"
import { type OurError, translate } from "./ErrorTranslation.js"
import { Lifecycle } from "./Lifecycle.js"
import { precheck, precheckOAuth } from "./Precheck.js"
import { limitUnauthenticated } from "./RateLimit.js"
import { makeRequestState, requestStateOf } from "./RequestState.js"

export const ApiMiddlewareLive = HttpApiBuilder.middleware(
  Api,
  Effect.gen(function* () {
    const lifecycle = yield* Lifecycle
    // Requests that do not authenticate are counted against the client IP once their outcome is known.
    const limited = limitUnauthenticated(yield* RateLimit)
    return (app: HttpApp.Default) =>
      Effect.withFiberRuntime<
        HttpServerResponse.HttpServerResponse,
        OurError | RateLimited,
        HttpServerRequest.HttpServerRequest
      >((fiber) => {
        const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
        // Always set by the server's per-request wrapper (src/Http.ts); made here only if this runs without it.
        const state = requestStateOf(fiber) ?? makeRequestState(request, requestIdFrom(undefined))
        // CORS (src/Http/Cors.ts): a preflight is answered before anything else, uncounted.
        const preflight = cors(request, state)
        if (preflight !== undefined) return Effect.succeed(preflight)
        const work = ((): HttpApp.Default<unknown> => {
          if (isDrainRefused(lifecycle, request)) return refusedWhileDraining
          const checks = precheck(request, state)
          const handled = conditional(request, state, app)
          if (checks !== undefined) {
            return Effect.flatMap(checks, (json) =>
              json === undefined ? handled : Effect.provideService(handled, RequestBody, { json })
            )
          }
          if (handled !== app) return handled
          const oauth = precheckOAuth(request, state.path)
          if (oauth === undefined) return app
          return Effect.flatMap(oauth, Option.match({ onNone: () => app, onSome: Effect.succeed }))
        })()
        return limited(
          request,
          state,
          Effect.catchAllCause(work, (cause) => {
            state.failed = true
            return translate(cause)
          })
        )
      })
  })
)
