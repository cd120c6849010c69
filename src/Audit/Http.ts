import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { makeWithLinks } from "../Contract/Links.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { Audit } from "./Audit.js"

export const AuditHttp = HttpApiBuilder.group(Api, "audit", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const audit = yield* Audit
    return handlers
      .handle("teamLog", ({ path, urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) =>
            audit.teamLog(me, path.team_id, {
              page: urlParams.page,
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
      )
      .handle("myLog", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) =>
            audit.myLog(me, {
              page: urlParams.page,
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
      )
  })
)
