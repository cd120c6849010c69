/**
 * The records the dashboard reads, as the API contract describes them (docs: /docs, decisions.md). The dashboard
 * is a client of its own service and trusts the shape of its answers; only the envelope is checked (api.ts).
 */
export interface ListMeta {
  readonly total: number
  readonly page: number
  readonly per_page: number
  readonly request_id: string
}

export interface Page<T> {
  readonly data: ReadonlyArray<T>
  readonly meta: ListMeta
}

export interface User {
  readonly id: string
  readonly email: string
  readonly name: string
  readonly avatar_url: string | null
}

export type Visibility = "private" | "team" | "public"
export interface Project {
  readonly id: string
  readonly name: string
  readonly description: string
  readonly visibility: Visibility
  readonly status: "active" | "archived"
  readonly owner_id: string
  readonly team_id: string | null
  readonly created_at: string
  readonly updated_at: string
}

export type DeploymentStatus = "running" | "succeeded" | "failed"
export interface Deployment {
  readonly id: string
  readonly project_id: string
  readonly environment: string
  readonly ref: string
  readonly description: string
  readonly status: DeploymentStatus
  readonly created_by: string
  readonly created_at: string
  readonly updated_at: string
  readonly finished_at: string | null
}

export type Role = "owner" | "admin" | "member"
export interface Team {
  readonly id: string
  readonly name: string
  readonly created_at: string
  readonly updated_at?: string
  /** The caller's role (on a single read). */
  readonly role?: Role
}

export interface Member {
  readonly user_id: string
  readonly name: string
  readonly email: string
  readonly avatar_url: string | null
  readonly role: Role
  readonly joined_at: string
}

export type InvitationStatus = "pending" | "accepted" | "declined" | "revoked" | "expired"
export interface Invitation {
  readonly id: string
  readonly team_id: string
  readonly email: string
  readonly role: Role
  readonly status: InvitationStatus
  readonly invited_by: string
  readonly created_at: string
  readonly expires_at: string
  readonly answered_at: string | null
  /** What and who, for an invitee who cannot read the team. */
  readonly team_name: string
  readonly invited_by_name: string
}

/** The service's scopes and event types (src/Domain; test/dashboard/types.test.ts keeps them equal). */
export const scopes = ["read", "write", "projects:read", "projects:write", "team:manage", "billing:read"] as const
export type Scope = (typeof scopes)[number]

export interface ApiKey {
  readonly id: string
  readonly name: string
  readonly scopes: ReadonlyArray<Scope>
  readonly prefix: string
  readonly status: "active" | "expired" | "revoked"
  readonly created_at: string
  readonly expires_at: string | null
  readonly last_used_at: string | null
  readonly revoked_at: string | null
}
export interface CreatedApiKey extends ApiKey {
  readonly key: string
}

export const eventTypes = [
  "project.created",
  "project.updated",
  "project.deleted",
  "member.invited",
  "member.joined",
  "member.removed",
  "deployment.started",
  "deployment.completed",
  "deployment.failed"
] as const
export type EventType = (typeof eventTypes)[number]

/** An entry of the event catalogue (`GET /v1/event-types`). */
export interface EventTypeInfo {
  readonly type: EventType | typeof TEST_EVENT
  readonly description: string
  readonly schema: object
  readonly example: { readonly id: string; readonly type: string; readonly created_at: string; readonly data: unknown }
}

/** An event as the feed answers it: exactly what its webhooks were sent. */
export interface EventRecord {
  readonly id: string
  readonly type: EventType
  readonly created_at: string
  readonly data: unknown
}

