/**
 * Spans still queued when the server is told to stop are exported before it exits: with the schedule delay set
 * to an hour, nothing leaves before SIGTERM, and the request's spans arrive after it, with the configured headers.
 */
import { afterAll, expect, test } from "bun:test"
import { startServer } from "../support/server.ts"

const names: Array<string> = []
const collectorKeys: Array<string | null> = []
const collector = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body = (await request.json()) as any
    collectorKeys.push(request.headers.get("x-collector-key"))
    if (new URL(request.url).pathname === "/v1/traces") {
      for (const rs of body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? []) for (const span of ss.spans ?? []) names.push(span.name)
    }
    return Response.json({})
  }
})
afterAll(() => collector.stop(true), 20_000)

test("SIGTERM: the spans queued for export are sent before the process exits", async () => {
  const server = await startServer({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "3600000",
      OTEL_EXPORTER_OTLP_HEADERS: "x-collector-key=s3cret%2Fkey",
      OTEL_METRICS_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "none"
    }
  })
  const user = await server.user()
  const response = await server.request("/v1/projects?per_page=1", { key: user.key })
  expect(response.status).toBe(200)
  await Bun.sleep(200)
  expect(names).toEqual([])

  expect(await server.stop("SIGTERM")).toBe(0)
  expect(names).toContain("GET /v1/projects")
  expect(names).toContain("Projects.list")
  // OTEL_EXPORTER_OTLP_HEADERS went with the export, percent-decoded, and into no log line.
  expect(collectorKeys).toContain("s3cret/key")
  expect(server.logs.join("\n")).not.toContain("s3cret")
}, 60_000)
