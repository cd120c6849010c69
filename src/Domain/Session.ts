/** A session: one sign-in (`POST {auth_url}/login`), named by its JWT's `sid` claim, until it ends or expires. */
import { Schema } from "effect"
import { Stored } from "./Ids.js"
import { Timestamp } from "./Time.js"

/** A live session as its user lists it (`GET /v1/users/me/sessions`); `current`: the one the request uses. */
export const Session = Schema.Struct({
  id: Stored.SessionId,
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp),
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String),
  current: Schema.Boolean
}).annotations({ identifier: "Session" })
export type Session = typeof Session.Type

/** What authenticating a session JWT reads: the session and its user's organisation and suspension (not on the wire). */
export const SessionCredential = Schema.Struct({
  id: Stored.SessionId,
  user_id: Stored.UserId,
  /** The user's name, which a write made in the session names them by. */
  user_name: Schema.String,
  org_id: Stored.OrgId,
  expires_at: Schema.String,
  revoked_at: Schema.NullOr(Schema.String),
  last_used_at: Schema.NullOr(Schema.String),
  suspended_at: Schema.NullOr(Schema.String)
})
export type SessionCredential = typeof SessionCredential.Type

export type SessionSort = "created_at"
