/**
 * Webhook connections go where they were checked (docs/webhooks.md, "Targets"): each attempt resolves the target's
 * host once, through the injectable `TargetResolver`, checks every address, and connects to a checked one (the
 * others in turn), for `https://` too, with the URL's host name for TLS (SNI and the certificate check).
 *
 * The resolver here answers what DNS would in a rebinding attack: one address for the check, another afterwards. No
 * test sends anything beyond loopback: the address that passes the check is 127.0.0.3 (private targets allowed),
 * where nothing listens, and the rebound one is the receivers' 127.0.0.1; a second resolution would reach them. The
 * TLS receivers listen on loopback with a self-signed certificate made for this test, trusted through
 * `DeliveryTrust` (a test-only layer; no setting reaches it).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer, type Server as HttpsServer } from "node:https"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TLSSocket } from "node:tls"
import { Duration, Effect, Layer } from "effect"
import { type AttemptRequest, attempt, DeliveryTrust } from "../../src/Webhooks/Delivery/Attempt.ts"
import { type Resolver, TargetResolver } from "../../src/Webhooks/Delivery/Targets.ts"
import { eventually, stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"

/** A public address (example.com's), only ever refused with another before any connection: never contacted. */
const PUBLIC = "93.184.215.14"
/** The address the check passes: loopback, where nothing listens (the receivers are bound to 127.0.0.1 only). */
const CHECKED = "127.0.0.3"

interface TlsRequest {
  readonly servername: string | false | null
  readonly host: string | undefined
  readonly path: string
  readonly body: string
}

/** An HTTPS receiver on 127.0.0.1 with the test's certificate: what reached it, and the SNI each came with. */
const startTlsReceiver = async (cert: string, key: string) => {
  const requests: Array<TlsRequest> = []
  const server: HttpsServer = createServer({ cert, key }, (req, res) => {
    let body = ""
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8")
    })
    req.on("end", () => {
      const socket = req.socket as TLSSocket
      requests.push({ servername: socket.servername, host: req.headers.host, path: req.url ?? "", body })
      res.writeHead(200, { "content-type": "text/plain" }).end("tls ok")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    port,
    requests,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** A resolver answering each call with the next of `answers` (the last one again once they run out). */
const scripted = (...answers: ReadonlyArray<ReadonlyArray<string>>) => {
  const calls: Array<string> = []
  const resolver: Resolver = {
    lookup: async (host) => {
      calls.push(host)
      return answers[Math.min(calls.length, answers.length) - 1] ?? []
    }
  }
  return { resolver, calls }
}

let dir: string
let cert: string
let key: string
let tls: Awaited<ReturnType<typeof startTlsReceiver>>
let plain: Receiver

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pinned-targets-"))
  // A self-signed certificate for the names the tests use (never for an address: the name is what is checked).
  const made = Bun.spawnSync([
    "openssl",
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    join(dir, "key.pem"),
    "-out",
    join(dir, "cert.pem"),
    "-days",
    "1",
    "-subj",
    "/CN=hook.test",
    "-addext",
    "subjectAltName=DNS:hook.test,DNS:localhost"
  ])
  if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`)
  cert = readFileSync(join(dir, "cert.pem"), "utf8")
  key = readFileSync(join(dir, "key.pem"), "utf8")
  tls = await startTlsReceiver(cert, key)
  plain = startReceiver()
}, 60_000)
afterAll(async () => {
  await tls?.stop()
  await plain?.stop()
  rmSync(dir, { recursive: true, force: true })
}, 20_000)

const request = (url: string): AttemptRequest => ({
  url,
  secret: "pinned-targets-secret-0123456789",
  previousSecret: null,
  body: JSON.stringify({ id: "evt_1", type: "project.created", created_at: "2026-01-01T00:00:00.000Z", data: {} }),
  eventType: "project.created",
  eventId: "evt_01jd3xkq8w0000000000000000",
  deliveryId: "dlv_01jd3xkq8w0000000000000000"
})

const run = (url: string, resolver: Resolver, options: { readonly allowPrivate?: boolean } = {}) =>
  Effect.runPromise(
    attempt(request(url), {
      timeout: Duration.seconds(2),
      allowPrivate: options.allowPrivate ?? false,
      resolver,
      ca: cert
    })
  )

describe("DNS rebinding: one answer for the check, the receivers' address afterwards", () => {
  test.each([
    ["https", () => `https://localhost:${tls.port}/rebound`, () => tls.requests.length],
    ["http", () => `http://localhost:${new URL(plain.origin).port}/rebound`, () => plain.requests("/rebound").length]
  ] as const)(
    "%s: each attempt resolves once, and none reaches the loopback receiver",
    async (_, url, reached) => {
      const { resolver, calls } = scripted([CHECKED], ["127.0.0.1"])
      const before = reached()
      // The first attempt: checked against the first answer, and connected there (nothing listens: it fails), not
      // to wherever a second resolution of the name would lead (the receiver).
      const first = await run(url(), resolver, { allowPrivate: true })
      expect(first).toMatchObject({ succeeded: false, statusCode: null })
      expect(calls).toEqual(["localhost"])
      expect(reached()).toBe(before)
      // The second, with private targets refused: the answer is loopback now, refused before any connection.
      const second = await run(url(), resolver)
      expect(calls).toEqual(["localhost", "localhost"])
      expect(second).toMatchObject({ succeeded: false, statusCode: null })
      expect(second.error).toBe(
        "refused: localhost resolves to 127.0.0.1, a loopback, private, link-local or reserved address"
      )
      expect(reached()).toBe(before)
    },
    20_000
  )
})

