/**
 * The real server process exports over OTLP/HTTP (JSON) to a collector on loopback: spans arrive with the
 * service's resource, a request's server span has its service and SQL spans beneath it, and the delivery attempt
 * it caused is in the same trace — whose `traceparent` the webhook receiver sees. Secrets appear nowhere.
 *
 * Both implementations of the per-request wrapper (src/Http/RequestWrapper.ts) run these tests.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { eventually, twinsOf } from "../support/helpers.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type Server, startServer, type TestUser } from "../support/server.ts"

interface OtlpAttribute {
  readonly key: string
  readonly value: {
    readonly stringValue?: string
    readonly intValue?: string | number
    readonly boolValue?: boolean
    readonly doubleValue?: number
  }
}
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<OtlpAttribute>
}
interface Collected {
  readonly resource: Record<string, unknown>
  readonly span: OtlpSpan
}

const attrs = (list: ReadonlyArray<OtlpAttribute> | undefined): Record<string, unknown> =>
  Object.fromEntries(
    (list ?? []).map(({ key, value }) => [
      key,
      value.stringValue ?? value.intValue ?? value.boolValue ?? value.doubleValue
    ])
  )

/** A minimal OTLP/HTTP JSON collector. */
const collector = () => {
  const spans: Array<Collected> = []
  const metricNames = new Set<string>()
  const bodies: Array<string> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const text = await request.text()
      bodies.push(text)
      const url = new URL(request.url)
      const body = JSON.parse(text)
      if (url.pathname === "/v1/traces") {
        for (const rs of body.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) {
            for (const span of ss.spans ?? []) spans.push({ resource: attrs(rs.resource?.attributes), span })
          }
        }
      }
      if (url.pathname === "/v1/metrics") {
        for (const rm of body.resourceMetrics ?? []) {
          for (const sm of rm.scopeMetrics ?? []) for (const metric of sm.metrics ?? []) metricNames.add(metric.name)
        }
      }
      return Response.json({})
    }
  })
  return { url: `http://127.0.0.1:${server.port}`, spans, metricNames, bodies, stop: () => server.stop(true) }
}

