/**
 * An `HttpServer` with no socket, for measuring an app's own work per request in-process (bench/pipeline.ts): the
 * app is served as `@effect/platform-node`'s server serves it (`HttpApp.toHandled`, each request forked on the
 * server's runtime), but requests come in as web `Request`s and responses go back as web `Response`s.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Context, Effect, Layer, Runtime } from "effect"

/** Sends one request to the app the server serves, and answers its response. */
export type Send = (request: Request) => Promise<Response>

export class MemoryServer extends Context.Tag("bench/MemoryServer")<MemoryServer, { readonly send: Send }>() {}

/** Where one request's response goes: provided to the request's fiber, read when the app answers. */
class Answer extends Context.Tag("bench/MemoryServer/Answer")<Answer, (response: Response) => void>() {}

/** The server and its `send` (which fails until the app is served). */
export const layer: Layer.Layer<HttpServer.HttpServer | MemoryServer> = Layer.effectContext(
  Effect.sync(() => {
    let send: Send = () => Promise.reject(new Error("nothing is served yet"))
    const server = HttpServer.make({
      address: { _tag: "TcpAddress", hostname: "memory", port: 0 },
      serve: (app, middleware) =>
        Effect.gen(function* () {
          const handled = HttpApp.toHandled(
            app,
            (_request, response) => Effect.map(Answer, (answer) => answer(HttpServerResponse.toWeb(response))),
            middleware
          )
          const runFork = Runtime.runFork(yield* Effect.runtime<never>())
          send = (web) =>
            new Promise((resolve) => {
              runFork(
                handled.pipe(
                  Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(web)),
                  Effect.provideService(Answer, resolve)
                )
              )
            })
        })
    })
    return Context.make(HttpServer.HttpServer, server).pipe(Context.add(MemoryServer, { send: (r) => send(r) }))
  })
)
