// engine-independent: how log lines become OTLP records, the same whatever the engine
/**
 * OTLP log records carry a log line's fields as attributes a backend can query (`method`, `status`, …), with the
 * message alone as the body, not the fields as a JSON string in it.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { type Server, startServer } from "../support/server.ts"

interface AnyValue {
  readonly stringValue?: string
  readonly intValue?: string | number
  readonly doubleValue?: number
  readonly boolValue?: boolean
}
interface LogRecord {
  readonly body?: AnyValue
  readonly severityText?: string
  readonly attributes?: ReadonlyArray<{ readonly key: string; readonly value: AnyValue }>
}

const records: Array<LogRecord> = []
const collector = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body = await request.json()
    if (new URL(request.url).pathname === "/v1/logs") {
      for (const resourceLogs of body.resourceLogs ?? []) {
        for (const scopeLogs of resourceLogs.scopeLogs ?? []) records.push(...(scopeLogs.logRecords ?? []))
      }
    }
    return Response.json({})
  }
})

let server: Server

beforeAll(async () => {
  server = await startServer({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_TRACES_EXPORTER: "none",
      OTEL_METRICS_EXPORTER: "none",
      OTEL_LOGS_EXPORTER: "otlp"
    }
  })
}, 60_000)

afterAll(async () => {
  await server?.stop()
  collector.stop(true)
}, 20_000)

const value = (v: AnyValue) =>
  v.stringValue ?? (v.intValue === undefined ? undefined : Number(v.intValue)) ?? v.doubleValue ?? v.boolValue

test("the request line's fields are attributes of its log record", async () => {
  expect((await server.request("/v1/projects/proj_01jd3xkq8w0000000000000000")).status).toBe(401)
  const deadline = Date.now() + 15_000
  const requestLine = () =>
    records.find(
      (record) =>
        record.body?.stringValue === "request" &&
        record.attributes?.some(
          (a) => a.key === "path" && a.value.stringValue === "/v1/projects/proj_01jd3xkq8w0000000000000000"
        )
    )
  while (requestLine() === undefined && Date.now() < deadline) await Bun.sleep(100)
  const record = requestLine()
  expect(record).toBeDefined()
  const attributes = Object.fromEntries((record!.attributes ?? []).map((a) => [a.key, value(a.value)]))
  expect(attributes).toMatchObject({ method: "GET", path: "/v1/projects/proj_01jd3xkq8w0000000000000000", status: 401 })
  expect(typeof attributes.duration_ms).toBe("number")
  expect(attributes.request_id).toMatch(/^req_/)
  expect(record!.body).toEqual({ stringValue: "request" })
}, 30_000)
