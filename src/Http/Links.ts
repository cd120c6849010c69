import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { ServerConfig } from "../Config.js"
import type { Page } from "../Domain/Envelope.js"
import { linkHeader } from "../Domain/Lists.js"

/** A `Host` header this server can put in a URL: a name or IPv4 address, or a bracketed IPv6 one, and a port. */
const USABLE_HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/

/**
 * Where links point: `BASE_URL` when set, else the scheme and host the client used; none (links relative to the
 * request, as RFC 8288 allows) when the `Host` header is missing or is not a host name, so no client-given text
 * that is not a host ever reaches URL building.
 */
const baseUrlOf = (request: HttpServerRequest.HttpServerRequest, configured: Option.Option<URL>): string | undefined =>
  Option.match(configured, {
    onSome: (url) => url.toString(),
    onNone: () => {
      const host = request.headers["host"]
      if (host === undefined || !USABLE_HOST.test(host)) return undefined
      const proto = request.headers["x-forwarded-proto"] === "https" ? "https" : "http"
      const base = `${proto}://${host}`
      return URL.canParse(base) ? base : undefined
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
