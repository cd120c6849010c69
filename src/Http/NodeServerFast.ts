/**
 * The fast `node:http` adapter (`FAST_PATHS` `server-adapter`; docs/fast-paths.md): the `HttpServer` the service
 * is served by, in place of `@effect/platform-node`'s `NodeHttpServer` (its idiomatic twin). It differs in how an
 * answer is sent, not in what is sent:
 *
 * - A response with its body in memory (empty, bytes, text) is written with one `writeHead` and one `end`, and the
 *   request's fiber ends there. The platform's adapter instead waits, suspended, for `end`'s callback (the bytes
 *   handed to the socket) before the fiber ends: a suspension and a resumption on every request. Nothing the
 *   service does after the response needs it written: the access line, the metric and the in-flight count are
 *   settled before it is sent, and the server's close waits for open connections itself.
 * - A streamed body (`Stream`, a piped `Raw`) is written as the platform writes it, waiting for the socket; form
 *   data is encoded whole first.
 * - A client that goes away before its answer interrupts the request, as with the platform's adapter.
 *
 * Everything else (the request object's body readers, time-outs, duplicate headers, `SettlingResponse`) is the
 * platform's or src/Http/NodeServer.ts's.
 */

import type * as Http from "node:http"
import type * as Net from "node:net"
import { pipeline } from "node:stream/promises"
import * as Cookies from "@effect/platform/Cookies"
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as Headers from "@effect/platform/Headers"
import * as HttpApp from "@effect/platform/HttpApp"
import * as IncomingMessage from "@effect/platform/HttpIncomingMessage"
import type { HttpMethod } from "@effect/platform/HttpMethod"
import type * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type * as Multipart from "@effect/platform/Multipart"
import type * as Path from "@effect/platform/Path"
import type * as Socket from "@effect/platform/Socket"
import * as UrlParams from "@effect/platform/UrlParams"
import * as NodeMultipart from "@effect/platform-node/NodeMultipart"
import * as NodeStream from "@effect/platform-node/NodeStream"
import { Cause, Chunk, Effect, Inspectable, Option, Runtime, type Scope, Stream } from "effect"

/** The request as the app sees it: `node:http`'s message, read lazily. */
class NodeRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest {
  readonly [IncomingMessage.TypeId]: IncomingMessage.TypeId = IncomingMessage.TypeId
  readonly [HttpServerRequest.TypeId]: HttpServerRequest.TypeId = HttpServerRequest.TypeId

  constructor(
    readonly source: Http.IncomingMessage,
    readonly response: Http.ServerResponse,
    readonly url: string,
    private readonly headersOverride: Headers.Headers | undefined,
    private readonly remoteAddressOverride: string | undefined
  ) {
    super()
  }

  private readonly onError = (cause: unknown) =>
    new HttpServerError.RequestError({ request: this, reason: "Decode", cause })

  get originalUrl(): string {
    return this.source.url ?? "/"
  }

  get method(): HttpMethod {
    return (this.source.method ?? "GET").toUpperCase() as HttpMethod
  }

  get headers(): Headers.Headers {
    return this.headersOverride ?? (this.source.headers as Headers.Headers)
  }

  get remoteAddress(): Option.Option<string> {
    return Option.fromNullable(this.remoteAddressOverride ?? this.source.socket.remoteAddress)
  }

  private cookiesCache: Record<string, string> | undefined
  get cookies(): Record<string, string> {
    this.cookiesCache ??= Cookies.parseHeader(this.headers.cookie ?? "")
    return this.cookiesCache
  }

  modify(options: {
    readonly url?: string
    readonly headers?: Headers.Headers
    readonly remoteAddress?: string
  }): HttpServerRequest.HttpServerRequest {
    return new NodeRequest(
      this.source,
      this.response,
      options.url ?? this.url,
      options.headers ?? this.headersOverride,
      options.remoteAddress ?? this.remoteAddressOverride
    )
  }

  private textCache: Effect.Effect<string, HttpServerError.RequestError> | undefined
  get text(): Effect.Effect<string, HttpServerError.RequestError> {
    this.textCache ??= Effect.runSync(
      Effect.cached(
        Effect.flatMap(IncomingMessage.MaxBodySize, (maxBytes) =>
          NodeStream.toString(() => this.source, { onFailure: this.onError, maxBytes: Option.getOrUndefined(maxBytes) })
        )
      )
    )
    return this.textCache
  }