describe.each(twinsOf("request-wrapper"))("request wrapper: %s", (_wrapper, fastPaths) => {
  let otlp: ReturnType<typeof collector>
  let receiver: Receiver
  let server: Server
  let ann: TestUser
  let secret: string
  /** The request sent with an unsampled traceparent: the one request whose log line has no trace ids. */
  let unsampledRequestId = ""

  beforeAll(async () => {
    otlp = collector()
    receiver = await startReceiver()
    server = await startServer({
      env: {
        FAST_PATHS: fastPaths,
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "pcs-under-test",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test,team=platform",
        WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
        // Spans are sent 100 ms after they end rather than 1 s, metrics every 500 ms rather than 10 s: the tests
        // wait for them.
        OTEL_BSP_SCHEDULE_DELAY: "100",
        OTEL_METRIC_EXPORT_INTERVAL: "500"
      }
    })
    ann = await server.user({ name: "Ann" })
    const hook = await server.request("/v1/webhooks", {
      method: "POST",
      key: ann.key,
      body: { url: receiver.url("/hook"), events: ["project.created"] }
    })
    secret = hook.body.data.secret
  }, 60_000)

  afterAll(async () => {
    await server?.stop()
    receiver?.stop()
    otlp?.stop()
  }, 20_000)

  describe("OpenTelemetry export", () => {
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    const parentSpanId = "00f067aa0ba902b7"

    test("a POST continues the incoming traceparent: server → service → SQL, and the delivery attempt, in one trace", async () => {
      const res = await server.request("/v1/projects", {
        method: "POST",
        key: ann.key,
        body: { name: "Traced" },
        headers: { traceparent: `00-${traceId}-${parentSpanId}-01` }
      })
      expect(res.status).toBe(201)
      const requestId = res.body.meta.request_id

      const [delivered] = await receiver.waitFor(1, { path: "/hook", timeoutMs: 10_000 })
      const inTrace = () => otlp.spans.filter((s) => s.span.traceId === traceId)
      const serverSpan = await eventually(() => inTrace().find((s) => s.span.name === "POST /v1/projects"))
      expect(serverSpan.span.parentSpanId).toBe(parentSpanId)
      expect(serverSpan.span.kind).toBe(2) // SERVER
      const a = attrs(serverSpan.span.attributes)
      expect(a["http.route"]).toBe("/v1/projects")
      expect(Number(a["http.response.status_code"])).toBe(201)
      expect(a["request.id"]).toBe(requestId)
      expect(serverSpan.resource["service.name"]).toBe("pcs-under-test")
      expect(serverSpan.resource["deployment.environment"]).toBe("test")
      expect(serverSpan.resource.team).toBe("platform")

      // The service method is a child of the server span (through the auth middleware), and SQL sits beneath it.
      const byId = new Map(inTrace().map((s) => [s.span.spanId, s.span]))
      const ancestors = (span: OtlpSpan) => {
        const chain: Array<string> = []
        let parent = span.parentSpanId ? byId.get(span.parentSpanId) : undefined
        while (parent) {
          chain.push(parent.name)
          parent = parent.parentSpanId ? byId.get(parent.parentSpanId) : undefined
        }
        return chain
      }
      const create = await eventually(() => inTrace().find((s) => s.span.name === "Projects.create"))
      expect(ancestors(create.span)).toContain("POST /v1/projects")
      const sqlUnderCreate = await eventually(() =>
        inTrace().find((s) => s.span.name.startsWith("sql.") && ancestors(s.span).includes("Projects.create"))
      )
      expect(sqlUnderCreate).toBeDefined()

      // The attempt joins the request's trace, and the receiver saw a traceparent of that trace.
      const deliver = await eventually(() => inTrace().find((s) => s.span.name === "Webhooks.deliver"))
      const d = attrs(deliver.span.attributes)
      expect(d["webhook.id"]).toMatch(/^whk_/)
      expect(d["delivery.id"]).toBe(delivered!.headers["x-service-delivery"])
      expect(d["event.type"]).toBe("project.created")
      expect(Number(d.attempt)).toBe(1)
      expect(d.outcome).toBe("succeeded")
      expect(Number(d["http.response.status_code"])).toBe(200)
      const received = delivered!.headers.traceparent
      expect(received).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`))
      expect(received!.split("-")[2]).toBe(deliver.span.spanId)
    }, 30_000)

    test("a request without traceparent starts its own trace; health checks are not traced", async () => {
      const res = await server.request("/v1/projects/proj_01jd3xkq8w0000000000000000", { key: ann.key })
      expect(res.status).toBe(404)
      await server.request("/health/live")
      await server.request("/health/ready")
      const span = await eventually(() =>
        otlp.spans.find(
          (s) =>
            s.span.name === "GET /v1/projects/:id" &&
            attrs(s.span.attributes)["request.id"] === res.body.error.request_id
        )
      )
      expect(span.span.parentSpanId ?? "").toBe("")
      expect(Number(attrs(span.span.attributes)["http.response.status_code"])).toBe(404)
      // A request made after the health checks is exported, so by the time it arrives they would have been too.
      const marker = await server.request("/v1/projects?per_page=1", { key: ann.key })
      await eventually(() =>
        otlp.spans.find((s) => attrs(s.span.attributes)["request.id"] === marker.body.meta.request_id)
      )
      expect(otlp.spans.some((s) => s.span.name.includes("/health"))).toBe(false)
    }, 30_000)

    test("an incoming traceparent that is not sampled (flags 00) makes no spans (parent-based sampling)", async () => {
      const unsampled = "5bf92f3577b34da6a3ce929d0e0e4737"
      const res = await server.request("/v1/projects", {
        key: ann.key,
        headers: { traceparent: `00-${unsampled}-00f067aa0ba902b7-00` }
      })
      expect(res.status).toBe(200)
      unsampledRequestId = res.body.meta.request_id
      // A later request is exported, so by the time it arrives the earlier one would have been too.
      const marker = await server.request("/v1/projects?per_page=1", { key: ann.key })
      await eventually(() =>
        otlp.spans.find((s) => attrs(s.span.attributes)["request.id"] === marker.body.meta.request_id)
      )
      expect(otlp.spans.some((s) => s.span.traceId === unsampled)).toBe(false)
      expect(otlp.spans.some((s) => attrs(s.span.attributes)["request.id"] === res.body.meta.request_id)).toBe(false)
    }, 30_000)

    test("metrics arrive: request duration, delivery attempts and lag", async () => {
      await eventually(
        () =>
          ["http.server.request.duration", "webhook.delivery.attempts", "webhook.delivery.lag"].every((name) =>
            otlp.metricNames.has(name)
          )
            ? true
            : undefined,
        { timeoutMs: 20_000, what: "the three metrics" }
      )
    }, 30_000)

    test("no secret reaches the collector: API key, webhook secret, authorization header", async () => {
      const everything = otlp.bodies.join("\n")
      expect(everything.length).toBeGreaterThan(0)
      expect(everything).not.toContain(ann.key)
      expect(everything).not.toContain(secret)
      expect(everything.toLowerCase()).not.toContain("bearer ")
    })

    test("log lines are JSON with request, trace and span ids, and carry no secret", async () => {
      const lines = server.logs.map((line) => JSON.parse(line))
      for (const line of lines) {
        expect(typeof line.level).toBe("string")
        expect(typeof line.message).toBe("string")
      }
      const requests = lines.filter((line) => line.message === "request" && line.request_id !== unsampledRequestId)
      expect(requests.length).toBeGreaterThan(2)
      for (const line of requests) {
        expect(line.request_id).toMatch(/^req_/)
        expect(line.trace_id).toMatch(/^[0-9a-f]{32}$/)
        expect(line.span_id).toMatch(/^[0-9a-f]{16}$/)
      }
      const all = server.logs.join("\n")
      expect(all).not.toContain(ann.key)
      expect(all).not.toContain(secret)
    })
  })
})
