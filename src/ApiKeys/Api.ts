import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Api.js"
import { RequiredScopes } from "../Auth/Principal.js"
import { List, Success } from "../Domain/Envelope.js"
import { ApiKeyId } from "../Domain/Ids.js"
import { listParams } from "../Domain/Lists.js"
import { optional, strictBody, TrimmedName } from "../Domain/Payload.js"
import { Scope } from "../Domain/Scopes.js"
import { InstantFromString, Timestamp } from "../Domain/Time.js"

export const ApiKeyStatus = Schema.Literal("active", "expired", "revoked")

export const ApiKey = Schema.Struct({
  id: ApiKeyId,
  name: Schema.String,
  scopes: Schema.Array(Scope),
  prefix: Schema.String.annotations({ description: "The first 12 characters of the key, to recognise it by" }),
  status: ApiKeyStatus,
  created_at: Timestamp,
  expires_at: Schema.NullOr(Timestamp),
  last_used_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "ApiKey" })
export type ApiKey = typeof ApiKey.Type

export const CreatedApiKey = Schema.Struct({
  ...ApiKey.fields,
  key: Schema.String.annotations({ description: "The key itself (`pcs_…`). Shown this once; store it now." })
}).annotations({ identifier: "CreatedApiKey" })
export type CreatedApiKey = typeof CreatedApiKey.Type

export const KeyName = TrimmedName
export const KeyScopes = Schema.Array(Scope).pipe(
  Schema.minItems(1, { message: () => "must name at least one scope" })
)

export const CreateApiKey = strictBody({
  name: KeyName,
  scopes: KeyScopes,
  expires_at: optional(Schema.NullOr(InstantFromString).annotations({ message: () => "must be an ISO 8601 date-time with Z or an offset, or null" }))
}, "CreateApiKey")
export type CreateApiKey = typeof CreateApiKey.Type

export const ApiKeyListParams = listParams({
  sort: ["created_at", "name"],
  status: ["active", "expired", "revoked"]
})

export class ApiKeysApi extends HttpApiGroup.make("apiKeys")
  .add(
    HttpApiEndpoint.get("list", "/api-keys")
      .setUrlParams(ApiKeyListParams)
      .addSuccess(List(ApiKey))
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "List your API keys, revoked and expired ones included")
  )
  .add(
    HttpApiEndpoint.post("create", "/api-keys")
      .setPayload(CreateApiKey)
      .addSuccess(Success(CreatedApiKey), { status: 201 })
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Create an API key; its value is in this response only")
  )
  .add(
    HttpApiEndpoint.del("revoke")`/api-keys/${HttpApiSchema.param("id", ApiKeyId)}`
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(RequiredScopes, ["write"])
      .annotate(OpenApi.Summary, "Revoke an API key; it fails with 401 at once")
  )
  .middleware(Authentication)
{}
