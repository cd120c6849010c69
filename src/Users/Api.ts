import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Api.js"
import { RequiredScopes } from "../Auth/Principal.js"
import { Success } from "../Domain/Envelope.js"
import { UserId } from "../Domain/Ids.js"
import { HttpUrl, optional, strictBody, TrimmedName } from "../Domain/Payload.js"
import { Timestamp } from "../Domain/Time.js"

export const User = Schema.Struct({
  id: UserId,
  email: Schema.String,
  name: Schema.String,
  avatar_url: Schema.NullOr(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "User" })
export type User = typeof User.Type

export const UserName = TrimmedName

export const AvatarUrl = HttpUrl

export const UpdateMe = strictBody({
  name: optional(UserName),
  avatar_url: optional(Schema.NullOr(AvatarUrl).annotations({ message: () => "must be an absolute http(s) URL of at most 2048 characters, or null" }))
}, "UpdateMe", { nonEmpty: true })
export type UpdateMe = typeof UpdateMe.Type

export class UsersApi extends HttpApiGroup.make("users")
  .add(
    HttpApiEndpoint.get("me", "/users/me")
      .addSuccess(Success(User))
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "Your profile")
  )
  .add(
    HttpApiEndpoint.put("updateMe", "/users/me")
      .setPayload(UpdateMe)
      .addSuccess(Success(User))
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Change your name or avatar (email is read-only)")
  )
  .middleware(Authentication)
{}
