import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Success } from "../Contract/Envelope.js"
import { withBodyErrors } from "../Contract/Errors.js"
import { strictBody } from "../Contract/Payload.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { User, UserPatch } from "../Domain/User.js"

export const UpdateMe = strictBody(UserPatch.fields, "UpdateMe", { nonEmpty: true, example: { name: "Ada Lovelace" } })

export class UsersApi extends HttpApiGroup.make("users")
  .annotate(OpenApi.Description, "Your own user record")
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
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Change your name or avatar (email is read-only)")
  )
  .middleware(Authentication) {}
