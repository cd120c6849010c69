import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { makeWithCursorLinks, makeWithLinks, nextAfter, refuseWithAfter } from "../Contract/Links.js"
import type { AuditId } from "../Domain/Ids.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import type { AuditListParams } from "./Api.js"
import { Audit } from "./Audit.js"

/** What a cursor page (`after`) refuses: numbered paging and bounds on `created_at`. */
const notWithAfter = ["page", "created_after", "created_before"] as const

type Params = typeof AuditListParams.Type

/** Both logs' query for a cursor page: the records after `after`, with the filters. */
const cursorQuery = (after: AuditId, params: Params) => ({
  after,
  per_page: params.per_page,
  actions: params.action,
  actor_id: params.actor_id
})

/** Both logs' query for a numbered page, newest first. */
const pageQuery = (params: Params) => ({
  page: params.page ?? 1,
  per_page: params.per_page,
  sort: "created_at" as const,
  order: "desc" as const,
  actions: params.action,
  actor_id: params.actor_id,
  created_after: params.created_after,
  created_before: params.created_before
})

export const AuditHttp = HttpApiBuilder.group(Api, "audit", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const withCursorLinks = yield* makeWithCursorLinks
    const audit = yield* Audit
    return handlers
      .handle("teamLog", ({ path, urlParams }) => {
        const after = urlParams.after
        return after === undefined
          ? CurrentPrincipal.pipe(
              Effect.flatMap((me) => audit.teamLog(me, path.team_id, pageQuery(urlParams))),
              Effect.flatMap(withLinks)
            )
          : Effect.zipRight(
              refuseWithAfter(notWithAfter),
              CurrentPrincipal.pipe(
                Effect.flatMap((me) => audit.teamLogAfter(me, path.team_id, cursorQuery(after, urlParams))),
                Effect.flatMap((page) => withCursorLinks(page, nextAfter(page)))
              )
            )
      })
      .handle("myLog", ({ urlParams }) => {
        const after = urlParams.after
        return after === undefined
          ? CurrentPrincipal.pipe(
              Effect.flatMap((me) => audit.myLog(me, pageQuery(urlParams))),
              Effect.flatMap(withLinks)
            )
          : Effect.zipRight(
              refuseWithAfter(notWithAfter),
              CurrentPrincipal.pipe(
                Effect.flatMap((me) => audit.myLogAfter(me, cursorQuery(after, urlParams))),
                Effect.flatMap((page) => withCursorLinks(page, nextAfter(page)))
              )
            )
      })
  })
)
