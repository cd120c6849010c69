/**
 * What a request carries to its endpoint, in its `Context` (not in a shared object): here, the body the server
 * parsed before routing (src/Http/BodyChecks.ts), so the endpoint decodes its payload from it without parsing the
 * text again (src/Idempotency/Http.ts). Only a request whose endpoint takes a payload carries one.
 */
import { Context } from "effect"

export class RequestBody extends Context.Tag("RequestBody")<RequestBody, { readonly json: unknown }>() {}
