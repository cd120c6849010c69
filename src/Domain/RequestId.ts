/**
 * The request id of the request being served: `req_<uuid>`, the client's `X-Request-Id` when that is a UUID.
 * Set once per request by the server middleware; read by the envelopes when they are encoded.
 */
import { Effect, FiberRef } from "effect"

/** What the envelopes need of the request being served: its id. */
export interface RequestIdentity {
  readonly id: string
}

/**
 * The request being served. The server sets what it knows of the request here (src/Http/Routes.ts), so the id
 * costs no FiberRef of its own: each FiberRef a fiber holds makes every write of its refs dearer.
 */
export const CurrentRequestIdentity: FiberRef.FiberRef<RequestIdentity | undefined> = FiberRef.unsafeMake<
  RequestIdentity | undefined
>(undefined)

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const requestIdFrom = (header: string | undefined): string =>
  `req_${header !== undefined && UUID.test(header) ? header.toLowerCase() : crypto.randomUUID()}`

/** The current request id; outside a request (the CLI, a background fiber) a fresh one. */
export const currentRequestId: Effect.Effect<string> = Effect.map(FiberRef.get(CurrentRequestIdentity), (request) =>
  request === undefined ? requestIdFrom(undefined) : request.id
)
