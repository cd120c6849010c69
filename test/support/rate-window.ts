/**
 * The rate-limit tests' receiver and measure (test/e2e/webhooks-rate-limit.test.ts, replicas-rate-limit.test.ts).
 *
 * The receiver runs in a process of its own, so the time it notes for each request is when the request reached it,
 * not when the test process (which may be running the server too) got round to it: it notes the time first, then
 * prints one JSON line per request (`at`: milliseconds since the epoch, fractional; the path; the event's id and
 * type) and answers 200.
 */
import type { Subprocess } from "bun"

export interface Receipt {
  /** When the request arrived, in milliseconds since the epoch (fractional). */
  readonly at: number
  readonly path: string
  readonly eventId: string | null
  readonly eventType: string | null
}

const SOURCE = `
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const at = performance.timeOrigin + performance.now()
    if (request.method !== "POST") return new Response("ok")
    await request.text()
    const line = JSON.stringify({
      at,
      path: new URL(request.url).pathname,
      eventId: request.headers.get("x-service-event-id"),
      eventType: request.headers.get("x-service-event")
    })
    process.stdout.write(line + "\\n")
    return new Response("ok")
  }
})
process.stdout.write(JSON.stringify({ port: server.port }) + "\\n")
`

export interface ReceiverProcess {
  url(path: string): string
  /** The requests to `path` so far, in the order they arrived. */
  receipts(path: string): ReadonlyArray<Receipt>
  stop(): Promise<void>
}

export const startReceiverProcess = async (): Promise<ReceiverProcess> => {
  const child: Subprocess<"ignore", "pipe", "inherit"> = Bun.spawn(["bun", "-e", SOURCE], {
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit"
  })
  const receipts: Array<Receipt> = []
  let port: number | undefined
  let ready: (() => void) | undefined
  const started = new Promise<void>((resolve) => {
    ready = resolve
  })
  void (async () => {
    const decoder = new TextDecoder()
    let pending = ""
    const reader = child.stdout.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      pending += decoder.decode(value, { stream: true })
      let newline = pending.indexOf("\n")
      while (newline >= 0) {
        const line: { port?: number } & Partial<Receipt> = JSON.parse(pending.slice(0, newline))
        pending = pending.slice(newline + 1)
        if (line.port !== undefined) {
          port = line.port
          ready?.()
        } else if (line.at !== undefined && line.path !== undefined) {
          receipts.push({
            at: line.at,
            path: line.path,
            eventId: line.eventId ?? null,
            eventType: line.eventType ?? null
          })
        }
        newline = pending.indexOf("\n")
      }
    }
  })()
  await started
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    receipts: (path) => receipts.filter((receipt) => receipt.path === path),
    stop: async () => {
      child.kill()
      await child.exited
    }
  }
}

/**
 * What the rate-limit tests allow for the time between the worker starting an attempt and the receiver noting it,
 * beyond the margin the worker keeps itself (`PACE_SPAN_MS`): on a loaded machine one request now and then reaches
 * the receiver that much later than the ones after it. The tests count windows this much shorter than a second.
 */
export const TRANSIT_ALLOWANCE_MS = 150

/**
 * The most receipts any window `[t, t + windowMs)` holds, however it falls: a window holding the most can be moved to
 * start at one of the receipts, so it counts from each one.
 */
export const mostInWindow = (receipts: ReadonlyArray<Pick<Receipt, "at">>, windowMs: number): number => {
  const times = receipts.map((receipt) => receipt.at).sort((a, b) => a - b)
  let most = 0
  let end = 0
  for (let start = 0; start < times.length; start++) {
    while (end < times.length && times[end]! < times[start]! + windowMs) end++
    most = Math.max(most, end - start)
  }
  return most
}

/** The most receipts any one-second window holds, less the transit allowance. */
export const mostInOneSecond = (receipts: ReadonlyArray<Receipt>): number =>
  mostInWindow(receipts, 1000 - TRANSIT_ALLOWANCE_MS)

/** Each receipt's time after the first's, in milliseconds: what a failing test prints to show how they fell. */
export const receiptGaps = (receipts: ReadonlyArray<Receipt>): string => {
  const times = receipts.map((receipt) => receipt.at).sort((a, b) => a - b)
  return times.map((time) => Math.round(time - times[0]!)).join(", ")
}
