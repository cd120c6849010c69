/**
 * The two `HttpServer` adapters the service can be served through (docs/fast-paths.md, `server-adapter`): the fast
 * one (src/Http/NodeServerFast.ts) and `@effect/platform-node`'s, on plain `node:http` servers in this process. Each
 * body kind and request reader a handler may use answers the same on both; the service's own server behaviour
 * (pipelining, the parser, slow clients, shutdown) is tested over both in test/e2e/hostile.test.ts and platform.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createServer } from "node:http"
import { Readable } from "node:stream"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Deferred, Effect, Exit, Layer, Scope, Stream } from "effect"
import { makeFastNodeServer } from "../../src/Http/NodeServerFast.ts"

const listen = { port: 0, host: "127.0.0.1" }
const ADAPTERS = [
  ["fast", Layer.scoped(HttpServer.HttpServer, makeFastNodeServer(createServer, listen))],
  ["idiomatic", NodeHttpServer.layer(createServer, listen)]
] as const

const text = new TextEncoder()

describe.each(ADAPTERS)("server adapter: %s", (_name, adapter) => {
  let url = ""
  let scope: Scope.CloseableScope
  /** Settled when the request to `/slow` is interrupted (its client went away). */
  const interrupted = Effect.runSync(Deferred.make<true>())
  const slowStarted = Effect.runSync(Deferred.make<true>())

  const app = HttpRouter.empty.pipe(
    HttpRouter.get("/bytes", HttpServerResponse.text("bytes", { headers: { "x-kind": "bytes" } })),
    HttpRouter.get("/empty", HttpServerResponse.empty({ status: 204, headers: { "x-kind": "empty" } })),
    HttpRouter.get("/raw", HttpServerResponse.raw("raw text", { contentType: "text/plain" })),
    HttpRouter.get(
      "/piped",
      Effect.sync(() => HttpServerResponse.raw(Readable.from(["pi", "ped"]), { contentType: "text/plain" }))
    ),
    HttpRouter.get(
      "/stream",
      HttpServerResponse.stream(Stream.make(text.encode("str"), text.encode("eam")), { contentType: "text/plain" })
    ),
    HttpRouter.get(
      "/form",
      Effect.sync(() => {
        const form = new FormData()
        form.append("field", "value")
        return HttpServerResponse.formData(form)
      })
    ),
    HttpRouter.get(
      "/cookie",
      HttpServerResponse.text("cookie").pipe(
        HttpServerResponse.setCookie("session", "abc", { httpOnly: true, path: "/" }),
        Effect.orDie
      )
    ),
    HttpRouter.post(
      "/echo",
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const body = yield* request.json
        return yield* HttpServerResponse.json({
          body,
          method: request.method,
          url: request.url,
          header: request.headers["x-test"] ?? null,
          cookies: request.cookies,
          remote: request.remoteAddress._tag
        })
      })
    ),
    HttpRouter.post(
      "/form-body",
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        Effect.map(request.urlParamsBody, (params) => HttpServerResponse.unsafeJson(params))
      )
    ),
    HttpRouter.get(
      "/slow",
      Deferred.succeed(slowStarted, true).pipe(
        Effect.zipRight(Effect.never),
        Effect.onInterrupt(() => Deferred.succeed(interrupted, true)),
        Effect.as(HttpServerResponse.empty())
      )
    )
  )

  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    const context = await Effect.runPromise(
      Layer.buildWithScope(Layer.merge(HttpServer.serve(app).pipe(Layer.provideMerge(adapter)), adapter), scope)
    )
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") throw new Error("expected a TCP address")
    url = `http://127.0.0.1:${address.port}`
  })
  afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

  test("bytes, with the response's headers", async () => {
    const res = await fetch(`${url}/bytes`)
    expect(res.status).toBe(200)
    expect(res.headers.get("x-kind")).toBe("bytes")
    expect(res.headers.get("content-type")).toStartWith("text/plain")
    expect(await res.text()).toBe("bytes")
  })

  test("HEAD: the headers without the body", async () => {
    const res = await fetch(`${url}/bytes`, { method: "HEAD" })
    expect(res.status).toBe(200)
    expect(res.headers.get("x-kind")).toBe("bytes")
    expect(await res.text()).toBe("")
  })

  test("empty, with its status", async () => {
    const res = await fetch(`${url}/empty`)
    expect(res.status).toBe(204)
    expect(res.headers.get("x-kind")).toBe("empty")
    expect(await res.text()).toBe("")
  })

  test("raw text, a piped stream, an Effect stream, form data", async () => {
    expect(await (await fetch(`${url}/raw`)).text()).toBe("raw text")
    expect(await (await fetch(`${url}/piped`)).text()).toBe("piped")
    expect(await (await fetch(`${url}/stream`)).text()).toBe("stream")
    const form = await fetch(`${url}/form`)
    expect(form.headers.get("content-type")).toStartWith("multipart/form-data; boundary=")
    expect((await form.formData()).get("field")).toBe("value")
  })

  test("cookies set by the response", async () => {
    const res = await fetch(`${url}/cookie`)
    expect(res.headers.getSetCookie()).toEqual(["session=abc; Path=/; HttpOnly"])
  })

  test("the request's method, url, headers, cookies, address and JSON body", async () => {
    const res = await fetch(`${url}/echo?q=1`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-test": "yes", cookie: "a=1; b=2" },
      body: JSON.stringify({ hello: "world" })
    })
    expect(await res.json()).toEqual({
      body: { hello: "world" },
      method: "POST",
      url: "/echo?q=1",
      header: "yes",
      cookies: { a: "1", b: "2" },
      remote: "Some"
    })
  })

  test("a form body", async () => {
    const res = await fetch(`${url}/form-body`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "a=1&b=two"
    })
    expect(await res.json()).toEqual([
      ["a", "1"],
      ["b", "two"]
    ])
  })

  test("a client that goes away interrupts its request", async () => {
    const controller = new AbortController()
    const pending = fetch(`${url}/slow`, { signal: controller.signal }).catch(() => "aborted")
    await Effect.runPromise(Deferred.await(slowStarted))
    controller.abort()
    expect(await pending).toBe("aborted")
    expect(await Effect.runPromise(Deferred.await(interrupted).pipe(Effect.timeout("5 seconds")))).toBe(true)
  })
})
