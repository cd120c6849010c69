/**
 * The request id of the request being served: `req_<uuid>`, the client's `X-Request-Id` when that is a UUID.
 * Set once per request by the server middleware; read by the envelopes when they are encoded.
 */
import { Effect, FiberRef } from "effect"

export const CurrentRequestId: FiberRef.FiberRef<string> = FiberRef.unsafeMake("")

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const requestIdFrom = (header: string | undefined): string =>
  `req_${header !== undefined && UUID.test(header) ? header.toLowerCase() : crypto.randomUUID()}`

/** The current request id; outside a request (the CLI, a background fiber) a fresh one. */
export const currentRequestId: Effect.Effect<string> = Effect.map(FiberRef.get(CurrentRequestId), (id) =>
  id === "" ? requestIdFrom(undefined) : id
)