export interface Webhook {
  readonly id: string
  readonly url: string
  readonly events: ReadonlyArray<EventType>
  readonly status: "active" | "failed"
  /** `hmac`: signed with the shared secret; `ed25519`: with a key pair, verified with `public_key`. */
  readonly signature: "hmac" | "ed25519"
  /** `whpk_…`, an `ed25519` webhook's public key (null for `hmac`). */
  readonly public_key: string | null
  /** The public key rotated out, while it still signs. */
  readonly previous_public_key: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly failed_at: string | null
  /** Set while an operator has disabled it (`bun run cli webhooks disable`). */
  readonly disabled_at: string | null
}
/** How a webhook's endpoint has been answering (the list's `health`; null before its first attempt). */
export interface WebhookHealth {
  readonly last_attempt_at: string
  readonly last_status_code: number | null
  readonly last_outcome: "succeeded" | "failed"
  readonly attempts_24h: number
  /** From 0 to 1; null when there was no attempt in 24 hours. */
  readonly success_rate_24h: number | null
}
/** A webhook as the list (`GET /v1/webhooks`) shows it. */
export interface WebhookWithHealth extends Webhook {
  readonly health: WebhookHealth | null
}
export interface CreatedWebhook extends Webhook {
  readonly secret?: string
}
export interface RotatedWebhook extends CreatedWebhook {
  readonly previous_secret_expires_at: string
}
/** Sent to one webhook by its "Send test event" button; not subscribable. */
export const TEST_EVENT = "webhook.test"

export type DeliveryStatus = "pending" | "delivered" | "failed"
export interface Delivery {
  readonly id: string
  readonly webhook_id: string
  readonly event_id: string
  readonly event_type: EventType | typeof TEST_EVENT
  readonly status: DeliveryStatus
  readonly attempt_count: number
  readonly next_attempt_at: string | null
  readonly last_attempt_at: string | null
  readonly last_status_code: number | null
  /** The event's resource name (its `data.name`), null when it has none. */
  readonly resource_name: string | null
  readonly created_at: string
}
/** A delivery of one event (`GET /v1/events/:event_id/deliveries`), with its webhook's URL. */
export interface EventDelivery extends Delivery {
  readonly webhook_url: string
}

export interface Attempt {
  readonly number: number
  readonly attempted_at: string
  readonly duration_ms: number
  readonly status_code: number | null
  readonly error: string | null
  readonly response_body: string | null
  readonly outcome: "succeeded" | "failed"
  /** A manual retry (retry, recover, Redeliver) is extra: outside the five scheduled attempts. */
  readonly trigger: "schedule" | "manual"
  readonly request_headers: Readonly<Record<string, string>> | null
  readonly response_headers: Readonly<Record<string, string>> | null
}
export interface DeliveryWithAttempts extends Delivery {
  readonly payload: string
  readonly attempts: ReadonlyArray<Attempt>
}

/** A live session of the signed-in user (`GET /v1/users/me/sessions`); `current`: the dashboard's own. */
export interface Session {
  readonly id: string
  readonly created_at: string
  readonly last_used_at: string | null
  readonly ip: string | null
  readonly user_agent: string | null
  readonly current: boolean
}

/** Every action an audit record can name, in the service's order (src/Domain/Audit.ts). */
export const auditActions = [
  "project.created",
  "project.updated",
  "project.archived",
  "project.unarchived",
  "project.deleted",
  "deployment.started",
  "deployment.completed",
  "deployment.failed",
  "member.invited",
  "member.joined",
  "member.role_changed",
  "member.removed",
  "invitation.declined",
  "invitation.revoked",
  "team.created",
  "team.renamed",
  "team.deleted",
  "api_key.created",
  "api_key.revoked",
  "webhook.created",
  "webhook.updated",
  "webhook.deleted",
  "webhook.secret_rotated",
  "webhook.recovered",
  "delivery.retried",
  "oauth_client.created",
  "oauth_client.updated",
  "oauth_client.deleted",
  "oauth_client.secret_rotated",
  "authorization.granted",
  "authorization.revoked",
  "session.created",
  "session.failed",
  "session.revoked",
  "user.updated",
  "user.suspended",
  "user.reactivated"
] as const
export type AuditAction = (typeof auditActions)[number]

export type Actor =
  | { readonly type: "user"; readonly id: string; readonly name: string }
  | { readonly type: "operator" }
  | { readonly type: "system" }

/** An entry of a team's audit log or of a user's security log (docs/audit.md). */
export interface AuditRecord {
  readonly id: string
  readonly action: AuditAction
  readonly actor: Actor
  readonly credential: { readonly type: "api_key" | "oauth" | "session"; readonly id: string } | null
  readonly target: { readonly type: string; readonly id: string }
  readonly target_name: string | null
  readonly team_id: string | null
  readonly ip: string | null
  readonly user_agent: string | null
  readonly request_id: string | null
  readonly created_at: string
  readonly changes: { readonly [field: string]: readonly [unknown, unknown] } | null
}
