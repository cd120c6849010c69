// engine-independent: no database
/**
 * The `node:http` server the service runs (src/Http.ts) is node's own: its requests and responses are
 * node's classes extended, and none of the server's methods is replaced. (Admission patched `emit` and `close` until
 * 3b82257; its Semaphore version after it measured slower than none and went, bench/README.md.)
 */
import { describe, expect, test } from "bun:test"
import { createServer } from "node:http"
import { Duration } from "effect"
import { makeNodeServer } from "../../src/Http.ts"

describe("the server (src/Http.ts)", () => {
  test("is node:http's own: none of its methods replaced", () => {
    const methods = (server: object) =>
      Object.keys(server).filter((key) => typeof Reflect.get(server, key) === "function")
    const server = makeNodeServer({ idleTimeout: Duration.seconds(10) })()
    expect(methods(server)).toEqual(methods(createServer()))
    expect(Object.hasOwn(server, "emit")).toBe(false)
    expect(Object.hasOwn(server, "close")).toBe(false)
  })
})
