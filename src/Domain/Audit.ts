/**
 * Who did it: the actor of every change (on every event and every audit record) and the audit record itself
 * (docs/audit.md). An actor is a user (any credential of theirs, through the API), the operator (the CLI) or the
 * system (expiries, sweeps). Where no principal says who acts, `CurrentActor` does: the CLI provides the operator,
 * a sign-in the user signing in; with neither, the actor is the system.
 */
import { Context, Schema } from "effect"
import { Stored } from "./Ids.js"
import { Timestamp } from "./Time.js"
import { auditActions } from "./Vocabulary.js"

export const UserActor = Schema.Struct({
  type: Schema.Literal("user"),
  id: Stored.UserId,
  name: Schema.String
})
export const OperatorActor = Schema.Struct({ type: Schema.Literal("operator") })
export const SystemActor = Schema.Struct({ type: Schema.Literal("system") })

export const Actor = Schema.Union(UserActor, OperatorActor, SystemActor).annotations({
  identifier: "Actor",
  description:
    'Who made the change: `{"type": "user", "id", "name"}` through the API (any credential), `{"type": "operator"}` ' +
    'with the CLI, `{"type": "system"}` for an expiry or a sweep'
})
export type Actor = typeof Actor.Type

/**
 * Who acts where no principal says so (the CLI, a sign-in, a background fiber). A user may act through a credential
 * that is not a bearer of `/v1` (an OAuth client authenticated at `/oauth/revoke`, acting for the token's user): its
 * records name it.
 */
export class CurrentActor extends Context.Tag("CurrentActor")<
  CurrentActor,
  | { readonly type: "user"; readonly id: string; readonly credential?: AuditCredential | undefined }
  | { readonly type: "operator" }
  | { readonly type: "system" }
>() {}

export const OPERATOR: typeof OperatorActor.Type = { type: "operator" }
export const SYSTEM: typeof SystemActor.Type = { type: "system" }

export { auditActions }

export const AuditAction = Schema.Literal(...auditActions)
export type AuditAction = typeof AuditAction.Type

/** What a record is about. */
export const AuditTarget = Schema.Struct({ type: Schema.String, id: Schema.String })
export type AuditTarget = typeof AuditTarget.Type

/** The credential the actor used: its kind and id, never a secret. */
export const AuditCredential = Schema.Struct({
  type: Schema.Literal("api_key", "oauth", "session"),
  id: Schema.String
})
export type AuditCredential = typeof AuditCredential.Type

/** `{field: [before, after]}`, for updates; never a secret. */
export const AuditChanges = Schema.Record({
  key: Schema.String,
  value: Schema.Tuple(Schema.Unknown, Schema.Unknown).annotations({
    jsonSchema: { type: "array", items: {}, minItems: 2, maxItems: 2, description: "[before, after]" }
  })
})
export type AuditChanges = typeof AuditChanges.Type

export const AuditRecord = Schema.Struct({
  id: Stored.AuditId,
  action: AuditAction,
  actor: Actor,
  credential: Schema.NullOr(AuditCredential),
  target: AuditTarget,
  /** The target's name where known (a project's, a team's, a key's…), for a reader; not a secret. */
  target_name: Schema.NullOr(Schema.String),
  team_id: Schema.NullOr(Stored.TeamId),
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String),
  request_id: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  changes: Schema.NullOr(AuditChanges)
}).annotations({ identifier: "AuditRecord" })
export type AuditRecord = typeof AuditRecord.Type

/** `{field: [before, after]}` of the fields of `fields` that differ between `before` and `after`. */
export const changesOf = <T extends object, K extends keyof T & string>(
  before: T,
  after: T,
  fields: ReadonlyArray<K>
): Record<string, readonly [unknown, unknown]> => {
  const changes: Record<string, readonly [unknown, unknown]> = {}
  for (const field of fields) {
    if (JSON.stringify(before[field]) !== JSON.stringify(after[field])) changes[field] = [before[field], after[field]]
  }
  return changes
}