  get json(): Effect.Effect<unknown, HttpServerError.RequestError> {
    return Effect.tryMap(this.text, {
      try: (text) => (text === "" ? null : (JSON.parse(text) as unknown)),
      catch: this.onError
    })
  }

  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpServerError.RequestError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({ try: () => UrlParams.fromInput(new URLSearchParams(text)), catch: this.onError })
    )
  }

  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpServerError.RequestError> {
    return Effect.flatMap(IncomingMessage.MaxBodySize, (maxBytes) =>
      NodeStream.toUint8Array(() => this.source, { onFailure: this.onError, maxBytes: Option.getOrUndefined(maxBytes) })
    ).pipe(Effect.map((bytes) => bytes.slice().buffer))
  }

  get stream(): Stream.Stream<Uint8Array, HttpServerError.RequestError> {
    return NodeStream.fromReadable<HttpServerError.RequestError, Uint8Array>(() => this.source, this.onError)
  }

  private multipartCache:
    | Effect.Effect<Multipart.Persisted, Multipart.MultipartError, Scope.Scope | FileSystem.FileSystem | Path.Path>
    | undefined
  get multipart(): Effect.Effect<
    Multipart.Persisted,
    Multipart.MultipartError,
    Scope.Scope | FileSystem.FileSystem | Path.Path
  > {
    this.multipartCache ??= Effect.runSync(Effect.cached(NodeMultipart.persisted(this.source, this.source.headers)))
    return this.multipartCache
  }

  get multipartStream(): Stream.Stream<Multipart.Part, Multipart.MultipartError> {
    return NodeMultipart.stream(this.source, this.source.headers)
  }

  get upgrade(): Effect.Effect<Socket.Socket, HttpServerError.RequestError> {
    return Effect.fail(
      new HttpServerError.RequestError({ request: this, reason: "Decode", description: "the server takes no upgrades" })
    )
  }

  override toString(): string {
    return `ServerRequest(${this.method} ${this.url})`
  }

  toJSON(): unknown {
    return IncomingMessage.inspect(this, {
      _id: "@effect/platform/HttpServerRequest",
      method: this.method,
      url: this.originalUrl
    })
  }
}

const headersOf = (response: HttpServerResponse.HttpServerResponse): Http.OutgoingHttpHeaders => {
  if (Cookies.isEmpty(response.cookies)) return response.headers
  const cookies = Cookies.toSetCookieHeaders(response.cookies)
  const given = response.headers["set-cookie"]
  return { ...response.headers, "set-cookie": given === undefined ? cookies : [...cookies, given] }
}

/** After a streamed body failed: end the response as the platform does, and fail with the cause. */
const failStreamed =
  (nodeResponse: Http.ServerResponse, original: HttpServerResponse.HttpServerResponse) =>
  <E>(cause: Cause.Cause<E>) =>
    Effect.flatMap(HttpServerError.causeResponse(cause), ([response, mapped]) => {
      const headersSent = nodeResponse.headersSent
      if (!headersSent) nodeResponse.writeHead(response.status)
      if (!nodeResponse.writableEnded) nodeResponse.end()
      return Effect.failCause(headersSent ? Cause.sequential(cause, Cause.die(original)) : mapped)
    })

/** A body streamed from `source`, waiting for the socket, ending the response when it ends. */
const piped = (
  request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse,
  nodeResponse: Http.ServerResponse,
  source: NodeJS.ReadableStream
) =>
  Effect.tryPromise({
    try: (signal) => pipeline(source, nodeResponse, { signal, end: true }),
    catch: (cause) => new HttpServerError.ResponseError({ request, response, reason: "Decode", cause })
  }).pipe(Effect.interruptible, Effect.tapErrorCause(failStreamed(nodeResponse, response)))

