/**
 * A real webhook receiver for the tests: an HTTP server on a free loopback port that records every request
 * (method, path, headers, raw body text, when it arrived and when it was answered) and answers each one with a
 * programmable behaviour: queued responses per path (status, body, headers, a delay before answering), else the
 * path's default, else the receiver's default (200 "ok").
 */
import type { Server as BunServer } from "bun"
import { sleep } from "./helpers.ts"

/** Kept here too for the files that import it from the receiver. */
export { eventually } from "./helpers.ts"

export interface Behaviour {
  /** HTTP status to answer with; 200 unless given. */
  readonly status?: number
  /** Milliseconds to wait before answering (e.g. longer than `WEBHOOK_TIMEOUT`). */
  readonly delayMs?: number
  readonly body?: string
  readonly headers?: Record<string, string>
}

/** A behaviour, or a function choosing one for the request at hand. */
export type Responder = Behaviour | ((request: ReceivedRequest) => Behaviour)

export interface ReceivedRequest {
  readonly method: string
  /** Path and query, e.g. `/hook`. */
  readonly path: string
  /** Header names lower-cased. */
  readonly headers: Record<string, string>
  /** The raw body text, exactly as received. */
  readonly body: string
  /** `Date.now()` when the request arrived. */
  readonly receivedAt: number
  /** `performance.now()` when the request arrived (for precise gaps). */
  readonly receivedMono: number
  /** `performance.now()` when the answer was handed back (undefined while in flight). */
  answeredMono?: number
  /** The status the receiver answered with. */
  status?: number
}

export interface WaitOptions {
  /** Only requests to this path count. */
  readonly path?: string
  /** Only requests this predicate accepts count. */
  readonly where?: (request: ReceivedRequest) => boolean
  readonly timeoutMs?: number
}

export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  /** The absolute URL of a path on this receiver (default `/hook`). */
  url(path?: string): string
  /** Every request so far, in arrival order (optionally only those to `path`). */
  requests(path?: string): Array<ReceivedRequest>
  /** Queues behaviours for the next requests to `path`, consumed one per request, in order. */
  enqueue(path: string, ...behaviours: Array<Responder>): void
  /** The behaviour for `path` when its queue is empty (or, without a path, for every path). */
  setDefault(responder: Responder, path?: string): void
  /** Resolves with the matching requests once there are at least `count` of them; rejects on time-out. */
  waitFor(count: number, options?: WaitOptions): Promise<Array<ReceivedRequest>>
  /** Requests being answered right now, per `X-Service-Delivery` id. */
  readonly inFlightByDelivery: Map<string, number>
  /** The largest number of requests ever in flight at once for one delivery id. */
  readonly maxInFlightByDelivery: Map<string, number>
  /** Delivery ids that were ever in flight twice at the same time. */
  readonly overlapping: Set<string>
  /** Requests being answered right now, and the most there ever were at once. */
  readonly load: { readonly inFlight: number; readonly maxInFlight: number }
  /** Forgets recorded requests, queues and defaults. */
  reset(): void
  stop(): Promise<void>
}

export const startReceiver = (options: { readonly default?: Responder } = {}): Receiver => {
  const recorded: Array<ReceivedRequest> = []
  const queues = new Map<string, Array<Responder>>()
  const pathDefaults = new Map<string, Responder>()
  let fallback: Responder = options.default ?? { status: 200, body: "ok" }
  const inFlightByDelivery = new Map<string, number>()
  const maxInFlightByDelivery = new Map<string, number>()
  const overlapping = new Set<string>()
  const load = { inFlight: 0, maxInFlight: 0 }
  const waiters = new Set<() => void>()
  const notify = () => {
    for (const waiter of waiters) waiter()
  }

  const choose = (request: ReceivedRequest): Behaviour => {
    const queue = queues.get(request.path)
    const responder =
      queue !== undefined && queue.length > 0 ? queue.shift()! : (pathDefaults.get(request.path) ?? fallback)
    return typeof responder === "function" ? responder(request) : responder
  }

  const server: BunServer<undefined> = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      const receivedMono = performance.now()
      const receivedAt = Date.now()
      // In flight from the moment the request arrives until its answer is handed back.
      load.inFlight++
      load.maxInFlight = Math.max(load.maxInFlight, load.inFlight)
      const deliveryId = req.headers.get("x-service-delivery") ?? undefined
      if (deliveryId !== undefined) {
        const now = (inFlightByDelivery.get(deliveryId) ?? 0) + 1
        inFlightByDelivery.set(deliveryId, now)
        maxInFlightByDelivery.set(deliveryId, Math.max(now, maxInFlightByDelivery.get(deliveryId) ?? 0))
        if (now > 1) overlapping.add(deliveryId)
      }
      let request: ReceivedRequest | undefined
      try {
        const url = new URL(req.url)
        const headers: Record<string, string> = {}
        req.headers.forEach((value, name) => {
          headers[name.toLowerCase()] = value
        })
        const body = await req.text()
        request = { method: req.method, path: url.pathname + url.search, headers, body, receivedAt, receivedMono }
        recorded.push(request)
        notify()
        const behaviour = choose(request)
        if (behaviour.delayMs !== undefined && behaviour.delayMs > 0) await sleep(behaviour.delayMs)
        const status = behaviour.status ?? 200
        request.status = status
        return new Response(behaviour.body ?? "", { status, headers: behaviour.headers ?? {} })
      } finally {
        load.inFlight--
        if (request !== undefined) request.answeredMono = performance.now()
        if (deliveryId !== undefined) inFlightByDelivery.set(deliveryId, (inFlightByDelivery.get(deliveryId) ?? 1) - 1)
      }
    }
  })

  const origin = `http://127.0.0.1:${server.port}`

  const matching = (options: WaitOptions) =>
    recorded.filter(
      (request) =>
        (options.path === undefined || request.path === options.path) &&
        (options.where === undefined || options.where(request))
    )

  const waitFor = (count: number, options: WaitOptions = {}): Promise<Array<ReceivedRequest>> =>
    new Promise((resolve, reject) => {
      const timeoutMs = options.timeoutMs ?? 10_000
      const check = () => {
        const found = matching(options)
        if (found.length >= count) {
          waiters.delete(check)
          clearTimeout(timer)
          resolve(found)
        }
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        reject(
          new Error(
            `receiver: waited ${timeoutMs} ms for ${count} request(s)${
              options.path !== undefined ? ` to ${options.path}` : ""
            }, got ${matching(options).length}`
          )
        )
      }, timeoutMs)
      waiters.add(check)
      check()
    })

  return {
    origin,
    url: (path = "/hook") => `${origin}${path}`,
    requests: (path) => (path === undefined ? [...recorded] : recorded.filter((request) => request.path === path)),
    enqueue: (path, ...behaviours) => {
      queues.set(path, [...(queues.get(path) ?? []), ...behaviours])
    },
    setDefault: (responder, path) => {
      if (path === undefined) fallback = responder
      else pathDefaults.set(path, responder)
    },
    waitFor,
    inFlightByDelivery,
    maxInFlightByDelivery,
    overlapping,
    load,
    reset: () => {
      recorded.length = 0
      queues.clear()
      pathDefaults.clear()
      fallback = options.default ?? { status: 200, body: "ok" }
      inFlightByDelivery.clear()
      maxInFlightByDelivery.clear()
      overlapping.clear()
      load.inFlight = 0
      load.maxInFlight = 0
    },
    stop: async () => {
      await server.stop(true)
    }
  }
}
