/**
 * Rate limits over real HTTP: per-credential buckets, per-IP buckets for requests without a valid credential,
 * the headers, 429s, the refill, and two server processes sharing one Redis (Debian's `redis-server`, started
 * here on a loopback port; those tests are skipped with a message when the binary is absent).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { freePort } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { REDIS_SERVER, type RedisProcess, startRedis } from "../support/redis.ts"
import { type Response, type Server, startServer } from "../support/server.ts"

const expectHeaders = (res: Response, limit: number, remaining: number, windowSeconds: number) => {
  expect(res.headers.get("x-ratelimit-limit")).toBe(String(limit))
  expect(res.headers.get("x-ratelimit-remaining")).toBe(String(remaining))
  const reset = Number(res.headers.get("x-ratelimit-reset"))
  const now = Date.now() / 1000
  expect(Number.isInteger(reset)).toBe(true)
  expect(reset).toBeGreaterThanOrEqual(Math.floor(now))
  expect(reset).toBeLessThanOrEqual(Math.ceil(now + windowSeconds) + 1)
}

const expectRateLimited = (res: Response, maxRetryAfter: number) => {
  expect(res.status).toBe(429)
  expect(res.body.error).toMatchObject({ code: "rate_limited", status: 429 })
  expect(res.body.error.message).toContain("Rate limit")
  expect(res.body.error.request_id).toMatch(/^req_/)
  expect(res.headers.get("x-request-id")).toBe(res.body.error.request_id)
  expect(res.headers.get("x-ratelimit-remaining")).toBe("0")
  const retryAfter = Number(res.headers.get("retry-after"))
  expect(Number.isInteger(retryAfter)).toBe(true)
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(maxRetryAfter)
}

describe("per credential and per client IP (in-process store)", () => {
  let server: Server
  beforeAll(async () => {
    server = await startInProcess({
      env: { RATE_LIMIT_PER_MINUTE: "5", RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "5", RATE_LIMIT_WINDOW: "1m" }
    })
  }, 60_000)
  afterAll(async () => {
    await server?.stop()
  }, 20_000)

  test("the headers count down, then 429 rate_limited with Retry-After", async () => {
    const ann = await server.user()
    for (let remaining = 4; remaining >= 0; remaining--) {
      const res = await server.request("/v1/projects", { key: ann.key })
      expect(res.status).toBe(200)
      expect(res.headers.get("retry-after")).toBeNull()
      expectHeaders(res, 5, remaining, 60)
    }
    const refused = await server.request("/v1/projects", { key: ann.key })
    expectRateLimited(refused, 12) // one token comes back every 60 s / 5
    expectHeaders(refused, 5, 0, 60)
    // Every endpoint shares the credential's bucket, writes included.
    expectRateLimited(await server.request("/v1/projects", { key: ann.key, method: "POST", body: { name: "x" } }), 12)
    expectRateLimited(await server.request("/v1/users/me", { key: ann.key }), 12)
  })

  test("independent keys have independent budgets, even for the same user", async () => {
    const bob = await server.user()
    const second = await server.fixtures.apiKey(bob.id, { name: "second", scopes: "read,write" })
    const carol = await server.user()
    for (let i = 0; i < 5; i++) expect((await server.request("/v1/users/me", { key: bob.key })).status).toBe(200)
    expectRateLimited(await server.request("/v1/users/me", { key: bob.key }), 12)
    const other = await server.request("/v1/users/me", { key: second.key })
    expect(other.status).toBe(200)
    expectHeaders(other, 5, 4, 60)
    const third = await server.request("/v1/users/me", { key: carol.key })
    expect(third.status).toBe(200)
    expectHeaders(third, 5, 4, 60)
  })

  test("a 403 (missing scope) is counted against the credential and carries the headers", async () => {
    const reader = await server.user({ scopes: "read" })
    const res = await server.request("/v1/projects", { key: reader.key, method: "POST", body: { name: "x" } })
    expect(res.status).toBe(403)
    expectHeaders(res, 5, 4, 60)
  })

  test("requests without a valid credential are counted per client IP; a valid key from that IP then waits too", async () => {
    const dave = await server.user()
    const responses = [
      await server.request("/v1/projects"), // 401, no credentials
      await server.request("/v1/projects", { key: "pcs_notakeynotakeynotakeynotakeynotakeynotakeyx" }), // 401
      await server.request("/v1/nope"), // 404 before authentication
      await server.request("/v1/projects", { method: "PATCH" }), // 405
      await server.request("/v1/openapi.json") // 200, no credential needed
    ]
    expect(responses.map((res) => res.status)).toEqual([401, 401, 404, 405, 200])
    for (const [i, res] of responses.entries()) expectHeaders(res, 5, 4 - i, 60)
    expect(responses[0]!.headers.get("www-authenticate")).toMatch(/^Bearer/)
    expect(responses[3]!.headers.get("allow")).toBeTruthy()

    const refused = await server.request("/v1/projects", { key: "pcs_anotherwrongkeyanotherwrongkeyanotherwrongk" })
    expectRateLimited(refused, 12)
    expectRateLimited(await server.request("/v1/nope"), 12)
    // While the IP's bucket is empty no token is checked, so a right guess looks like a wrong one.
    expectRateLimited(await server.request("/v1/users/me", { key: dave.key }), 12)
    // Health checks are not /v1 and are never limited.
    const health = await server.request("/health/live")
    expect(health.status).toBe(200)
    expect(health.headers.get("x-ratelimit-limit")).toBeNull()
  })
})

describe("the refill", () => {
  let server: Server
  beforeAll(async () => {
    server = await startInProcess({ env: { RATE_LIMIT_PER_MINUTE: "5", RATE_LIMIT_WINDOW: "2s" } })
  }, 60_000)
  afterAll(async () => {
    await server?.stop()
  }, 20_000)

  test("after the window the whole budget is back", async () => {
    const erin = await server.user()
    const statuses: Array<number> = []
    for (let i = 0; i < 6; i++) statuses.push((await server.request("/v1/users/me", { key: erin.key })).status)
    // Five pass at once; the sixth may pass only if a token (one per 400 ms) came back meanwhile.
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200])
    let refused = await server.request("/v1/users/me", { key: erin.key })
    for (let i = 0; refused.status === 200 && i < 10; i++)
      refused = await server.request("/v1/users/me", { key: erin.key })
    expectRateLimited(refused, 1)
    await Bun.sleep(2_100)
    const back = await server.request("/v1/users/me", { key: erin.key })
    expect(back.status).toBe(200)
    expectHeaders(back, 5, 4, 2)
  }, 15_000)
})

describe("RATE_LIMIT_ENABLED=false", () => {
  test("no limits and no headers", async () => {
    const server = await startInProcess({ env: { RATE_LIMIT_ENABLED: "false", RATE_LIMIT_PER_MINUTE: "1" } })
    try {
      const user = await server.user()
      for (let i = 0; i < 3; i++) {
        const res = await server.request("/v1/users/me", { key: user.key })
        expect(res.status).toBe(200)
        expect(res.headers.get("x-ratelimit-limit")).toBeNull()
      }
    } finally {
      await server.stop()
    }
  }, 60_000)
})

// ---------------------------------------------------------------------------------------------------------------
// Redis

const REDIS = REDIS_SERVER
if (REDIS === null) {
  console.warn("rate-limit.test.ts: redis-server not found (apt-get install redis-server); skipping the Redis tests")
}

const redisCli = async (port: number, ...args: Array<string>) => {
  const proc = Bun.spawn(["redis-cli", "-p", String(port), "--raw", ...args], { stdout: "pipe", stderr: "pipe" })
  return (await new Response(proc.stdout).text()).trim()
}

describe.skipIf(REDIS === null)("two server processes sharing one Redis", () => {
  let redis: RedisProcess
  let a: Server
  let b: Server
  beforeAll(async () => {
    redis = await startRedis()
    const env = { RATE_LIMIT_PER_MINUTE: "5", RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "5", REDIS_URL: redis.url }
    a = await startServer({ env })
    b = await startServer({ env, databaseUrl: a.databaseUrl })
  }, 60_000)
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()])
    redis?.process.kill()
    await redis?.process.exited
  }, 20_000)

  test("one combined limit per credential", async () => {
    const fay = await a.user()
    const seen: Array<[number, string | null]> = []
    for (const server of [a, b, a, b, a]) {
      const res = await server.request("/v1/users/me", { key: fay.key })
      seen.push([res.status, res.headers.get("x-ratelimit-remaining")])
    }
    expect(seen).toEqual([
      [200, "4"],
      [200, "3"],
      [200, "2"],
      [200, "1"],
      [200, "0"]
    ])
    expectRateLimited(await b.request("/v1/users/me", { key: fay.key }), 12)
    expectRateLimited(await a.request("/v1/users/me", { key: fay.key }), 12)
  })

  test("one combined limit per client IP", async () => {
    const statuses: Array<number> = []
    for (const server of [a, b, a, b, a, b]) statuses.push((await server.request("/v1/nope")).status)
    expect(statuses).toEqual([404, 404, 404, 404, 404, 429])
  })

  test("buckets in Redis expire once they would be full again", async () => {
    const keys = (await redisCli(redis.port, "--scan", "--pattern", "pcs:ratelimit:*"))
      .split("\n")
      .filter((k) => k !== "")
    expect(keys.length).toBeGreaterThan(0)
    for (const key of keys) {
      const ttl = Number(await redisCli(redis.port, "pttl", key))
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(60_000)
    }
  }, 60_000)

  test("Redis stopped: requests still succeed (counted in-process), one warning logged", async () => {
    const gus = await a.user()
    redis.process.kill("SIGKILL")
    await redis.process.exited
    for (let i = 0; i < 4; i++) {
      const res = await a.request("/v1/users/me", { key: gus.key })
      expect(res.status).toBe(200)
      expectHeaders(res, 5, 4 - i, 60)
      expect((await b.request("/v1/projects", { key: gus.key })).status).toBe(200)
    }
    const warnings = a.logs.filter((line) => line.includes("rate-limit store unavailable"))
    expect(warnings.length).toBe(1)
  }, 15_000)
})

describe.skipIf(REDIS === null)("Redis unreachable at start-up", () => {
  test("the server starts and serves", async () => {
    const server = await startServer({ env: { REDIS_URL: `redis://127.0.0.1:${freePort()}` } })
    try {
      const user = await server.user()
      const res = await server.request("/v1/users/me", { key: user.key })
      expect(res.status).toBe(200)
      expectHeaders(res, 1000, 999, 60)
    } finally {
      await server.stop()
    }
  }, 60_000)
})
