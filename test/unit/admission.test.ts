// engine-independent: no database
/**
 * Admission (`HTTP_CONCURRENCY`, src/Http/NodeServer.ts `admit`): at most that many requests are worked on at once,
 * the others wait in arrival order for a place, or for their longest wait, then start anyway. On a `node:http` server
 * in this process, whose handler holds each request until the test lets it answer.
 */
import { afterEach, describe, expect, test } from "bun:test"
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { Option } from "effect"
import { admit, concurrencyFor, SettlingResponse } from "../../src/Http/NodeServer.ts"

interface Held {
  readonly server: Server<typeof IncomingMessage, typeof SettlingResponse>
  readonly url: string
  readonly admission: ReturnType<typeof admit>
  /** The paths the handler has seen, in the order it saw them. */
  readonly started: Array<string>
  /** Lets the request for `path` answer. */
  readonly release: (path: string) => void
}

const open: Array<Held> = []

afterEach(async () => {
  for (const held of open.splice(0)) {
    for (const path of held.started) held.release(path)
    held.server.closeAllConnections()
    await new Promise((resolve) => held.server.close(resolve))
  }
}, 20_000)

const serve = async (concurrency: number, waitMs: number): Promise<Held> => {
  const server = createServer({ ServerResponse: SettlingResponse })
  const admission = admit(server, concurrency, waitMs)
  const started: Array<string> = []
  const gates = new Map<string, () => void>()
  const gate = (path: string) =>
    new Promise<void>((resolve) => {
      gates.set(path, resolve)
    })
  server.on("request", (request, response) => {
    const path = request.url ?? ""
    started.push(path)
    void gate(path).then(() => response.end(path))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const held: Held = {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    admission,
    started,
    release: (path) => {
      gates.get(path)?.()
      gates.delete(path)
    }
  }
  open.push(held)
  return held
}

/** Waits until `condition` holds (or fails the test after 5 s). */
const until = async (condition: () => boolean) => {
  const deadline = Date.now() + 5000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out waiting")
    await Bun.sleep(2)
  }
}

/** Sends the requests one after the other, each once the server has the one before, so they arrive in order. */
const send = async (held: Held, paths: ReadonlyArray<string>, signal?: AbortSignal) => {
  const answers: Array<Promise<string>> = []
  for (const path of paths) {
    const before = held.admission.running() + held.admission.waiting() + held.started.length
    answers.push(fetch(`${held.url}${path}`, { signal }).then((response) => response.text()))
    await until(() => held.admission.running() + held.admission.waiting() + held.started.length > before)
  }
  return answers
}

describe("admission", () => {
  test("at most `concurrency` requests at once; the others start in arrival order as places free", async () => {
    const held = await serve(2, 60_000)
    const answers = await send(held, ["/1", "/2", "/3", "/4", "/5"])
    expect(held.started).toEqual(["/1", "/2"])
    expect(held.admission.waiting()).toBe(3)
    held.release("/2")
    await until(() => held.started.length === 3)
    expect(held.started).toEqual(["/1", "/2", "/3"])
    held.release("/1")
    await until(() => held.started.length === 4)
    expect(held.started[3]).toBe("/4")
    expect(held.admission.running()).toBe(2)
    held.release("/3")
    held.release("/4")
    await until(() => held.started.length === 5)
    held.release("/5")
    expect(await Promise.all(answers)).toEqual(["/1", "/2", "/3", "/4", "/5"])
    await until(() => held.admission.running() === 0)
    expect(held.admission.waiting()).toBe(0)
  })

  test("a request that has waited its longest starts although every place is still held", async () => {
    const held = await serve(1, 50)
    const answers = await send(held, ["/held", "/late"])
    await until(() => held.started.includes("/late"))
    expect(held.started).toEqual(["/held", "/late"])
    held.release("/late")
    held.release("/held")
    expect(await Promise.all(answers)).toEqual(["/held", "/late"])
  })

  test("health checks start at once, without a place", async () => {
    const held = await serve(1, 60_000)
    const answers = await send(held, ["/held", "/waits", "/health/live"])
    expect(held.started).toEqual(["/held", "/health/live"])
    expect(held.admission.waiting()).toBe(1)
    held.release("/health/live")
    held.release("/held")
    await until(() => held.started.includes("/waits"))
    held.release("/waits")
    expect(await Promise.all(answers)).toEqual(["/held", "/waits", "/health/live"])
  })

  test("a waiting request whose client went away is never started", async () => {
    const held = await serve(1, 60_000)
    const [first] = await send(held, ["/held"])
    const gone = new AbortController()
    const [abandoned] = await send(held, ["/abandoned"], gone.signal)
    const [last] = await send(held, ["/last"])
    expect(held.admission.waiting()).toBe(2)
    gone.abort()
    await abandoned?.catch(() => undefined)
    // Dropped once the server sees its connection close; the one behind it waits on.
    await until(() => held.admission.waiting() === 1)
    held.release("/held")
    await until(() => held.started.includes("/last"))
    held.release("/last")
    expect(await Promise.all([first, last])).toEqual(["/held", "/last"])
    expect(held.started).toEqual(["/held", "/last"])
  })

  test("closing the server starts the requests still waiting", async () => {
    const held = await serve(1, 60_000)
    const answers = await send(held, ["/held", "/waiting"])
    // Closed as shutdown closes it (its callback comes once the kept-alive connections are gone).
    const closed = new Promise((resolve) => held.server.close(resolve))
    await until(() => held.started.includes("/waiting"))
    held.release("/held")
    held.release("/waiting")
    expect(await Promise.all(answers)).toEqual(["/held", "/waiting"])
    held.server.closeAllConnections()
    await closed
  })

  test("0 is no limit", async () => {
    const held = await serve(0, 60_000)
    const answers = await send(held, ["/1", "/2", "/3"])
    expect(held.started).toEqual(["/1", "/2", "/3"])
    for (const path of held.started) held.release(path)
    expect(await Promise.all(answers)).toEqual(["/1", "/2", "/3"])
  })

  test("unset, it is 32 on SQLite and no limit on PostgreSQL; set, it is what it says on both", () => {
    expect(concurrencyFor(Option.none(), "sqlite")).toBe(32)
    expect(concurrencyFor(Option.none(), "pg")).toBe(0)
    expect(concurrencyFor(Option.some(8), "sqlite")).toBe(8)
    expect(concurrencyFor(Option.some(8), "pg")).toBe(8)
    expect(concurrencyFor(Option.some(0), "sqlite")).toBe(0)
  })
})
