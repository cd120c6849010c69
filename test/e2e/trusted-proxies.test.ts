/**
 * `TRUSTED_PROXIES`: behind a load balancer every request comes from its address, so the per-IP limits (requests
 * without a valid credential, sign-in) would count every client together. From a trusted proxy the client is the
 * right-most `X-Forwarded-For` entry that is not a trusted proxy; from anyone else the header is ignored.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { trustedProxies } from "../../src/Http/ClientAddress.ts"
import { startInProcess, startupFailureInProcess as startupFailure } from "../support/in-process.ts"
import type { Server } from "../support/server.ts"

describe("the client's address", () => {
  const proxies = trustedProxies([
    { address: "127.0.0.1", prefix: undefined },
    { address: "10.0.0.0", prefix: 8 },
    { address: "fd00::", prefix: 8 }
  ])

  test("from a trusted proxy: the right-most X-Forwarded-For entry that is not one", () => {
    expect(proxies.clientOf("127.0.0.1", "203.0.113.7")).toBe("203.0.113.7")
    expect(proxies.clientOf("::ffff:127.0.0.1", "198.51.100.1, 203.0.113.7, 10.1.2.3")).toBe("203.0.113.7")
    expect(proxies.clientOf("fd00::1", "2001:db8::5")).toBe("2001:db8::5")
    // Only trusted hops: the left-most is as close to the client as it gets; no header: the proxy itself.
    expect(proxies.clientOf("10.0.0.2", "10.9.9.9")).toBe("10.0.0.2")
    expect(proxies.clientOf("10.0.0.2", undefined)).toBe("10.0.0.2")
  })

  test("from anyone else the header is ignored", () => {
    expect(proxies.clientOf("203.0.113.9", "198.51.100.1")).toBe("203.0.113.9")
    expect(trustedProxies([]).clientOf("127.0.0.1", "198.51.100.1")).toBe("127.0.0.1")
  })

  test("a malformed TRUSTED_PROXIES stops the server at start-up, saying why", async () => {
    for (const value of ["localhost", "10.0.0.0/33", "10.0.0.1/8/1"]) {
      expect(String(await startupFailure({ TRUSTED_PROXIES: value }))).toContain("TRUSTED_PROXIES")
    }
  }, 60_000)
})

describe("a server behind a trusted proxy", () => {
  let server: Server
  beforeAll(async () => {
    server = await startInProcess({ env: { TRUSTED_PROXIES: "127.0.0.1", RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "2" } })
  }, 60_000)
  afterAll(() => server?.stop(), 20_000)

  test("counts requests without a credential per forwarded client, not per proxy", async () => {
    const from = (client: string) => server.request("/v1/nope", { headers: { "x-forwarded-for": client } })
    expect((await from("203.0.113.1")).status).toBe(404)
    expect((await from("203.0.113.1")).status).toBe(404)
    expect((await from("203.0.113.1")).status).toBe(429)
    // Another client behind the same proxy has a bucket of its own.
    expect((await from("203.0.113.2")).status).toBe(404)
    // The client cannot pick its bucket: entries left of the proxy's own are not read.
    expect((await from("203.0.113.3, 203.0.113.1")).status).toBe(429)
  })
})
