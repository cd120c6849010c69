import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Idempotent } from "../Contract/Idempotency.js"
import { makeWithLinks } from "../Contract/Links.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { CreateApiKey } from "./Api.js"
import { ApiKeys } from "./ApiKeys.js"

export const ApiKeysHttp = HttpApiBuilder.group(Api, "apiKeys", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const keys = yield* ApiKeys
    const idempotent = yield* Idempotent
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => keys.list(me, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handleRaw("create", ({ request }) =>
        idempotent.withPayload(
          request,
          CreateApiKey,
          (payload) => Effect.flatMap(CurrentPrincipal, (me) => keys.create(me, payload)),
          (payload) => Effect.flatMap(CurrentPrincipal, (me) => keys.mayCreate(me, payload))
        )
      )
      .handle("revoke", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => keys.revoke(me, path.id)))
  })
)
