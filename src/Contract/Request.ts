/**
 * What a request carries to its endpoint, in its `Context` (not in a shared object): here, the body the server
 * parsed before routing (src/Http/Precheck.ts), so the endpoint decodes its payload from it without parsing the
 * text again. Only a request whose endpoint takes a payload carries one; every such endpoint is registered with
 * `handleRaw` (the platform then reads no body) and decodes its payload here, through `decodePayload` or the
 * `Idempotent` wrapper (src/Idempotency/Http.ts), which hashes the same parsed body for its key.
 */
import { Context, Effect, Option, Schema } from "effect"
import type { ValidationFailed } from "../Domain/Errors.js"
import { validationFailed } from "./DecodeFailure.js"

export class RequestBody extends Context.Tag("RequestBody")<RequestBody, { readonly json: unknown }>() {}

/**
 * The body the server parsed before routing. Read as an optional service, so an endpoint's handler needs no
 * requirement of its own: the server always provides it for an endpoint that takes a payload.
 */
export const requestBody: Effect.Effect<{ readonly json: unknown }> = Effect.flatMap(
  Effect.serviceOption(RequestBody),
  Option.match({
    onSome: Effect.succeed,
    onNone: () => Effect.dieMessage("no RequestBody: the server's checks before routing did not run")
  })
)

/** A parsed body decoded by an endpoint's payload schema; a failure is `validation_failed`, as for any decode. */
export const decodeJson = <P, I>(
  schema: Schema.Schema<P, I, never>,
  json: unknown
): Effect.Effect<P, ValidationFailed> => Effect.mapError(Schema.decodeUnknown(schema)(json), validationFailed)

/** The endpoint's payload: the body parsed once before routing, decoded by `schema` (the one the endpoint declares). */
export const decodePayload = <P, I>(schema: Schema.Schema<P, I, never>): Effect.Effect<P, ValidationFailed> =>
  Effect.flatMap(requestBody, ({ json }) => decodeJson(schema, json))
