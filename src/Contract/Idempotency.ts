import type * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Context, type Effect, Schema } from "effect"
import type { IdempotencyKeyReused, ValidationFailed } from "../Domain/Errors.js"
import type { CurrentPrincipal } from "../Domain/Principal.js"

/** What the wrapper itself may fail with, besides the handler's own failures (a key in use is answered by it). */
export type IdempotentError = ValidationFailed | IdempotencyKeyReused

/** An endpoint's answer through the wrapper: its success, or the response (recorded or replayed) for a key. */
export type Idempotently<A, E, R> = Effect.Effect<
  A | HttpServerResponse.HttpServerResponse,
  E | IdempotentError,
  R | CurrentPrincipal | HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext
>

/**
 * The `Idempotency-Key` header, as every `POST` endpoint declares it (`setHeaders`): the platform decodes it after
 * the endpoint's middleware, before the handler, so a key that is not one is `validation_failed` naming the header,
 * and the published document lists it as the operation's header parameter. Declared in lower case, as the server
 * receives header names; the document and the error name it as HTTP writes it (src/Http/OpenApi.ts,
 * src/Http/ErrorTranslation.ts).
 */
export const IdempotencyKeyHeader = Schema.Struct({
  "idempotency-key": Schema.optionalWith(
    Schema.String.pipe(
      Schema.pattern(/^[\x21-\x7e]{1,255}$/, {
        message: () => "must be 1 to 255 visible ASCII characters (no space or control)",
        description:
          "Makes the request safe to retry: the same key (yours for `IDEMPOTENCY_TTL`, a day by default) with the " +
          "same method, path and body answers the first answer again, byte for byte, with `Idempotent-Replayed: " +
          "true`, and runs nothing again. With another path or body: 422 `idempotency_key_reused`; while the first is " +
          "still being processed: 409 `idempotency_key_in_use` with `Retry-After`. 1–255 visible ASCII characters; a " +
          "UUID is a good key."
      })
    ),
    { exact: true }
  )
})

/**
 * `Idempotency-Key` (docs/idempotency.md): the wrapper every `POST` endpoint's handler opts into, registered with
 * `handleRaw`: the wrapper decodes the payload from the body the server parsed once (`RequestBody`). It runs after
 * routing, after the endpoint's `Authentication` middleware, whose `CurrentPrincipal` owns the key, and after the
 * platform has decoded the header the endpoint declares (`IdempotencyKeyHeader`), with the two errors it brings
 * (src/Api.ts). The implementation is src/Idempotency/Http.ts.
 */
export class Idempotent extends Context.Tag("Idempotent")<
  Idempotent,
  {
    /**
     * A `POST` that takes a payload: decoded by `schema` (the one the endpoint declares), then `handler`; with the
     * header, both in the key's transaction, which records the answer with the change. `authorize`: what the
     * credential must be allowed for this payload beyond the endpoint's scopes (a rule of the handler's service),
     * checked before the key is looked up, so that a replay answers only a credential that may make the request (a
     * key is the user's, any of their credentials: docs/idempotency.md).
     */
    readonly withPayload: <P, I, A, E, R, EA = never, RA = never>(
      request: HttpServerRequest.HttpServerRequest,
      schema: Schema.Schema<P, I, never>,
      handler: (payload: P) => Effect.Effect<A, E, R>,
      authorize?: (payload: P) => Effect.Effect<void, EA, RA>
    ) => Idempotently<A, E | EA, R | RA>
    /** A `POST` without a payload (an action); a body sent anyway is compared as sent. `authorize` as above. */
    readonly action: <A, E, R, EA = never, RA = never>(
      request: HttpServerRequest.HttpServerRequest,
      handled: Effect.Effect<A, E, R>,
      authorize?: Effect.Effect<void, EA, RA>
    ) => Idempotently<A, E | EA, R | RA>
  }
>() {}
