import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { ServerConfig } from "../Config.js"
import type { Page } from "../Domain/Envelope.js"
import { linkHeader } from "../Domain/Lists.js"

/** Where links point: `BASE_URL` when set, else the scheme and host the client used. */
const baseUrlOf = (request: HttpServerRequest.HttpServerRequest, configured: Option.Option<URL>) =>
  Option.match(configured, {
    onSome: (url) => url.toString(),
    onNone: () => {
      const proto = request.headers["x-forwarded-proto"] === "https" ? "https" : "http"
      return `${proto}://${request.headers["host"] ?? "localhost"}`
    }
  })

/** Adds the GitHub-style `Link` header for a page to the response being built, and answers the page. */
export const withLinks = <A>(page: Page<A>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { baseUrl } = yield* Effect.orDie(ServerConfig)
    const link = linkHeader(request, baseUrlOf(request, baseUrl), page)
    yield* HttpApp.appendPreResponseHandler((_request, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, "link", link))
    )
    return page
  })
