import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Api.js"
import { RequiredScopes } from "../Auth/Principal.js"
import { List, Success } from "../Domain/Envelope.js"
import { DeliveryId, EventId, WebhookId } from "../Domain/Ids.js"
import { listParams, oneOf } from "../Domain/Lists.js"
import { HttpUrl, optional, strictBody } from "../Domain/Payload.js"
import { Timestamp } from "../Domain/Time.js"
import { EventType } from "../Events/EventTypes.js"

export const WebhookStatus = oneOf("active", "failed")
export const DeliveryStatus = oneOf("pending", "delivered", "failed")

export const Webhook = Schema.Struct({
  id: WebhookId,
  url: Schema.String,
  events: Schema.Array(EventType),
  status: WebhookStatus,
  created_at: Timestamp,
  updated_at: Timestamp,
  failed_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "Webhook" })
export type Webhook = typeof Webhook.Type

export const CreatedWebhook = Schema.Struct({
  ...Webhook.fields,
  secret: optional(Schema.String.annotations({
    description: "Only when the service generated the secret (`whsec_…`): shown this once"
  }))
}).annotations({ identifier: "CreatedWebhook" })
export type CreatedWebhook = typeof CreatedWebhook.Type

export const WebhookUrl = HttpUrl.pipe(
  Schema.filter((value) => {
    const url = new URL(value)
    return url.username === "" && url.password === "" || "must not carry credentials"
  })
)
export const WebhookEvents = Schema.Array(EventType).pipe(
  Schema.minItems(1, { message: () => "must name at least one event type" })
)
export const WebhookSecret = Schema.String.pipe(
  Schema.minLength(16, { message: () => "must be at least 16 characters" }),
  Schema.maxLength(256, { message: () => "must be at most 256 characters" })
)

export const CreateWebhook = strictBody({
  url: WebhookUrl,
  events: WebhookEvents,
  secret: optional(WebhookSecret)
}, "CreateWebhook")
export type CreateWebhook = typeof CreateWebhook.Type

export const UpdateWebhook = strictBody({
  url: optional(WebhookUrl),
  events: optional(WebhookEvents),
  secret: optional(WebhookSecret),
  status: optional(Schema.Literal("active").annotations({ message: () => "can only be set to active" }))
}, "UpdateWebhook", { nonEmpty: true })
export type UpdateWebhook = typeof UpdateWebhook.Type

export const Delivery = Schema.Struct({
  id: DeliveryId,
  webhook_id: WebhookId,
  event_id: EventId,
  event_type: EventType,
  status: DeliveryStatus,
  attempt_count: Schema.Int,
  next_attempt_at: Schema.NullOr(Timestamp),
  last_attempt_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
}).annotations({ identifier: "Delivery" })
export type Delivery = typeof Delivery.Type

export const Attempt = Schema.Struct({
  number: Schema.Int,
  attempted_at: Timestamp,
  duration_ms: Schema.Int,
  status_code: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  response_body: Schema.NullOr(Schema.String),
  outcome: oneOf("succeeded", "failed")
}).annotations({ identifier: "DeliveryAttempt" })
export type Attempt = typeof Attempt.Type

export const DeliveryWithAttempts = Schema.Struct({
  ...Delivery.fields,
  attempts: Schema.Array(Attempt)
}).annotations({ identifier: "DeliveryWithAttempts" })
export type DeliveryWithAttempts = typeof DeliveryWithAttempts.Type

export const WebhookListParams = listParams({ sort: ["created_at", "updated_at"], status: ["active", "failed"] })
export const DeliveryListParams = listParams({ sort: ["created_at"], status: ["pending", "delivered", "failed"] })

const id = HttpApiSchema.param("id", WebhookId)
const deliveryId = HttpApiSchema.param("delivery_id", DeliveryId)

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.get("list", "/webhooks")
      .setUrlParams(WebhookListParams)
      .addSuccess(List(Webhook))
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "List your webhooks")
  )
  .add(
    HttpApiEndpoint.post("create", "/webhooks")
      .setPayload(CreateWebhook)
      .addSuccess(Success(CreatedWebhook), { status: 201 })
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Register an endpoint for event deliveries")
  )
  .add(
    HttpApiEndpoint.get("get")`/webhooks/${id}`
      .addSuccess(Success(Webhook))
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "Read a webhook")
  )
  .add(
    HttpApiEndpoint.put("update")`/webhooks/${id}`
      .setPayload(UpdateWebhook)
      .addSuccess(Success(Webhook))
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Change a webhook's url, events or secret, or set a failed one active again")
  )
  .add(
    HttpApiEndpoint.del("delete")`/webhooks/${id}`
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Delete a webhook and its delivery log")
  )
  .add(
    HttpApiEndpoint.get("deliveries")`/webhooks/${id}/deliveries`
      .setUrlParams(DeliveryListParams)
      .addSuccess(List(Delivery))
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "The delivery log of a webhook")
  )
  .add(
    HttpApiEndpoint.get("delivery")`/webhooks/${id}/deliveries/${deliveryId}`
      .addSuccess(Success(DeliveryWithAttempts))
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "One delivery with every attempt")
  )
  .add(
    HttpApiEndpoint.post("retry")`/webhooks/${id}/deliveries/${deliveryId}/retry`
      .addSuccess(Success(Delivery), { status: 202 })
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Retry a delivery now: one immediate attempt (the dashboard's retry button)")
  )
  .middleware(Authentication)
{}
