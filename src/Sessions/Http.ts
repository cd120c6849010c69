/** Handlers of the sessions group (src/Sessions/Api.ts): decode, call the service, return. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { makeWithLinks } from "../Contract/Links.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { Sessions } from "./Sessions.js"

export const SessionsHttp = HttpApiBuilder.group(Api, "sessions", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const sessions = yield* Sessions
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => sessions.list(me, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handle("revoke", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => sessions.revoke(me, path.id)))
      .handle("revokeOthers", () => Effect.flatMap(CurrentPrincipal, (me) => sessions.revokeOthers(me)))
  })
)
