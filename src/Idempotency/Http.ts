/**
 * `Idempotency-Key` on a `/v1` `POST`: the wrapper every `POST` endpoint's handler opts into (the `Idempotent`
 * service of the contract, src/Contract/Idempotency.ts). It runs as part of the endpoint, after routing and after
 * the endpoint's `Authentication` middleware has provided the `CurrentPrincipal` the key belongs to.
 *
 * With the header, the payload's decoding, the handler and the encoding of its answer (a success by the endpoint's
 * success schema, one of our errors into the envelope) run inside the one transaction that takes the key and
 * records the answer (src/Idempotency/Idempotency.ts). A handler's own transaction (an outbox `Events.transaction`)
 * is then a savepoint of it, so its change commits only with the recorded answer. An answer that is not recorded
 * (a 5xx) rolls it back and leaves the key free; the server answers it as it answers any request. Without the header the payload is
 * decoded and the handler runs as any other's; the platform encodes its answer.
 *
 * The payload is decoded from the body parsed before routing (`RequestBody`, src/Contract/Request.ts): the handler
 * is registered with `handleRaw`, so the platform does not read the body again. What the credential must be allowed
 * beyond the endpoint's scopes (`authorize`: an OAuth token manages no API keys, a key hands on no scope it lacks)
 * is checked before the key is looked up: a key is the user's, any of their credentials, and a replay answers only
 * one that may make the request.
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, Layer, Schema } from "effect"
import type * as AST from "effect/SchemaAST"
import { Api } from "../Api.js"
import { Idempotent, type Idempotently } from "../Contract/Idempotency.js"
import { decodeJson, requestBody } from "../Contract/Request.js"
import { IdempotencyKeyInUse } from "../Domain/Errors.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { type Answer, Idempotency, isRecorded, KEY_HEADER, requestHash, requestHashOfJson } from "./Idempotency.js"

const isSqlError = (error: unknown): error is SqlError => error instanceof SqlError
const isInUse = (error: unknown): error is IdempotencyKeyInUse => error instanceof IdempotencyKeyInUse

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

type Encoder = (value: unknown) => Effect.Effect<HttpServerResponse.HttpServerResponse>

/** A success as the platform would send it: the endpoint's success schema, its status and encoding. */
const successEncoder = (ast: AST.AST): Encoder => {
  const status = HttpApiSchema.getStatusSuccessAST(ast)
  if (HttpApiSchema.isVoid(ast)) return (_: unknown) => Effect.succeed(HttpServerResponse.empty({ status }))
  const encode = Schema.encodeUnknown(Schema.make<unknown, unknown, never>(ast))
  const { contentType } = HttpApiSchema.getEncoding(ast)
  return (value) =>
    Effect.orDie(Effect.flatMap(encode(value), (encoded) => HttpServerResponse.json(encoded, { status, contentType })))
}

/** Each endpoint's success encoder, by `METHOD /declared/:path` as the router's `RouteContext` names its route. */
const successEncoders: ReadonlyMap<string, Encoder> = new Map(
  Object.values(Api.groups).flatMap((group) =>
    Object.values(group.endpoints).map((endpoint): [string, Encoder] => [
      `${endpoint.method} ${endpoint.path}`,
      successEncoder(endpoint.successSchema.ast)
    ])
  )
)

/** The path part of the request's URL: what the key is compared by, with the method and the body. */
const pathOf = (url: string): string => url.split("?", 1)[0] ?? url

export const IdempotentLive = Layer.effect(
  Idempotent,
  Effect.gen(function* () {
    const idempotency = yield* Idempotency
    /** One of our errors → the envelope, as the server encodes it (any error the contract declares). */
    const encodeFailure = yield* HttpApiBuilder.buildMiddleware(Api)

    /**
     * `handled` as the endpoint's answer: as it is without the header; with it, in the key's transaction, where
     * its answer is encoded, so a 4xx is recorded as it is sent. `hash` says what the key is compared by (method,
     * path and body), worked out only when there is a key.
     */
    const serve = <A, E, R>(
      request: HttpServerRequest.HttpServerRequest,
      hash: () => Effect.Effect<string>,
      handled: Effect.Effect<A, E, R>
    ): Idempotently<A, E, R> => {
      // Decoded by the platform already (the endpoint declares it: `IdempotencyKeyHeader`), so a key here is one.
      const key = request.headers[KEY_HEADER]
      if (key === undefined) return handled
      return Effect.gen(function* () {
        const principal = yield* CurrentPrincipal
        const { route } = yield* HttpRouter.RouteContext
        const encodeSuccess = successEncoders.get(`${route.method} ${route.path}`)
        if (encodeSuccess === undefined) {
          return yield* Effect.dieMessage(`${route.method} ${route.path} is not a route of the contract`)
        }
        // A failure whose answer is kept is encoded here, to be recorded; any other (a 5xx) leaves as it came,
        // rolling the change back, and the server answers it as it answers any request.
        const answered = Effect.catchAll(Effect.flatMap(handled, encodeSuccess), (error) =>
          Effect.flatMap(Effect.orDie(encodeFailure(Effect.fail(error))), (response) =>
            isRecorded(response.status) ? Effect.succeed(response) : Effect.fail(error)
          )
        )
        const outcome = yield* idempotency.run(principal.userId, key, yield* hash(), answered, answerOf)
        return outcome._tag === "Ran" ? outcome.value : replay(outcome.answer)
      }).pipe(
        Effect.catchIf(isSqlError, Effect.die),
        // Told when to retry; never recorded (the first request's answer will be).
        Effect.catchIf(isInUse, (inUse) =>
          Effect.map(Effect.orDie(encodeFailure(Effect.fail(inUse))), (response) =>
            HttpServerResponse.setHeader(response, "retry-after", IN_USE_RETRY_AFTER)
          )
        )
      )
    }

    return Idempotent.of({
      withPayload: (request, schema, handler, authorize) =>
        Effect.flatMap(requestBody, ({ json }) => {
          const hash = () => Effect.succeed(requestHashOfJson(request.method, pathOf(request.url), json))
          const decoded = decodeJson(schema, json)
          if (authorize === undefined) return serve(request, hash, Effect.flatMap(decoded, handler))
          // The credential's rights first, outside the key: a refusal records nothing and replays nothing. A
          // payload that does not decode is answered (and recorded) as without `authorize`.
          return Effect.flatMap(
            Effect.either(decoded),
            Either.match({
              onLeft: (invalid) => serve(request, hash, Effect.fail(invalid)),
              onRight: (payload) => Effect.zipRight(authorize(payload), serve(request, hash, handler(payload)))
            })
          )
        }),
      action: (request, handled, authorize) => {
        const served = serve(
          request,
          () =>
            Effect.map(
              Effect.orElseSucceed(request.text, () => ""),
              (text) => requestHash(request.method, pathOf(request.url), text)
            ),
          handled
        )
        return authorize === undefined ? served : Effect.zipRight(authorize, served)
      }
    })
  })
).pipe(Layer.provide(Idempotency.Default))
