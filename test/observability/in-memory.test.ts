/**
 * The service runs in this process with a tracer that keeps its spans in memory: the span tree of a
 * `POST /v1/projects` (server → service → SQL) and of the delivery attempt it caused, in one trace that continues
 * the incoming `traceparent`, and no secret in any span attribute.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { ConfigProvider, Effect, Fiber, Layer } from "effect"
import { MainLive } from "../../src/main.ts"
import { LoggingLive } from "../../src/Observability/Logging.ts"
import type { EndedSpan } from "../../src/Observability/OtlpSpan.ts"
import { makeTracer } from "../../src/Observability/Tracer.ts"
import { type Fixtures, fixtures } from "../support/fixtures.ts"
import { eventually, freePort } from "../support/helpers.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { freshDatabaseUrl } from "../support/server.ts"

const spans: Array<EndedSpan> = []
let service: Fiber.RuntimeFiber<never, unknown>
let receiver: Receiver
let base = ""
let apiKey = ""
let webhookSecret = ""
let databaseUrl = ""
let fixture: Fixtures | undefined

beforeAll(async () => {
  databaseUrl = await freshDatabaseUrl()
  const port = freePort()
  base = `http://127.0.0.1:${port}`
  const config = ConfigProvider.fromMap(
    new Map([
      ["PORT", String(port)],
      ["HOST", "127.0.0.1"],
      ["DATABASE_URL", databaseUrl],
      ["WEBHOOK_ALLOW_PRIVATE_TARGETS", "true"],
      ["LOG_LEVEL", "warn"]
    ])
  ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  service = Effect.runFork(
    Layer.launch(MainLive).pipe(
      Effect.provide(Layer.setTracer(makeTracer((span) => spans.push(span)))),
      Effect.provide(LoggingLive),
      Effect.withConfigProvider(config)
    )
  )
  await eventually(async () => (await fetch(`${base}/health/ready`).catch(() => undefined))?.ok || undefined, {
    what: "the in-process server"
  })
  receiver = startReceiver()
  fixture = fixtures(databaseUrl)
  apiKey = (await fixture.user({ email: "traced@example.com", name: "Traced" })).key
  const hook = await fetch(`${base}/v1/webhooks`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: receiver.url("/hook"), events: ["project.created"] })
  })
  webhookSecret = ((await hook.json()) as any).data.secret
}, 60_000)

afterAll(async () => {
  await fixture?.dispose()
  if (service !== undefined) await Effect.runPromise(Fiber.interrupt(service))
  receiver?.stop()
}, 20_000)

const attribute = (span: EndedSpan, key: string) => span.attributes.get(key)

describe("spans in memory", () => {
  const traceId = "0af7651916cd43dd8448eb211c80319c"
  const remoteParent = "b7ad6b7169203331"

  test("POST /v1/projects: server → Projects.create → SQL, and the delivery attempt, in the caller's trace", async () => {
    const response = await fetch(`${base}/v1/projects`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${apiKey}`,
        "content-type": "application/json",
        traceparent: `00-${traceId}-${remoteParent}-01`
      },
      body: JSON.stringify({ name: "In memory" })
    })
    expect(response.status).toBe(201)
    const requestId = ((await response.json()) as any).meta.request_id
    const [delivered] = await receiver.waitFor(1, { path: "/hook", timeoutMs: 10_000 })

    const deliver = await eventually(() => spans.find((s) => s.name === "Webhooks.deliver" && s.traceId === traceId), {
      what: "the delivery attempt's span"
    })
    const trace = spans.filter((s) => s.traceId === traceId)
    const byId = new Map(trace.map((s) => [s.spanId, s]))
    const parentOf = (s: EndedSpan) => (s.parent._tag === "Some" ? byId.get(s.parent.value.spanId) : undefined)
    const ancestors = (s: EndedSpan): Array<string> => {
      const parent = parentOf(s)
      return parent === undefined ? [] : [parent.name, ...ancestors(parent)]
    }

    const server = trace.find((s) => s.name === "POST /v1/projects")!
    expect(server.kind).toBe("server")
    expect(server.parent._tag === "Some" && server.parent.value.spanId).toBe(remoteParent)
    expect(attribute(server, "http.route")).toBe("/v1/projects")
    expect(attribute(server, "http.response.status_code")).toBe(201)
    expect(attribute(server, "request.id")).toBe(requestId)

    const create = trace.find((s) => s.name === "Projects.create")!
    expect(parentOf(create)).toBe(server)
    const insert = trace.find(
      (s) => s.name === "sql.execute" && String(attribute(s, "db.query.text")).includes("INSERT INTO projects")
    )!
    expect(insert.kind).toBe("client")
    expect(ancestors(insert)).toContain("Projects.create")

    expect(ancestors(deliver)).toContain("POST /v1/projects")
    expect(attribute(deliver, "webhook.id")).toMatch(/^whk_/)
    expect(attribute(deliver, "delivery.id")).toBe(delivered!.headers["x-service-delivery"])
    expect(attribute(deliver, "event.type")).toBe("project.created")
    expect(attribute(deliver, "attempt")).toBe(1)
    expect(attribute(deliver, "outcome")).toBe("succeeded")
    expect(attribute(deliver, "http.response.status_code")).toBe(200)
    expect(delivered!.headers.traceparent).toBe(`00-${traceId}-${deliver.spanId}-01`)
  }, 30_000)

  test("no span attribute carries a secret: API key, webhook secret, authorization header", () => {
    expect(spans.length).toBeGreaterThan(10)
    const values = spans.flatMap((s) => [...s.attributes.values()].map(String))
    for (const secret of [apiKey, webhookSecret, "Bearer "]) {
      expect(values.filter((value) => value.includes(secret))).toEqual([])
    }
  })
})
