import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { List, Success } from "../Contract/Envelope.js"
import { withBodyErrors, withParamErrors } from "../Contract/Errors.js"
import { IdempotencyKeyHeader } from "../Contract/Idempotency.js"
import { listParams } from "../Contract/ListParams.js"
import { strictBody } from "../Contract/Payload.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { ApiErrors } from "../Domain/Errors.js"
import { DeliveryId, EventId, WebhookId } from "../Domain/Ids.js"
import { optional } from "../Domain/Payload.js"
import {
  CreatedWebhook,
  Delivery,
  DeliveryEventType,
  DeliveryWithAttempts,
  EventDelivery,
  NewWebhook,
  Recovered,
  Recovery,
  RotatedWebhook,
  SecretRotation,
  Webhook,
  WebhookPatch,
  WebhookWithHealth
} from "../Domain/Webhook.js"

export const CreateWebhook = strictBody(NewWebhook.fields, "CreateWebhook", {
  example: { url: "https://example.com/hooks", events: ["project.created", "deployment.completed"] }
})
export const UpdateWebhook = strictBody(WebhookPatch.fields, "UpdateWebhook", {
  nonEmpty: true,
  example: { events: ["project.created"] }
})

export const WebhookListParams = listParams({ sort: ["created_at", "updated_at"], status: ["active", "failed"] })
export const DeliveryListParams = Schema.Struct({
  ...listParams({ sort: ["created_at"], status: ["pending", "delivered", "failed"] }).fields,
  event_type: optional(DeliveryEventType)
})
/** An event's deliveries: paged, newest first, filtered by status or by the webhook's URL (`search`). */
export const EventDeliveryListParams = listParams({ sort: ["created_at"], status: ["pending", "delivered", "failed"] })
export const RotateSecret = strictBody(SecretRotation.fields, "RotateSecret")
/** `{}`: an empty struct would take any object, so a field in it is refused here by name. */
export const TestWebhook = Schema.Struct({})
  // Documented as what it takes: an object with no field (the empty struct alone would also admit an array).
  .annotations({ jsonSchema: { type: "object", properties: {}, additionalProperties: false } })
  .pipe(
    Schema.filter(
      (body) => {
        const [field] = Object.keys(body)
        return field === undefined || { path: [field], message: "is not allowed (unknown or read-only field)" }
      },
      { identifier: "TestWebhook" }
    )
  )
export const RecoverDeliveries = strictBody(Recovery.fields, "RecoverDeliveries", {
  example: { since: "2026-01-31T12:00:00Z" }
})

const id = HttpApiSchema.param("id", WebhookId)
const deliveryId = HttpApiSchema.param("delivery_id", DeliveryId)
const eventId = HttpApiSchema.param("event_id", EventId)

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .annotate(
    OpenApi.Description,
    "Webhooks: endpoints that receive signed event deliveries, their delivery logs, tests, retries and recovery"
  )
  .add(
    HttpApiEndpoint.get("list", "/webhooks")
      .setUrlParams(WebhookListParams)
      .addSuccess(List(WebhookWithHealth))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(
        OpenApi.Summary,
        "List your webhooks, each with its health: the latest attempt and the last 24 hours' share of successes"
      )
  )
  .add(
    HttpApiEndpoint.post("create", "/webhooks")
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateWebhook)
      .addSuccess(Success(CreatedWebhook), { status: 201 })
      .pipe(withBodyErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Register an endpoint for event deliveries")
  )
  .add(
    HttpApiEndpoint.get("get")`/webhooks/${id}`
      .addSuccess(Success(Webhook))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "Read a webhook")
  )
  .add(
    HttpApiEndpoint.put("update")`/webhooks/${id}`
      .setPayload(UpdateWebhook)
      .addSuccess(Success(Webhook))
      .pipe(withBodyErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Change a webhook's url, events or secret, or set a failed one active again")
  )
  .add(
    HttpApiEndpoint.del("delete")`/webhooks/${id}`
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Delete a webhook and its delivery log")
  )
  .add(
    HttpApiEndpoint.get("deliveries")`/webhooks/${id}/deliveries`
      .setUrlParams(DeliveryListParams)
      .addSuccess(List(Delivery))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "The delivery log of a webhook")
  )
  .add(
    HttpApiEndpoint.get("delivery")`/webhooks/${id}/deliveries/${deliveryId}`
      .addSuccess(Success(DeliveryWithAttempts))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "One delivery with every attempt")
  )
  .add(
    HttpApiEndpoint.get("eventDeliveries")`/events/${eventId}/deliveries`
      .setUrlParams(EventDeliveryListParams)
      .addSuccess(List(EventDelivery))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(
        OpenApi.Summary,
        "The deliveries of an event to your webhooks, each with its webhook's URL; 404 unless you are in the event's audience"
      )
  )
  .add(
    HttpApiEndpoint.post("retry")`/webhooks/${id}/deliveries/${deliveryId}/retry`
      .setHeaders(IdempotencyKeyHeader)
      .addSuccess(Success(Delivery), { status: 202 })
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(
        OpenApi.Summary,
        "Retry a delivery now: one extra attempt outside the schedule, any status (the dashboard's Redeliver)"
      )
  )
  .add(
    HttpApiEndpoint.post("rotateSecret")`/webhooks/${id}/rotate-secret`
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(RotateSecret)
      .addSuccess(Success(RotatedWebhook))
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(
        OpenApi.Summary,
        "Change the signing secret without downtime: the old one still signs until previous_secret_expires_at"
      )
  )
  .add(
    HttpApiEndpoint.post("test")`/webhooks/${id}/test`
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(TestWebhook)
      .addSuccess(Success(Delivery), { status: 202 })
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Send a webhook.test event to this webhook only")
  )
  .add(
    HttpApiEndpoint.post("recover")`/webhooks/${id}/recover`
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(RecoverDeliveries)
      .addSuccess(Success(Recovered), { status: 202 })
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "One manual attempt now for each failed delivery of events created in [since, until)")
  )
  .middleware(Authentication) {}
