import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { makeWithCursorLinks, makeWithLinks, nextAfter, refuseWithAfter } from "../Contract/Links.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { EventFeed } from "./Feed.js"

/** What a cursor page (`after`) refuses: numbered paging, an order, and bounds on `created_at`. */
const notWithAfter = ["page", "sort", "order", "created_after", "created_before"] as const

export const EventsHttp = HttpApiBuilder.group(Api, "events", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const withCursorLinks = yield* makeWithCursorLinks
    const feed = yield* EventFeed
    return handlers
      .handle("list", ({ urlParams }) => {
        const after = urlParams.after
        if (after !== undefined) {
          return Effect.zipRight(
            refuseWithAfter(notWithAfter),
            CurrentPrincipal.pipe(
              Effect.flatMap((me) =>
                feed.after(me, { after, per_page: urlParams.per_page, types: urlParams.type ?? [] })
              ),
              Effect.flatMap((page) => withCursorLinks(page, nextAfter(page)))
            )
          )
        }
        return CurrentPrincipal.pipe(
          Effect.flatMap((me) =>
            feed.list(me, {
              page: urlParams.page ?? 1,
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
      })
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => feed.get(me, path.id)))
  })
)
