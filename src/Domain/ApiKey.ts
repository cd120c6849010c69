/** An API key: the public record, the one-time created form, what authentication reads, and the field rules. */
import { Schema } from "effect"
import { Stored } from "./Ids.js"
import { optional, TrimmedName } from "./Payload.js"
import { Scope } from "./Scopes.js"
import { InstantFromString, Timestamp } from "./Time.js"

export const ApiKeyStatus = Schema.Literal("active", "expired", "revoked")
export type ApiKeyStatus = typeof ApiKeyStatus.Type

export const ApiKey = Schema.Struct({
  id: Stored.ApiKeyId,
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

/** A key with its owner, as the operator's `cli api-keys list` shows it (never the key itself). */
export const OwnedApiKey = Schema.Struct({
  id: Stored.ApiKeyId,
  user_id: Stored.UserId,
  name: ApiKey.fields.name,
  scopes: ApiKey.fields.scopes,
  prefix: ApiKey.fields.prefix,
  status: ApiKeyStatus,
  created_at: Timestamp,
  expires_at: Schema.NullOr(Timestamp),
  last_used_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp)
})
export type OwnedApiKey = typeof OwnedApiKey.Type

export const CreatedApiKey = Schema.Struct({
  ...ApiKey.fields,
  key: Schema.String.annotations({ description: "The key itself (`pcs_…`). Shown this once; store it now." })
}).annotations({ identifier: "CreatedApiKey" })
export type CreatedApiKey = typeof CreatedApiKey.Type

/**
 * A key found by its prefix, with what authentication needs: `status` as of the lookup, and `expires_at`, after
 * which an `active` key is `expired` (src/ApiKeys/Credentials.ts reads it for a credential it keeps).
 */
export const KeyCredential = Schema.Struct({
  id: Stored.ApiKeyId,
  user_id: Stored.UserId,
  /** The owner's name, which a write made with the key names them by. */
  user_name: Schema.String,
  org_id: Stored.OrgId,
  key_hash: Schema.String,
  scopes: Schema.Array(Scope),
  status: ApiKeyStatus,
  expires_at: Schema.NullOr(Timestamp),
  last_used_at: Schema.NullOr(Timestamp)
})
export type KeyCredential = typeof KeyCredential.Type

export const KeyName = TrimmedName
export const KeyScopes = Schema.Array(Scope).pipe(Schema.minItems(1, { message: () => "must name at least one scope" }))

/** What making a key takes (the body of `POST /v1/api-keys`; the CLI gives the same). */
export const NewApiKey = Schema.Struct({
  name: KeyName,
  scopes: KeyScopes,
  expires_at: optional(
    Schema.NullOr(InstantFromString).annotations({
      message: () => "must be an ISO 8601 date-time with Z or an offset, or null"
    })
  )
})
export type NewApiKey = typeof NewApiKey.Type

export type ApiKeySort = "created_at" | "name"