const send = (
  request: HttpServerRequest.HttpServerRequest,
  response: HttpServerResponse.HttpServerResponse
): Effect.Effect<void, HttpServerError.ResponseError> => {
  const nodeResponse = (request as NodeRequest).response
  if (nodeResponse.writableEnded) return Effect.void
  const body = response.body
  if (request.method === "HEAD" || body._tag === "Empty") {
    nodeResponse.writeHead(response.status, headersOf(response))
    nodeResponse.end()
    return Effect.void
  }
  switch (body._tag) {
    case "Uint8Array": {
      nodeResponse.writeHead(response.status, headersOf(response))
      nodeResponse.end(body.body)
      return Effect.void
    }
    case "Raw": {
      const raw = body.body
      nodeResponse.writeHead(response.status, headersOf(response))
      if (typeof raw === "object" && raw !== null && "pipe" in raw && typeof raw.pipe === "function") {
        return piped(request, response, nodeResponse, raw as NodeJS.ReadableStream)
      }
      nodeResponse.end(raw)
      return Effect.void
    }
    case "Stream": {
      nodeResponse.writeHead(response.status, headersOf(response))
      const drained = Effect.unsafeMakeLatch()
      nodeResponse.on("drain", () => drained.unsafeOpen())
      return body.stream.pipe(
        Stream.orDie,
        Stream.runForEachChunk((chunk) => {
          let full = false
          for (const part of Chunk.toReadonlyArray(chunk)) full = !nodeResponse.write(part)
          if (!full) return Effect.void
          drained.unsafeClose()
          return drained.await
        }),
        Effect.interruptible,
        Effect.matchCauseEffect({
          onSuccess: () => Effect.sync(() => nodeResponse.end()),
          onFailure: failStreamed(nodeResponse, response)
        })
      )
    }
    case "FormData": {
      // Encoded by the runtime's `Response`, whose `content-type` carries the multipart boundary (Bun forgets it
      // once the body is read, so it is read first).
      const encoded = new Response(body.formData)
      const type = encoded.headers.get("content-type")
      return Effect.tryPromise({
        try: () => encoded.arrayBuffer(),
        catch: (cause) => new HttpServerError.ResponseError({ request, response, reason: "Decode", cause })
      }).pipe(
        Effect.flatMap((bytes) => {
          nodeResponse.writeHead(response.status, {
            ...headersOf(response),
            ...(type === null ? {} : { "content-type": type })
          })
          nodeResponse.end(new Uint8Array(bytes))
          return Effect.void
        })
      )
    }
  }
}

/** The server on `evaluate()`'s `node:http` server, listening on `options`, closed with its scope. */
export const makeFastNodeServer = (
  evaluate: () => Http.Server,
  options: Net.ListenOptions
): Effect.Effect<HttpServer.HttpServer, HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function* () {
    const server = yield* Effect.acquireRelease(Effect.sync(evaluate), (server) =>
      Effect.async<void>((resume) => {
        if (!server.listening) return resume(Effect.void)
        server.close((error) => resume(error ? Effect.die(error) : Effect.void))
      })
    )
    yield* Effect.async<void, HttpServerError.ServeError>((resume) => {
      const onError = (cause: Error) => resume(Effect.fail(new HttpServerError.ServeError({ cause })))
      server.on("error", onError)
      server.listen(options, () => {
        server.off("error", onError)
        resume(Effect.void)
      })
    })
    const address = server.address()
    return HttpServer.make({
      address:
        typeof address === "string" || address === null
          ? { _tag: "UnixAddress", path: String(address) }
          : {
              _tag: "TcpAddress",
              hostname: address.address === "::" ? "0.0.0.0" : address.address,
              port: address.port
            },
      serve: (app, middleware) =>
        Effect.gen(function* () {
          const handled = HttpApp.toHandled(app, send, middleware as HttpMiddleware.HttpMiddleware | undefined)
          const runFork = Runtime.runFork(yield* Effect.runtime<never>())
          const handler = (nodeRequest: Http.IncomingMessage, nodeResponse: Http.ServerResponse) => {
            const request = new NodeRequest(nodeRequest, nodeResponse, nodeRequest.url ?? "/", undefined, undefined)
            const fiber = runFork(Effect.provideService(handled, HttpServerRequest.HttpServerRequest, request))
            nodeResponse.on("close", () => {
              if (!nodeResponse.writableEnded) fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
            })
          }
          yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", handler)))
          server.on("request", handler)
        })
    })
  })
