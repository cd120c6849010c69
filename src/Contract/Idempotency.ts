import type * as HttpRouter from "@effect/platform/HttpRouter"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Context, type Effect, type Schema } from "effect"
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
 * `Idempotency-Key` (docs/idempotency.md): the wrapper every `POST` endpoint's handler opts into, registered with
 * `handleRaw`: the wrapper decodes the payload from the body the server parsed once (`RequestBody`). It runs after
 * routing and after the endpoint's `Authentication` middleware, whose `CurrentPrincipal` owns the key. The header
 * is declared on every `POST` of the published document (src/Http/OpenApi.ts), with the two errors it brings
 * (src/Api.ts). The implementation is src/Idempotency/Http.ts.
 */
export class Idempotent extends Context.Tag("Idempotent")<
  Idempotent,
  {
    /**
     * A `POST` that takes a payload: decoded by `schema` (the one the endpoint declares), then `handler`; with the
     * header, both in the key's transaction, which records the answer with the change.
     */
    readonly withPayload: <P, I, A, E, R>(
      request: HttpServerRequest.HttpServerRequest,
      schema: Schema.Schema<P, I, never>,
      handler: (payload: P) => Effect.Effect<A, E, R>
    ) => Idempotently<A, E, R>
    /** A `POST` without a payload (an action); a body sent anyway is compared as sent. */
    readonly action: <A, E, R>(
      request: HttpServerRequest.HttpServerRequest,
      handled: Effect.Effect<A, E, R>
    ) => Idempotently<A, E, R>
  }
>() {}
