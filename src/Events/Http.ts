import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { makeWithLinks } from "../Contract/Links.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { EventFeed } from "./Feed.js"

export const EventsHttp = HttpApiBuilder.group(Api, "events", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const feed = yield* EventFeed
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) =>
            feed.list(me, {
              page: urlParams.page,
              per_page: urlParams.per_page,
              sort: "created_at",
              order: "desc",
              types: urlParams.type,
              created_after: urlParams.created_after,
              created_before: urlParams.created_before
            })
          ),
          Effect.flatMap(withLinks)
        )
      )
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => feed.get(me, path.id)))
  })
)
