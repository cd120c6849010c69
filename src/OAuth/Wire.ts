/**
 * The authorization server's bodies on the wire (RFC 6749, 7009, 7662, 8414, 9728, and the dashboard's sign-in), as
 * schemas: `src/OAuth/Http.ts` decodes its requests with them and types its answers by them, and the OpenAPI
 * document derives its OAuth schemas from them (`JSONSchema`, src/Http/OpenApi.ts). Each is named as the document's
 * component (`oauthWireSchemas`).
 *
 * A request's parameters are strings (form-encoded, or a JSON object of strings). An absent optional parameter is
 * `Option.none()`; a required one absent or empty is the `invalid_request` description `"<name> is required"`.
 */
import { Schema } from "effect"

/** A string of a JSON Schema `format` (the format is documented, not checked). */
const formatted = (format: "uri" | "email" | "password", description?: string) =>
  Schema.String.annotations({
    jsonSchema: { type: "string", format, ...(description === undefined ? {} : { description }) }
  })
/** A string the document lists the values of, though any is accepted (an unknown hint is ignored). */
const oneOfDocumented = (values: ReadonlyArray<string>, description?: string) =>
  Schema.String.annotations({
    jsonSchema: { type: "string", enum: [...values], ...(description === undefined ? {} : { description }) }
  })
/** A string described. */
const text = (description: string) => Schema.String.annotations({ description })

/** An optional parameter, `Option.none()` when absent (present but empty is kept: some checks tell the two apart). */
const optionalParam = <S extends Schema.Schema<string>>(schema: S) => Schema.optionalWith(schema, { as: "Option" })
/** A required parameter: absent or empty is `"<name> is required"`; `documented`: what the document says of it. */
export const requiredParam = (name: string, documented: object = {}) =>
  Schema.propertySignature(
    Schema.String.pipe(Schema.minLength(1, { message: () => `${name} is required` })).annotations({
      jsonSchema: { type: "string", ...documented }
    })
  ).annotations({ missingMessage: () => `${name} is required` })

const tokenHint = oneOfDocumented(["access_token", "refresh_token"])
const anyToken = "an access (`pco_…`) or refresh (`pcr_…`) token"

/** `POST /oauth/token`: `grant_type` decides which of the other parameters count (src/OAuth/Http.ts). */
export const TokenRequest = Schema.Struct({
  grant_type: requiredParam("grant_type", { enum: ["authorization_code", "refresh_token"] }),
  code: optionalParam(text("authorization_code: the code from the redirect")),
  redirect_uri: optionalParam(text("authorization_code: the same as in the authorization request")),
  code_verifier: optionalParam(text("authorization_code: the PKCE verifier, when a challenge was sent")),
  refresh_token: optionalParam(text("refresh_token: the current refresh token")),
  scope: optionalParam(text("refresh_token: a narrower space-separated scope")),
  client_id: optionalParam(text("unless HTTP Basic is used")),
  client_secret: optionalParam(text("confidential clients, unless HTTP Basic is used"))
})

/** `POST /oauth/revoke` (RFC 7009 §2.1). */
export const RevokeRequest = Schema.Struct({
  token: requiredParam("token", { description: anyToken }),
  token_type_hint: optionalParam(tokenHint),
  client_id: optionalParam(Schema.String),
  client_secret: optionalParam(Schema.String)
})

/** `POST /oauth/introspect` (RFC 7662 §2.1): `token_type_hint` is accepted and not needed. */
export const IntrospectionRequest = Schema.Struct({
  token: requiredParam("token", { description: anyToken }),
  token_type_hint: optionalParam(oneOfDocumented(["access_token", "refresh_token"], "accepted, not needed")),
  client_id: optionalParam(text("unless HTTP Basic is used")),
  client_secret: optionalParam(text("unless HTTP Basic is used"))
})

const bothRequired = "email and password are required"
/** `POST /oauth/login`, a JSON object. */
export const LoginRequest = Schema.Struct({
  email: Schema.propertySignature(formatted("email")).annotations({ missingMessage: () => bothRequired }),
  password: Schema.propertySignature(formatted("password")).annotations({ missingMessage: () => bothRequired })
})

