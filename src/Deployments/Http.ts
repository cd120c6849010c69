import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Idempotent } from "../Contract/Idempotency.js"
import { makeWithLinks } from "../Contract/Links.js"
import { decodePayload } from "../Contract/Request.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { CreateDeployment, UpdateDeployment } from "./Api.js"
import { Deployments } from "./Deployments.js"

export const DeploymentsHttp = HttpApiBuilder.group(Api, "deployments", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const deployments = yield* Deployments
    const idempotent = yield* Idempotent
    return handlers
      .handle("list", ({ path, urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => deployments.list(me, path.id, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handleRaw("create", ({ path, request }) =>
        idempotent.withPayload(request, CreateDeployment, (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => deployments.create(me, path.id, payload))
        )
      )
      .handle("get", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (me) => deployments.get(me, path.id, path.deployment_id))
      )
      .handleRaw("update", ({ path }) =>
        Effect.flatMap(decodePayload(UpdateDeployment), (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => deployments.finish(me, path.id, path.deployment_id, payload))
        )
      )
  })
)
