import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { Idempotent } from "../Contract/Idempotency.js"
import { makeWithLinks } from "../Contract/Links.js"
import { decodePayload } from "../Contract/Request.js"
import { CurrentPrincipal } from "../Domain/Principal.js"
import { CreateWebhook, RecoverDeliveries, RotateSecret, TestWebhook, UpdateWebhook } from "./Api.js"
import { Webhooks } from "./Webhooks.js"

export const WebhooksHttp = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function* () {
    const withLinks = yield* makeWithLinks
    const webhooks = yield* Webhooks
    const idempotent = yield* Idempotent
    return handlers
      .handle("list", ({ urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => webhooks.list(me, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handleRaw("create", ({ request }) =>
        idempotent.withPayload(request, CreateWebhook, (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => webhooks.create(me, payload))
        )
      )
      .handle("get", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => webhooks.get(me, path.id)))
      .handleRaw("update", ({ path }) =>
        Effect.flatMap(decodePayload(UpdateWebhook), (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => webhooks.update(me, path.id, payload))
        )
      )
      .handle("delete", ({ path }) => Effect.flatMap(CurrentPrincipal, (me) => webhooks.remove(me, path.id)))
      .handle("deliveries", ({ path, urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => webhooks.deliveries(me, path.id, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handle("eventDeliveries", ({ path, urlParams }) =>
        CurrentPrincipal.pipe(
          Effect.flatMap((me) => webhooks.eventDeliveries(me, path.event_id, urlParams)),
          Effect.flatMap(withLinks)
        )
      )
      .handle("delivery", ({ path }) =>
        Effect.flatMap(CurrentPrincipal, (me) => webhooks.delivery(me, path.id, path.delivery_id))
      )
      .handleRaw("retry", ({ path, request }) =>
        idempotent.action(
          request,
          Effect.flatMap(CurrentPrincipal, (me) => webhooks.retry(me, path.id, path.delivery_id))
        )
      )
      .handleRaw("rotateSecret", ({ path, request }) =>
        idempotent.withPayload(request, RotateSecret, (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => webhooks.rotateSecret(me, path.id, payload))
        )
      )
      .handleRaw("test", ({ path, request }) =>
        idempotent.withPayload(request, TestWebhook, () =>
          Effect.flatMap(CurrentPrincipal, (me) => webhooks.test(me, path.id))
        )
      )
      .handleRaw("recover", ({ path, request }) =>
        idempotent.withPayload(request, RecoverDeliveries, (payload) =>
          Effect.flatMap(CurrentPrincipal, (me) => webhooks.recover(me, path.id, payload))
        )
      )
  })
)
