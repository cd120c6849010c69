/**
 * The `node:http` server the service is served by (as Bun implements it), rather than `Bun.serve`: Bun 1.4.5's
 * `Bun.serve` answers neither of two pipelined requests when the first one's handler awaits anything
 * (scripts/bun-pipelining-repro.ts), while its `node:http` answers them in order, for a few microseconds more per
 * request.
 *
 * - Time-out: `HTTP_IDLE_TIMEOUT` (10 s, as Bun.serve's default `idleTimeout` was) is the socket time-out, which
 *   Bun's `node:http` honours: a connection is closed when no request has been completed and no answer written for
 *   that long, so a client sending its headers slowly (slowloris) is cut off, as is an idle keep-alive connection
 *   and a request still unanswered (Bun.serve did the same). Bun 1.4.5 ignores `headersTimeout` and
 *   `requestTimeout`; they are set for Node's sake.
 * - Duplicate headers are joined (`a, b`), as Bun.serve did, rather than all but the first dropped: two
 *   `Authorization` headers are no credential, not the first of them.
 * - A response whose connection is gone settles (`SettlingResponse`).
 */
import { createServer, type IncomingMessage, type Server, ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { Duration } from "effect"

const isCallback = (arg: unknown): arg is () => void => typeof arg === "function"

/**
 * Bun 1.4.5's `node:http` never calls `end`'s callback once the connection is closed (the client went away, or the
 * parser refused the rest of the request after its headers), nor emits `finish` or `error`. The platform sends
 * every answer by `end(body, callback)` and waits for the callback, in a region that cannot be interrupted: the
 * request would wait forever, counted as in flight, and shutdown would wait for it. This response calls the
 * callback when the connection closes if it has not been called by then, and at once if it was already closed.
 */
export class SettlingResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override end(callback?: () => void): this
  override end(chunk: unknown, callback?: () => void): this
  override end(chunk: unknown, encoding: BufferEncoding, callback?: () => void): this
  override end(first?: unknown, second?: unknown, third?: unknown): this {
    const given = isCallback(first) ? first : isCallback(second) ? second : isCallback(third) ? third : undefined
    if (given === undefined) return this.endWith(first, second, undefined)
    let called = false
    // Idempotent, so it can stay registered: `close` comes once for every response, and removes it.
    const settle = () => {
      if (called) return
      called = true
      given()
    }
    if (this.destroyed) {
      // Already closed: nothing will be written, and nothing would call back.
      super.end()
      queueMicrotask(settle)
      return this
    }
    this.once("close", settle)
    return this.endWith(first === given ? undefined : first, second === given ? undefined : second, settle)
  }

  private endWith(chunk: unknown, encoding: unknown, callback: (() => void) | undefined): this {
    if (chunk === undefined) return super.end(callback)
    if (typeof encoding === "string" && Buffer.isEncoding(encoding)) return super.end(chunk, encoding, callback)
    return super.end(chunk, callback)
  }
}

/** The server, its time-outs set from `idleTimeout` (`HTTP_IDLE_TIMEOUT`). */
export const makeNodeServer =
  (options: { readonly idleTimeout: Duration.Duration }) =>
  (): Server<typeof IncomingMessage, typeof SettlingResponse> => {
    const millis = Duration.toMillis(options.idleTimeout)
    const server = createServer({
      ServerResponse: SettlingResponse,
      headersTimeout: millis,
      requestTimeout: 3 * millis,
      keepAliveTimeout: millis,
      joinDuplicateHeaders: true
    })
    // Armed once per connection: the socket's own time-out resets on every read and write all the same, while Bun's
    // `server.timeout` would re-arm it on every request, work that buys nothing.
    server.on("connection", (socket: Socket) => {
      socket.setTimeout(millis, () => socket.destroy())
    })
    return server
  }
