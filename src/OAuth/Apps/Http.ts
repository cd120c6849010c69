/** Handlers of the self-service OAuth groups (src/OAuth/Api.ts): decode, call the service, return. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../../Api.js"
import { Idempotent } from "../../Contract/Idempotency.js"
import { makeWithLinks } from "../../Contract/Links.js"
import { decodePayload } from "../../Contract/Request.js"
import { CurrentPrincipal } from "../../Domain/Principal.js"
import { CreateOAuthClient, UpdateOAuthClient } from "../Api.js"
import { OAuthClients } from "../Clients.js"
import { OAuthGrants } from "../Grants.js"

export const OAuthClientsHttp = HttpApiBuilder.group(Api, "oauthClients", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const clients = yield* OAuthClients
    const idempotent = yield* Idempotent
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => clients.list(me, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handleRaw("create", ({ request }) =>
        idempotent.withPayload(
          request,
          CreateOAuthClient,
          (payload) => Effect.flatMap(CurrentPrincipal, (me) => clients.register(me, payload)),
          () => Effect.flatMap(CurrentPrincipal, clients.mayManage)
        )
      )
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => clients.get(me, path.id)))
      .handleRaw("update", ({ path }) =>
        Effect.flatMap(decodePayload(UpdateOAuthClient), (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => clients.update(me, path.id, payload))
        )
      )
      .handle("delete", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => clients.delete(me, path.id)))
      .handleRaw("rotateSecret", ({ path, request }) =>
        idempotent.action(
          request,
          Effect.flatMap(CurrentPrincipal, (me) => clients.rotateOwned(me, path.id)),
          Effect.flatMap(CurrentPrincipal, clients.mayManage)
        )
      )
  })
)

export const AuthorizationsHttp = HttpApiBuilder.group(Api, "authorizations", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const grants = yield* OAuthGrants
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => grants.list(me, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handle("revoke", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => grants.revoke(me, path.id)))
  })
)
