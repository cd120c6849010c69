/**
 * The self-service OAuth groups of the `/v1` contract: the OAuth clients a user registered (`/oauth-clients`) and
 * the grants a user gave (`/authorizations`). The authorization server itself (`/oauth/…`) is outside `/v1`: see
 * src/OAuth/Http.ts.
 */
import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { List, Success } from "../Contract/Envelope.js"
import { withBodyErrors, withParamErrors } from "../Contract/Errors.js"
import { IdempotencyKeyHeader } from "../Contract/Idempotency.js"
import { listParamsNoStatus } from "../Contract/ListParams.js"
import { strictBody } from "../Contract/Payload.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { GrantId, OAuthClientId } from "../Domain/Ids.js"
import {
  Authorization,
  NewOAuthClient,
  OAuthClientPatch,
  OAuthClientRecord,
  OAuthClientWithSecret
} from "../Domain/OAuth.js"

export const CreateOAuthClient = strictBody(NewOAuthClient.fields, "CreateOAuthClient", {
  example: { name: "Deploy bot", redirect_uris: ["https://app.example.com/callback"] }
})
export const UpdateOAuthClient = strictBody(OAuthClientPatch.fields, "UpdateOAuthClient", {
  nonEmpty: true,
  example: { name: "Deploy bot (staging)" }
})

export const OAuthClientListParams = listParamsNoStatus({ sort: ["created_at", "updated_at", "name"] })
export const AuthorizationListParams = listParamsNoStatus({ sort: ["created_at", "name"] })

const id = HttpApiSchema.param("id", OAuthClientId)

export class OAuthClientsApi extends HttpApiGroup.make("oauthClients")
  .annotate(OpenApi.Description, "OAuth applications you registered, for other people to authorize")
  .add(
    HttpApiEndpoint.get("list", "/oauth-clients")
      .setUrlParams(OAuthClientListParams)
      .addSuccess(List(OAuthClientRecord))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "List the OAuth clients you registered")
  )
  .add(
    HttpApiEndpoint.post("create", "/oauth-clients")
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateOAuthClient)
      .addSuccess(Success(OAuthClientWithSecret), { status: 201 })
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Register an OAuth client; a confidential client's secret is in this response only")
  )
  .add(
    HttpApiEndpoint.get("get")`/oauth-clients/${id}`
      .addSuccess(Success(OAuthClientRecord))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "Read an OAuth client you registered")
  )
  .add(
    HttpApiEndpoint.put("update")`/oauth-clients/${id}`
      .setPayload(UpdateOAuthClient)
      .addSuccess(Success(OAuthClientRecord))
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Change an OAuth client's name or redirect URIs")
  )
  .add(
    HttpApiEndpoint.del("delete")`/oauth-clients/${id}`
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Delete an OAuth client with every grant and token it holds (401 at once)")
  )
  .add(
    HttpApiEndpoint.post("rotateSecret")`/oauth-clients/${id}/rotate-secret`
      .setHeaders(IdempotencyKeyHeader)
      .addSuccess(Success(OAuthClientWithSecret))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(
        OpenApi.Summary,
        "Replace a confidential client's secret (in this response only); the old one stops working at once"
      )
  )
  .middleware(Authentication) {}

export class AuthorizationsApi extends HttpApiGroup.make("authorizations")
  .annotate(OpenApi.Description, "The OAuth applications you authorized, and revoking their access")
  .add(
    HttpApiEndpoint.get("list", "/authorizations")
      .setUrlParams(AuthorizationListParams)
      .addSuccess(List(Authorization))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "List the OAuth applications you authorized")
  )
  .add(
    HttpApiEndpoint.del("revoke")`/authorizations/${HttpApiSchema.param("id", GrantId)}`
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Revoke an application's access: every token issued under it answers 401 at once")
  )
  .middleware(Authentication) {}