/** An RFC 6749 §5.2 error. */
export const OAuthErrorBody = Schema.Struct({
  error: Schema.String.annotations({
    examples: [
      "invalid_request",
      "invalid_client",
      "invalid_grant",
      "unsupported_grant_type",
      "invalid_scope",
      "temporarily_unavailable"
    ]
  }),
  error_description: Schema.optional(Schema.String)
}).annotations({ description: "RFC 6749 §5.2 error" })

const seconds = (description?: string) =>
  Schema.Number.annotations({
    jsonSchema: description === undefined ? { type: "integer" } : { type: "integer", description }
  })

/** The token endpoint's answer (RFC 6749 §5.1). */
export const TokenResponse = Schema.Struct({
  access_token: text("`pco_…`, for `Authorization: Bearer`"),
  token_type: Schema.Literal("Bearer"),
  expires_in: seconds("seconds (3600)"),
  refresh_token: text("`pcr_…`; each refresh returns a new one"),
  scope: text("space-separated scopes granted")
})

/** RFC 7662 §2.2. */
export const Introspection = Schema.Struct({
  active: Schema.Boolean,
  scope: Schema.optional(text("space-separated scopes of the token")),
  client_id: Schema.optional(Schema.String),
  sub: Schema.optional(text("the user's id")),
  exp: Schema.optional(seconds("epoch seconds")),
  iat: Schema.optional(seconds("epoch seconds")),
  token_type: Schema.optional(Schema.Literal("Bearer", "refresh_token"))
}).annotations({
  description:
    "RFC 7662 §2.2. Active: the calling client's own live access or refresh token. Anything else (another " +
    "client's token, a revoked, rotated or expired one, an API key, a session JWT) is `{active: false}` alone."
})

const uri = formatted("uri")
const strings = Schema.Array(Schema.String)

/** RFC 9728: the protected resource `{base_url}/v1`. */
export const ProtectedResourceMetadata = Schema.Struct({
  resource: formatted("uri", "`{base_url}/v1`"),
  authorization_servers: Schema.optional(Schema.Array(uri)),
  scopes_supported: Schema.optional(strings),
  bearer_methods_supported: Schema.optional(Schema.Array(Schema.Literal("header"))),
  resource_name: Schema.optional(Schema.String),
  resource_documentation: Schema.optional(uri)
}).annotations({ description: "RFC 9728" })

/** The session JWT `POST /oauth/login` answers (not `Session`: that is a `/v1` record, a live session). */
export const SessionToken = Schema.Struct({
  access_token: text("an EdDSA-signed JWT (one hour), for `Authorization: Bearer`"),
  token_type: Schema.Literal("Bearer"),
  expires_in: seconds()
})

/** `GET /oauth/jwks.json`: the Ed25519 keys that verify session JWTs. */
export const Jwks = Schema.Struct({
  keys: Schema.Array(
    Schema.Struct({
      kty: Schema.Literal("OKP"),
      crv: Schema.Literal("Ed25519"),
      x: Schema.String,
      kid: Schema.String,
      alg: Schema.optional(Schema.Literal("EdDSA")),
      use: Schema.optional(Schema.Literal("sig"))
    })
  )
})

/** RFC 8414. */
export const AuthorizationServerMetadata = Schema.Struct({
  issuer: uri,
  authorization_endpoint: uri,
  token_endpoint: uri,
  revocation_endpoint: Schema.optional(uri),
  introspection_endpoint: Schema.optional(uri),
  jwks_uri: Schema.optional(uri),
  scopes_supported: Schema.optional(strings),
  response_types_supported: Schema.optional(strings),
  response_modes_supported: Schema.optional(strings),
  grant_types_supported: Schema.optional(strings),
  code_challenge_methods_supported: Schema.optional(strings),
  token_endpoint_auth_methods_supported: Schema.optional(strings),
  revocation_endpoint_auth_methods_supported: Schema.optional(strings),
  introspection_endpoint_auth_methods_supported: Schema.optional(strings),
  authorization_response_iss_parameter_supported: Schema.optional(Schema.Boolean),
  service_documentation: Schema.optional(uri)
}).annotations({ description: "RFC 8414" })

/** Each body by the name of its component in the OpenAPI document. */
export const oauthWireSchemas = {
  OAuthError: OAuthErrorBody,
  OAuthTokens: TokenResponse,
  TokenRequest,
  RevokeRequest,
  IntrospectionRequest,
  Introspection,
  ProtectedResourceMetadata,
  LoginRequest,
  SessionToken,
  Jwks,
  AuthorizationServerMetadata
} as const
