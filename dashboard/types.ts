/**
 * The records the dashboard reads, as the contract describes them: the schemas of the service's OpenAPI document,
 * generated into `generated/api.ts` (`bun run generate:dashboard-types`; CI checks it is current). Nothing here is
 * written by hand but the names, and the lists the dashboard offers as checkboxes, which the checker holds to the
 * contract's (every member, no other) and test/dashboard/generated-types.test.ts to its order.
 */
import {
  scopeNames,
  auditActions as serviceAuditActions,
  eventTypes as serviceEventTypes
} from "../src/Domain/Vocabulary.ts"
import type { components, paths } from "./generated/api.ts"

type Schemas = components["schemas"]

/** A list page's `meta` (every list answers the same). */
export type ListMeta = paths["/v1/projects"]["get"]["responses"][200]["content"]["application/json"]["meta"]

export interface Page<T> {
  readonly data: ReadonlyArray<T>
  readonly meta: ListMeta
}

export type User = Schemas["User"]
export type Project = Schemas["Project"]
export type Visibility = Project["visibility"]
export type Deployment = Schemas["Deployment"]
export type DeploymentStatus = Deployment["status"]
/** A team as a single read answers it: with the caller's `role`. */
export type Team = Schemas["Team"]
export type Member = Schemas["TeamMember"]
export type Role = Member["role"]
export type Invitation = Schemas["Invitation"]
export type InvitationStatus = Invitation["status"]
export type Scope = Schemas["Scope"]
export type ApiKey = Schemas["ApiKey"]
export type CreatedApiKey = Schemas["CreatedApiKey"]
export type EventType = Schemas["EventType"]
export type EventTypeInfo = Schemas["EventTypeInfo"]
export type EventRecord = Schemas["Event"]
export type Webhook = Schemas["Webhook"]
/** How a webhook's endpoint has been answering (the list's `health`; null before its first attempt). */
export type WebhookHealth = Schemas["WebhookHealth"]
/** A webhook as the list (`GET /v1/webhooks`) shows it. */
export type WebhookWithHealth = Schemas["WebhookWithHealth"]
export type CreatedWebhook = Schemas["CreatedWebhook"]
export type RotatedWebhook = Schemas["RotatedWebhook"]
export type Delivery = Schemas["Delivery"]
export type DeliveryStatus = Delivery["status"]
/** A delivery of one event (`GET /v1/events/{event_id}/deliveries`), with its webhook's URL. */
export type EventDelivery = Schemas["EventDelivery"]
export type Attempt = Schemas["DeliveryAttempt"]
export type DeliveryWithAttempts = Schemas["DeliveryWithAttempts"]
/** A live session of the signed-in user (`GET /v1/users/me/sessions`); `current`: the dashboard's own. */
export type Session = Schemas["Session"]
/** An OAuth client the user registered (`/v1/oauth-clients`), and a grant they gave one (`/v1/authorizations`). */
export type OAuthClient = Schemas["OAuthClient"]
export type Authorization = Schemas["Authorization"]
export type AuditRecord = Schemas["AuditRecord"]
export type AuditAction = AuditRecord["action"]
export type Actor = AuditRecord["actor"]

/**
 * `values`, when they are every member of `T` and nothing else (the checker refuses a list missing one): the service's
 * own lists (src/Domain/Vocabulary.ts), held by the compiler to the values the contract generates.
 */
const every =
  <T extends string>() =>
  <const L extends ReadonlyArray<T>>(values: L & ([T] extends [L[number]] ? unknown : never)): L =>
    values

/** The scopes a key can have, in the service's order. */
export const scopes = every<Scope>()(scopeNames)

/** The event types a webhook can subscribe to, in the service's order. */
export const eventTypes = every<EventType>()(serviceEventTypes)

/** Sent to one webhook by its "Send test event" button; not subscribable. */
export const TEST_EVENT = "webhook.test" satisfies Delivery["event_type"]

/** Every action an audit record can name, in the service's order. */
export const auditActions = every<AuditAction>()(serviceAuditActions)
