// engine-independent: the access line of the HTTP layer, the same whatever the engine
/**
 * The access line (src/Http/RequestWrapper.ts), at the defaults (tracing off, logs to stdout only): one JSON line
 * per request with the request's id and its method, path, status and duration, and no trace ids.
 *
 * Both implementations of the per-request wrapper run these tests.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { eventually, twinsOf } from "../support/helpers.ts"
import { type Server, startServer, type TestUser } from "../support/server.ts"

describe.each(twinsOf("request-wrapper"))("request wrapper: %s", (_wrapper, fastPaths) => {
  let server: Server
  let user: TestUser
  beforeAll(async () => {
    server = await startServer({ env: { FAST_PATHS: fastPaths } })
    user = await server.user()
  }, 60_000)
  afterAll(() => server.stop(), 20_000)

  const accessLineOf = (requestId: string) =>
    eventually(
      () =>
        server.logs
          .map((line): Record<string, unknown> => JSON.parse(line))
          .find((line) => line.message === "request" && line.request_id === requestId),
      { timeoutMs: 5_000, what: `the access line of ${requestId}` }
    )

  test("one line per request: time, level, request id, method, path, status, duration", async () => {
    const created = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "Logged" } })
    expect(created.status).toBe(201)
    // The path is logged without its query (`x` is no parameter of the endpoint: refused, 400).
    const read = await server.request(`/v1/projects/${created.body.data.id}?x=1`, { key: user.key })
    const missing = await server.request("/v1/projects/proj_01m84snsc2evj8rhwpd874pdyq")
    for (const [response, method, path, status] of [
      [created, "POST", "/v1/projects", 201],
      [read, "GET", `/v1/projects/${created.body.data.id}`, 400],
      [missing, "GET", "/v1/projects/proj_01m84snsc2evj8rhwpd874pdyq", 401]
    ] as const) {
      const requestId = response.headers.get("x-request-id") ?? ""
      expect(requestId).toMatch(/^req_/)
      const line = await accessLineOf(requestId)
      expect(line).toMatchObject({ level: "info", message: "request", request_id: requestId, method, path, status })
      expect(typeof line.duration_ms).toBe("number")
      expect(new Date(String(line.time)).toISOString()).toBe(String(line.time))
      expect(line.trace_id).toBeUndefined()
      expect(line.span_id).toBeUndefined()
      expect(
        server.logs.filter(
          (text) => text.includes(`"request_id":"${requestId}"`) && text.includes('"message":"request"')
        )
      ).toHaveLength(1)
    }
  })
})
