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
 * - Admission (`HTTP_CONCURRENCY`): at most that many requests are worked on at once; the others wait, in arrival
 *   order, for one to end or 100 ms at most (`admit` below).
 */
import { createServer, type IncomingMessage, type Server, ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { Duration, Option } from "effect"

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

/**
 * `HTTP_CONCURRENCY`, or when it is not set: 32 on SQLite, where a request's work is this process's CPU; no limit on
 * PostgreSQL, whose requests wait on the database server, which more of them in flight keep busy.
 */
export const concurrencyFor = (setting: Option.Option<number>, engine: "sqlite" | "pg"): number =>
  Option.getOrElse(setting, () => (engine === "pg" ? 0 : 32))

/**
 * How long a request waits for a place at most; then it starts anyway. Places are held by requests that wait for
 * their clients too (a body sent slowly), so a client cannot hold every place and stop the server: it can only slow
 * the others by this much.
 */
export const ADMISSION_WAIT_MS = 100

/**
 * Admission: at most `concurrency` requests are worked on at once; the others wait, in arrival order, for one to end,
 * or for `waitMs` (`ADMISSION_WAIT_MS`), whichever comes first. A request is parsed when it arrives; until it starts,
 * it holds only that, where one that has started holds the fibers of its whole handling while it waits for its turn at
 * the database (group commit gathers every create that arrives meanwhile). So under load the collector marks a few
 * dozen requests' fibers instead of one for every connection. Health checks start at once, so a busy server still
 * answers them. A request whose client went away before it started is dropped.
 */
export const admit = (
  server: Server<typeof IncomingMessage, typeof SettlingResponse>,
  concurrency: number,
  waitMs: number = ADMISSION_WAIT_MS
): { readonly running: () => number; readonly waiting: () => number } => {
  if (concurrency <= 0) return { running: () => 0, waiting: () => 0 }
  const emit = server.emit.bind(server) as (event: string, ...args: Array<unknown>) => boolean
  interface Waiting {
    readonly request: IncomingMessage
    readonly response: SettlingResponse
    readonly at: number
    /** Started, or dropped because its client went away. */
    done: boolean
  }
  const waiting: Array<Waiting> = []
  let waitingCount = 0
  let running = 0
  let timer: ReturnType<typeof setTimeout> | undefined

  // One listener for every response: `close` comes once for each, when it has been sent or its connection is gone.
  const ended = () => {
    running--
    if (waiting.length > 0) next()
  }
  const start = (request: IncomingMessage, response: SettlingResponse, counted: boolean) => {
    if (counted) {
      running++
      response.on("close", ended)
    }
    emit("request", request, response)
  }
  const startWaiting = (entry: Waiting) => {
    if (entry.done) return
    entry.done = true
    waitingCount--
    start(entry.request, entry.response, true)
  }
  /** Starts the waiting requests there is a place for, and those that have waited long enough. */
  const next = () => {
    const now = performance.now()
    for (let first = waiting[0]; first !== undefined; first = waiting[0]) {
      if (!first.done && running >= concurrency && now - first.at < waitMs) break
      waiting.shift()
      startWaiting(first)
    }
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
    const first = waiting[0]
    if (first !== undefined) {
      timer = setTimeout(next, Math.max(0, first.at + waitMs - now))
      timer.unref()
    }
  }

  server.emit = ((event: string, ...args: Array<unknown>) => {
    if (event !== "request") return emit(event, ...args)
    const request = args[0] as IncomingMessage
    const response = args[1] as SettlingResponse
    if (request.url?.startsWith("/health/")) start(request, response, false)
    else if (running < concurrency && waitingCount === 0) start(request, response, true)
    else {
      const entry: Waiting = { request, response, at: performance.now(), done: false }
      waiting.push(entry)
      waitingCount++
      // A client that goes away while its request waits: the request is dropped (its place in the line stays
      // until it comes to the front, and is skipped then).
      response.once("close", () => {
        if (entry.done) return
        entry.done = true
        waitingCount--
      })
      if (timer === undefined) next()
    }
    return true
  }) as typeof server.emit
  // The server closes once shutdown has drained the requests in flight: any still waiting start now, rather than
  // when a place frees or their wait is over, so that none is left behind.
  const close = server.close.bind(server)
  server.close = ((callback?: (error?: Error) => void) => {
    for (const entry of waiting.splice(0)) startWaiting(entry)
    return close(callback)
  }) as typeof server.close
  return { running: () => running, waiting: () => waitingCount }
}

/** The server, its time-outs set from `idleTimeout` (`HTTP_IDLE_TIMEOUT`), its admission from `concurrency`. */
export const makeNodeServer =
  (options: { readonly idleTimeout: Duration.Duration; readonly concurrency: number }) =>
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
    admit(server, options.concurrency)
    return server
  }
