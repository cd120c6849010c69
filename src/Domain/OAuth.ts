/**
 * The OAuth 2.0 authorization server's records and its one expected error, as schemas. Pure: the services in
 * `src/OAuth/` work on these, the repository decodes its rows into them, and `src/OAuth/Http.ts` renders them.
 */
import { Schema } from "effect"
import { type Scope, scopeNames } from "./Scopes.js"

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
  usedAt: Schema.NullOr(Schema.String)
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
  revokedAt: Schema.NullOr(Schema.String)
}) {}

/** A live access token with its user's organisation: what a `pco_…` bearer stands for. */
export class AccessCredential extends Schema.Class<AccessCredential>("AccessCredential")({
  id: Schema.String,
  tokenHash: Schema.String,
  userId: Schema.String,
  orgId: Schema.String,
  scope: Schema.String
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
