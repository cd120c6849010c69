/**
 * `Idempotency-Key` on a `/v1` `POST`, in the API-level middleware (src/Http/ApiMiddleware.ts), after the checks
 * before routing. The key belongs to a user, so the credential is checked here, before routing (the endpoint's
 * bearer middleware then answers with this outcome: src/Http/Authentication.ts). With a user, the whole request —
 * routing, the handler, and the encoding of its failure into our envelope — runs inside the one transaction that
 * takes the key and records the answer (src/Idempotency/Idempotency.ts). A handler's own transaction (an outbox
 * `Events.transaction`) is then a savepoint of it, so its change commits only with the recorded answer.
 *
 * A request whose credential fails runs as it would without the key: its 401/403/429 is never recorded.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import type * as HttpApp from "@effect/platform/HttpApp"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit } from "effect"
import { Api } from "../Api.js"
import type { IdempotencyKeyInUse, IdempotencyKeyReused, ValidationFailed } from "../Domain/Errors.js"
import { type Answer, Idempotency, KEY_HEADER, keyProblem, requestHash } from "../Idempotency/Idempotency.js"
import { Bearer } from "./Authentication.js"
import { translate } from "./ErrorTranslation.js"
import type { RequestState } from "./RequestState.js"

/** Seconds a client is told to wait before retrying a key still in use. */
const IN_USE_RETRY_AFTER = "1"

const utf8 = new TextDecoder("utf-8", { fatal: true })

/** The answer a response is, to record: its status, `Content-Type` and body bytes (every `/v1` body is JSON). */
const answerOf = (response: HttpServerResponse.HttpServerResponse): Effect.Effect<Answer> => {
  const { body, status } = response
  switch (body._tag) {
    case "Empty":
      return Effect.succeed({ status, contentType: null, body: "" })
    case "Uint8Array":
      return Effect.try(() => ({ status, contentType: body.contentType, body: utf8.decode(body.body) })).pipe(
        Effect.orDie
      )
    default:
      // Nothing here answers a stream or a form; if something did, the change is rolled back rather than
      // committed without its answer.
      return Effect.dieMessage(`an answer with a ${body._tag} body cannot be recorded`)
  }
}

/** A recorded answer again, marked as a replay. */
const replay = (answer: Answer): HttpServerResponse.HttpServerResponse => {
  const headers = { "idempotent-replayed": "true" }
  if (answer.body === "" && answer.contentType === null)
    return HttpServerResponse.empty({ status: answer.status, headers })
  return HttpServerResponse.text(answer.body, {
    status: answer.status,
    headers,
    ...(answer.contentType === null ? {} : { contentType: answer.contentType })
  })
}

export type IdempotentError = ValidationFailed | IdempotencyKeyInUse | IdempotencyKeyReused | SqlError

export const makeIdempotent = Effect.gen(function* () {
  const idempotency = yield* Idempotency
  const bearer = yield* Bearer
  /** Failures → our errors → the envelope, as the server would encode them after this middleware. */
  const encode = yield* HttpApiBuilder.buildMiddleware(Api)

  /**
   * `app` for a `POST` to `route` carrying the header `key`. The request's answer, whatever it is, is known
   * inside the transaction: failures are translated and encoded there, so a 4xx is recorded as it is sent.
   */
  return (
    request: HttpServerRequest.HttpServerRequest,
    state: RequestState,
    route: { readonly method: string; readonly path: string },
    key: string,
    app: HttpApp.Default<unknown>
  ): HttpApp.Default<unknown> => {
    const problem = keyProblem(key)
    if (problem !== undefined) return Effect.fail(problem)
    return Effect.flatMap(Effect.exit(bearer.check(request, route, state)), (checked) => {
      state.bearer = checked
      if (Exit.isFailure(checked)) return app
      const answered = Effect.flatMap(Effect.context<HttpServerRequest.HttpServerRequest>(), (context) =>
        Effect.orDie(
          encode(
            Effect.provide(
              Effect.catchAllCause(app, (cause) => {
                state.failed = true
                return translate(cause)
              }),
              context
            )
          )
        )
      )
      return Effect.flatMap(
        Effect.orElseSucceed(request.text, () => ""),
        (text) =>
          idempotency.run(checked.value.userId, key, requestHash(request.method, state.path, text), answered, answerOf)
      ).pipe(
        Effect.map((outcome) => (outcome._tag === "Ran" ? outcome.value : replay(outcome.answer))),
        Effect.tapErrorTag("IdempotencyKeyInUse", () =>
          Effect.sync(() => {
            state.headers["retry-after"] = IN_USE_RETRY_AFTER
          })
        )
      )
    })
  }
})

/** The header of a request that may carry one: a `POST` to a contract route. */
export const keyOf = (request: HttpServerRequest.HttpServerRequest): string | undefined =>
  request.method === "POST" ? request.headers[KEY_HEADER] : undefined
