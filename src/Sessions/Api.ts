/** The sessions group of the `/v1` contract: the caller's live sessions (`/users/me/sessions`), listed and ended. */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { List } from "../Contract/Envelope.js"
import { withParamErrors } from "../Contract/Errors.js"
import { listParamsNoStatus } from "../Contract/ListParams.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { SessionId } from "../Domain/Ids.js"
import { Session } from "../Domain/Session.js"

export const SessionListParams = listParamsNoStatus({ sort: ["created_at"] })

export class SessionsApi extends HttpApiGroup.make("sessions")
  .annotate(OpenApi.Description, "Sessions: your sign-ins, and ending them")
  .add(
    HttpApiEndpoint.get("list", "/users/me/sessions")
      .setUrlParams(SessionListParams)
      .addSuccess(List(Session))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "List your live sessions (sign-ins); `current` is the one this request uses")
  )
  .add(
    HttpApiEndpoint.del("revoke")`/users/me/sessions/${HttpApiSchema.param("id", SessionId)}`
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "End one of your sessions: its token answers 401 at once")
  )
  .add(
    HttpApiEndpoint.del("revokeOthers", "/users/me/sessions")
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "End every session of yours but the one this request uses (sign out everywhere else)")
  )
  .middleware(Authentication) {}
