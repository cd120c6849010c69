/**
 * The API-level middleware, run before routing around everything the server answers: per-IP limits for requests
 * that do not authenticate, the drain, the checks before routing, and the translation of every failure into one
 * of our errors, so every `/v1` response wears the envelope (and a 503 says when to retry).
 */
import { HttpApiBuilder, type HttpApp } from "@effect/platform"
import { Effect, Option } from "effect"
import { ApiForMiddleware as Api } from "../Api.js"
import { RateLimit } from "../RateLimit/RateLimit.js"
import { refuseWhileDraining } from "./Draining.js"
import { retryLater, translate } from "./ErrorTranslation.js"
import { Lifecycle } from "./Lifecycle.js"
import { precheck, precheckOAuth } from "./Precheck.js"
import { limitUnauthenticated } from "./RateLimit.js"

export const ApiMiddlewareLive = HttpApiBuilder.middleware(
  Api,
  Effect.gen(function* () {
    const lifecycle = yield* Lifecycle
    // Requests that do not authenticate are counted against the client IP once their outcome is known.
    const limitByClient = limitUnauthenticated(yield* RateLimit)
    return (app: HttpApp.Default) =>
      limitByClient(
        refuseWhileDraining(lifecycle).pipe(
          Effect.zipRight(precheck),
          Effect.zipRight(precheckOAuth),
          Effect.flatMap(Option.match({ onNone: () => app, onSome: Effect.succeed })),
          Effect.catchAllCause(translate),
          Effect.tapErrorCause(() => retryLater)
        )
      )
  })
)
