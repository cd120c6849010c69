/**
 * The service's closed lists a person chooses from: the scopes a credential can hold, the event types a webhook can
 * subscribe to, the actions an audit record can name. Plain data with no import, so the dashboard's bundle takes
 * them without Effect; the domain's schemas (Scopes.ts, EventTypes.ts, Audit.ts) are made from them.
 */

export const scopeNames = ["read", "write", "projects:read", "projects:write", "team:manage", "billing:read"] as const

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

/** Every action an audit record can name. */
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
  "webhook.tested",
  "delivery.retried",
  "oauth_client.created",
  "oauth_client.updated",
  "oauth_client.deleted",
  "oauth_client.secret_rotated",
  "authorization.granted",
  "authorization.revoked",
  "oauth_token.revoked",
  "session.created",
  "session.failed",
  "session.revoked",
  "user.created",
  "user.updated",
  "user.suspended",
  "user.reactivated",
  "user.deleted"
] as const
