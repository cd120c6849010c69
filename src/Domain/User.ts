/** A user: the public record, its field rules, and what signing in reads. */
import { Schema } from "effect"
import { Stored } from "./Ids.js"
import { HttpUrl, optional, TrimmedName } from "./Payload.js"
import { Timestamp } from "./Time.js"

export const User = Schema.Struct({
  id: Stored.UserId,
  email: Schema.String,
  name: Schema.String,
  avatar_url: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "User" })
export type User = typeof User.Type

/** A user with the organisation they belong to (not on the wire). */
export const UserWithOrg = Schema.Struct({ ...User.fields, org_id: Stored.OrgId })
export type UserWithOrg = typeof UserWithOrg.Type

/** What signing in needs: the user's ids, password hash (null when no password was ever set) and suspension. */
export const UserCredentials = Schema.Struct({
  id: Stored.UserId,
  org_id: Stored.OrgId,
  password_hash: Schema.NullOr(Schema.String),
  /** Set while an operator has suspended the user (`cli users suspend`): they cannot sign in. */
  suspended_at: Schema.NullOr(Schema.String)
})
export type UserCredentials = typeof UserCredentials.Type

export const UserName = TrimmedName
export const AvatarUrl = HttpUrl

/** What a user may change of themselves (the body of `PUT /v1/users/me`); the email is read-only. */
export const UserPatch = Schema.Struct({
  name: optional(UserName),
  avatar_url: optional(
    Schema.NullOr(AvatarUrl).annotations({
      message: () => "must be an absolute http(s) URL of at most 2048 characters, or null"
    })
  )
})
export type UserPatch = typeof UserPatch.Type
