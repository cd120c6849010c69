/**
 * The OAuth 2.0 authorization server's records and its one expected error, as schemas. Pure: the services in
 * `src/OAuth/` work on these, the repository decodes its rows into them, and `src/OAuth/Http.ts` renders them.
 */
import { Schema } from "effect"
import { Stored } from "./Ids.js"
import { optional, TrimmedName } from "./Payload.js"
import { Scope, scopeNames } from "./Scopes.js"
import { Timestamp } from "./Time.js"

/** A registered client: confidential (a secret, kept as SHA-256) or public (no secret; PKCE required). */
export class OAuthClient extends Schema.Class<OAuthClient>("OAuthClient")({
  id: Schema.String,
  name: Schema.String,
  secretHash: Schema.NullOr(Schema.String),
  redirectUris: Schema.Array(Schema.String),
  isPublic: Schema.Boolean
}) {}

/** A client as the operator's CLI lists it: never its secret (hash). */
export const ClientSummary = Schema.Struct({
  client_id: Schema.String,
  name: Schema.String,
  redirect_uris: Schema.Array(Schema.String),
  public: Schema.Boolean,
  created_at: Schema.String
})
export type ClientSummary = typeof ClientSummary.Type

/** An authorization request between `GET /authorize` and the consent decision (10 minutes at most). */
export class PendingAuthorization extends Schema.Class<PendingAuthorization>("PendingAuthorization")({
  id: Schema.String,
  clientId: Schema.String,
  redirectUri: Schema.String,
  scope: Schema.String,
  state: Schema.NullOr(Schema.String),
  codeChallenge: Schema.NullOr(Schema.String),
  userId: Schema.NullOr(Schema.String),
  stage: Schema.Literal("sign_in", "consent"),
  csrfHash: Schema.String,
  createdAt: Schema.String,
  expiresAt: Schema.String
}) {}

/** An authorization code (stored as SHA-256): once, within 10 minutes, by the client it was issued to. */
export class AuthorizationCode extends Schema.Class<AuthorizationCode>("AuthorizationCode")({
  id: Schema.String,
  codeHash: Schema.String,
  clientId: Schema.String,
  userId: Schema.String,
  redirectUri: Schema.String,
  scope: Schema.String,
  codeChallenge: Schema.NullOr(Schema.String),
  createdAt: Schema.String,
  expiresAt: Schema.String,
  usedAt: Schema.NullOr(Schema.String),
  /** The user's grant to the client this code was issued under (null only for codes older than grants). */
  grantId: Schema.NullOr(Schema.String)
}) {}

/** An access or refresh token (stored as SHA-256). A family is every token issued down one code's refresh chain. */
export class OAuthToken extends Schema.Class<OAuthToken>("OAuthToken")({
  id: Schema.String,
  tokenHash: Schema.String,
  kind: Schema.Literal("access", "refresh"),
  clientId: Schema.String,
  userId: Schema.String,
  scope: Schema.String,
  familyId: Schema.String,
  createdAt: Schema.String,
  expiresAt: Schema.String,
  usedAt: Schema.NullOr(Schema.String),
  revokedAt: Schema.NullOr(Schema.String),
  /** The grant the token was issued under: revoking the grant takes the token with it. */
  grantId: Schema.NullOr(Schema.String)
}) {}

/** A live access token with its user's name and organisation and its client: what a `pco_…` bearer stands for. */
export class AccessCredential extends Schema.Class<AccessCredential>("AccessCredential")({
  id: Schema.String,
  tokenHash: Schema.String,
  clientId: Schema.String,
  userId: Schema.String,
  userName: Schema.String,
  orgId: Schema.String,
  scope: Schema.String,
  grantId: Schema.NullOr(Schema.String),
  grantLastUsedAt: Schema.NullOr(Schema.String)
}) {}

/** The error codes of RFC 6749 §4.1.2.1 and §5.2 this server answers with. */
export const OAuthErrorCode = Schema.Literal(
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "invalid_scope",
  "unsupported_grant_type",
  "unsupported_response_type",
  "access_denied"
)
export type OAuthErrorCode = typeof OAuthErrorCode.Type

/** An RFC 6749 error: `{error, error_description}`. How it is answered (status, page, redirect) is the HTTP edge's. */
export class OAuthError extends Schema.TaggedError<OAuthError>()("OAuthError", {
  error: OAuthErrorCode,
  description: Schema.String
}) {
  static of(error: OAuthErrorCode, description: string) {
    return new OAuthError({ error, description })
  }
}

/**
 * Scope names → the scopes in their canonical order, or `undefined` when one is unknown or none is given.
 * (The wire's space-separated list is split at the HTTP edge.)
 */
export const knownScopes = (names: ReadonlyArray<string>): ReadonlyArray<Scope> | undefined => {
  if (names.length === 0) return undefined
  const scopes = scopeNames.filter((scope) => names.includes(scope))
  return names.every((name) => scopes.some((scope) => scope === name)) ? scopes : undefined
}

