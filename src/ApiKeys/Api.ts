import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { List, Success } from "../Contract/Envelope.js"
import { withBodyErrors, withParamErrors } from "../Contract/Errors.js"
import { IdempotencyKeyHeader } from "../Contract/Idempotency.js"
import { listParams } from "../Contract/ListParams.js"
import { strictBody } from "../Contract/Payload.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { ApiKey, CreatedApiKey, NewApiKey } from "../Domain/ApiKey.js"
import { ApiKeyId } from "../Domain/Ids.js"

export const CreateApiKey = strictBody(NewApiKey.fields, "CreateApiKey", {
  example: { name: "CI deploys", scopes: ["read", "write"] }
})

export const ApiKeyListParams = listParams({
  sort: ["created_at", "name"],
  status: ["active", "expired", "revoked"]
})

export class ApiKeysApi extends HttpApiGroup.make("apiKeys")
  .annotate(OpenApi.Description, "API keys: long-lived credentials with scopes, shown once at creation")
  .add(
    HttpApiEndpoint.get("list", "/api-keys")
      .setUrlParams(ApiKeyListParams)
      .addSuccess(List(ApiKey))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "List your API keys, revoked and expired ones included")
  )
  .add(
    HttpApiEndpoint.post("create", "/api-keys")
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateApiKey)
      .addSuccess(Success(CreatedApiKey), { status: 201 })
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Create an API key; its value is in this response only")
  )
  .add(
    HttpApiEndpoint.del("revoke")`/api-keys/${HttpApiSchema.param("id", ApiKeyId)}`
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Revoke an API key; it fails with 401 at once")
  )
  .middleware(Authentication) {}