describe("https to the checked address", () => {
  test("the URL's host name goes in SNI and the Host header, and the certificate is checked against it", async () => {
    const { resolver, calls } = scripted(["127.0.0.1"])
    const before = tls.requests.length
    const result = await run(`https://hook.test:${tls.port}/named`, resolver, { allowPrivate: true })
    expect(result).toMatchObject({ succeeded: true, statusCode: 200, responseBody: "tls ok" })
    expect(calls).toEqual(["hook.test"])
    const [received] = tls.requests.slice(before)
    expect(received).toMatchObject({ servername: "hook.test", host: `hook.test:${tls.port}`, path: "/named" })
    expect(received!.body).toBe(request("").body)
  })

  test("a certificate that is not for the URL's host name is refused, though the address is the checked one", async () => {
    const { resolver } = scripted(["127.0.0.1"])
    const before = tls.requests.length
    const result = await run(`https://other.test:${tls.port}/wrong-name`, resolver, { allowPrivate: true })
    expect(result).toMatchObject({ succeeded: false, statusCode: null })
    expect(result.error).toMatch(/^connection failed: .*(ALTNAME|altname|certificate|Hostname)/i)
    expect(tls.requests.length).toBe(before)
  })

  test("without the test's trust, the self-signed certificate is refused (the system's authorities by default)", async () => {
    const { resolver } = scripted(["127.0.0.1"])
    const result = await Effect.runPromise(
      attempt(request(`https://hook.test:${tls.port}/untrusted`), {
        timeout: Duration.seconds(2),
        allowPrivate: true,
        resolver
      })
    )
    expect(result.succeeded).toBe(false)
    expect(result.error).toMatch(/^connection failed: /)
  })
})

describe("every checked address, in turn", () => {
  test.each([
    ["https", () => `https://hook.test:${tls.port}/second`],
    ["http", () => `http://hook.test:${new URL(plain.origin).port}/second`]
  ] as const)("%s: the first refuses the connection, the second answers", async (_, url) => {
    // Nothing listens on 127.0.0.2 (the receivers are bound to 127.0.0.1 only).
    const { resolver, calls } = scripted(["127.0.0.2", "127.0.0.1"])
    const result = await run(url(), resolver, { allowPrivate: true })
    expect(result).toMatchObject({ succeeded: true, statusCode: 200 })
    expect(calls).toHaveLength(1)
  })

  test("with private targets refused, one refused address among the answers refuses the target", async () => {
    const { resolver } = scripted([PUBLIC, "10.0.0.1"])
    const result = await run(`https://hook.test:${tls.port}/mixed`, resolver)
    expect(result.error).toBe(
      "refused: hook.test resolves to 10.0.0.1, a loopback, private, link-local or reserved address"
    )
  })
})

describe("the delivery worker", () => {
  test("delivers over https through the resolver and trust its layers give: to the checked address, with SNI", async () => {
    const { resolver, calls } = scripted(["127.0.0.1"])
    const server = await startInProcess({
      env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_TIMEOUT: "2s", WEBHOOK_POLL_INTERVAL: "100ms" },
      around: Layer.merge(Layer.succeed(TargetResolver, resolver), Layer.succeed(DeliveryTrust, { ca: cert }))
    })
    try {
      const ann = await server.user({ name: "Ann" })
      const before = tls.requests.length
      const hook = await server.request("/v1/webhooks", {
        method: "POST",
        key: ann.key,
        body: { url: `https://hook.test:${tls.port}/worker`, events: ["project.created"] }
      })
      expect(hook.status).toBe(201)
      const project = await server.request("/v1/projects", { method: "POST", key: ann.key, body: { name: "Pinned" } })
      expect(project.status).toBe(201)
      const received = await eventually(() => tls.requests.slice(before).find((r) => r.path === "/worker"), {
        what: "the delivery at the TLS receiver"
      })
      expect(received.servername).toBe("hook.test")
      expect(JSON.parse(received.body).data.id).toBe(project.body.data.id)
      // Registration's check and the attempt's each asked the resolver (no other resolution).
      expect(calls.every((host) => host === "hook.test")).toBe(true)
      expect(calls.length).toBeGreaterThanOrEqual(2)
    } finally {
      await stopWithin(server)
    }
  }, 60_000)
})