/** A stored, space-separated scope → its scopes (unknown names, which are never stored, are dropped). */
export const storedScopes = (scope: string): ReadonlyArray<Scope> =>
  knownScopes(scope.split(" ").filter((name) => name !== "")) ?? []

/** The stored form of a set of scopes. */
export const scopeText = (scopes: ReadonlyArray<Scope>): string => scopes.join(" ")

/** `GET /authorize` whose client or redirect URI cannot be trusted: answered with an error page, never a redirect. */
export class UntrustedAuthorizationRequest extends Schema.TaggedError<UntrustedAuthorizationRequest>()(
  "UntrustedAuthorizationRequest",
  { message: Schema.String }
) {}

/** `GET /authorize` refused once the client and its redirect URI are known: sent back to the client (§4.1.2.1). */
export class AuthorizationRejected extends Schema.TaggedError<AuthorizationRejected>()("AuthorizationRejected", {
  redirectUri: Schema.String,
  state: Schema.NullOr(Schema.String),
  error: OAuthErrorCode,
  description: Schema.String
}) {}

/**
 * A redirect URI as a client registers it (the API and the operator's CLI alike): an absolute URL without a
 * fragment (RFC 6749 §3.1.2), at most 2048 characters, with no whitespace or control character (it is compared
 * exactly, shown on the consent page and put in a `Location` header), and not a scheme a browser would run or read
 * locally. Custom schemes stay allowed, for native apps (RFC 8252 §7.1).
 */
export const redirectUriProblem = (uri: string): string | undefined => {
  if (uri.length > 2048) return "must be at most 2048 characters"
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses.
  if (/[\u0000-\u0020\u007f]/.test(uri)) return "must not contain spaces or control characters"
  if (!URL.canParse(uri)) return "must be an absolute URL"
  if (uri.includes("#")) return "must not have a fragment (#…)"
  const scheme = new URL(uri).protocol
  if (["javascript:", "data:", "vbscript:", "file:", "blob:"].includes(scheme)) {
    return `must not use the ${scheme} scheme`
  }
  return undefined
}

export const MAX_REDIRECT_URIS = 10

export const RedirectUri = Schema.String.pipe(
  Schema.filter((uri) => redirectUriProblem(uri) ?? true, { identifier: "RedirectUri" })
).annotations({
  description: "An absolute URL without a fragment, compared exactly",
  examples: ["https://app.example.com/callback"]
})

export const RedirectUris = Schema.Array(RedirectUri).pipe(
  Schema.minItems(1, { message: () => "must list at least one redirect URI" }),
  Schema.maxItems(MAX_REDIRECT_URIS, { message: () => `must list at most ${MAX_REDIRECT_URIS} redirect URIs` })
)

/** An OAuth client as its owner reads it (`GET /v1/oauth-clients`): never its secret. */
export const OAuthClientRecord = Schema.Struct({
  id: Stored.OAuthClientId.annotations({ description: "The client_id" }),
  name: Schema.String,
  redirect_uris: Schema.Array(Schema.String),
  public: Schema.Boolean.annotations({
    description: "A public client has no secret and must use PKCE (browser and mobile apps)"
  }),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "OAuthClient" })
export type OAuthClientRecord = typeof OAuthClientRecord.Type

/** The client with its secret, answered once: at registration (confidential clients) and at rotation. */
export const OAuthClientWithSecret = Schema.Struct({
  ...OAuthClientRecord.fields,
  client_secret: optional(
    Schema.String.annotations({
      description: "The client secret (`pcc_…`) of a confidential client. Shown this once; store it now."
    })
  )
}).annotations({ identifier: "OAuthClientWithSecret" })
export type OAuthClientWithSecret = typeof OAuthClientWithSecret.Type

/** `POST /v1/oauth-clients`. */
export const NewOAuthClient = Schema.Struct({
  name: TrimmedName,
  redirect_uris: RedirectUris,
  public: optional(Schema.Boolean)
})
export type NewOAuthClient = typeof NewOAuthClient.Type

/** `PUT /v1/oauth-clients/:id`: a partial update; whether a client is public is fixed at registration. */
export const OAuthClientPatch = Schema.Struct({
  name: optional(TrimmedName),
  redirect_uris: optional(RedirectUris)
})
export type OAuthClientPatch = typeof OAuthClientPatch.Type

export type OAuthClientSort = "created_at" | "updated_at" | "name"

/** A grant a user gave a client (`GET /v1/authorizations`): one per user and client, its scopes the union approved. */
export const Authorization = Schema.Struct({
  id: Stored.GrantId,
  client: Schema.Struct({ id: Stored.OAuthClientId, name: Schema.String }),
  scopes: Schema.Array(Scope),
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "Authorization" })
export type Authorization = typeof Authorization.Type

export type AuthorizationSort = "created_at" | "name"
