import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { makeWithCursorLinks, makeWithLinks, nextAfter, refuseWithAfter } from "../Contract/Links.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { Audit } from "./Audit.js"

/** What a cursor page (`after`) refuses: numbered paging and bounds on `created_at`. */
const notWithAfter = ["page", "created_after", "created_before"] as const

export const AuditHttp = HttpApiBuilder.group(Api, "audit", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const withCursorLinks = yield* makeWithCursorLinks
    const audit = yield* Audit
    return handlers
      .handle("teamLog", ({ path, urlParams }) => {
        const after = urlParams.after
        if (after !== undefined) {
          return Effect.zipRight(
            refuseWithAfter(notWithAfter),
            CurrentPrincipal.pipe(
              Effect.flatMap((me) =>
                audit.teamLogAfter(me, path.team_id, {
                  after,
                  per_page: urlParams.per_page,
                  actions: urlParams.action,
                  actor_id: urlParams.actor_id
                })
              ),
              Effect.flatMap((page) => withCursorLinks(page, nextAfter(page)))
            )
          )
        }
        return CurrentPrincipal.pipe(
          Effect.flatMap((me) =>
            audit.teamLog(me, path.team_id, {
              page: urlParams.page ?? 1,
              per_page: urlParams.per_page,
              sort: "created_at",
              order: "desc",
              actions: urlParams.action,
              actor_id: urlParams.actor_id,
              created_after: urlParams.created_after,
              created_before: urlParams.created_before
            })
          ),
          Effect.flatMap(withLinks)
        )
      })
      .handle("myLog", ({ urlParams }) => {
        const after = urlParams.after
        if (after !== undefined) {
          return Effect.zipRight(
            refuseWithAfter(notWithAfter),
            CurrentPrincipal.pipe(
              Effect.flatMap((me) =>
                audit.myLogAfter(me, {
                  after,
                  per_page: urlParams.per_page,
                  actions: urlParams.action,
                  actor_id: urlParams.actor_id
                })
              ),
              Effect.flatMap((page) => withCursorLinks(page, nextAfter(page)))
            )
          )
        }
        return CurrentPrincipal.pipe(
          Effect.flatMap((me) =>
            audit.myLog(me, {
              page: urlParams.page ?? 1,
              per_page: urlParams.per_page,
              sort: "created_at",
              order: "desc",
              actions: urlParams.action,
              actor_id: urlParams.actor_id,
              created_after: urlParams.created_after,
              created_before: urlParams.created_before
            })
          ),
          Effect.flatMap(withLinks)
        )
      })
  })
)
