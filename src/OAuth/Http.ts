/**
 * The authorization server's routes, outside the `/v1` HttpApi: they answer in RFC 6749 / 7009 / 8414 forms
 * (and HTML for the sign-in and consent pages), never in the `/v1` envelope.
 *
 *   GET  /oauth/authorize            sign-in page (or an error page / error redirect)
 *   POST /oauth/authorize/sign-in    the sign-in form → 303 to the consent page (Post/Redirect/Get)
 *   GET  /oauth/authorize/consent    the consent page, for the browser that signed in (a cookie binds it)
 *   POST /oauth/authorize/consent    the consent form → 302 to the client with `code` or `error=access_denied`
 *   GET  /oauth/assets/styles.css    the pages' stylesheet: the dashboard's, with the pages' additions
 *   POST /oauth/token                authorization_code and refresh_token grants
 *   POST /oauth/revoke               RFC 7009
 *   POST /oauth/introspect           RFC 7662, for confidential clients
 *   POST /oauth/login                JWT session from {email, password}
 *   POST /oauth/logout               ends the bearer session JWT's session
 *   GET  /oauth/jwks.json            the JWT verification keys
 *   GET  /.well-known/oauth-authorization-server[/oauth]   RFC 8414 metadata
 *   GET  /.well-known/oauth-protected-resource[/v1]         RFC 9728 metadata of the resource `{base_url}/v1`
 *
 * `/token`, `/revoke` and `/introspect` are limited per authenticated client, and per IP for the calls whose
 * client authentication fails (src/OAuth/Limits.ts).
 */

import { join } from "node:path"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Effect, Option, ParseResult, Schema } from "effect"
import { makeCurrentIssuer, PROTECTED_RESOURCE_METADATA_PATH } from "../Auth/Issuer.js"
import { JWT_TTL_SECONDS, SigningKeys } from "../Auth/Jwt.js"
import { SignIn, SignInFailed } from "../Auth/SignIn.js"
import { OAuthError } from "../Domain/OAuth.js"
import { scopeNames } from "../Domain/Scopes.js"
import { sha256Hex } from "../Domain/Secrets.js"
import { Sessions } from "../Sessions/Sessions.js"
import { Users } from "../Users/Users.js"
import { OAuthAuthorizations, PENDING_TTL_SECONDS } from "./Authorizations.js"
import { type ClientCredentials, OAuthClients } from "./Clients.js"
import { type ClientBucket, OAuthLimits } from "./Limits.js"
import { consentPage, errorPage, STYLESHEET_PATH, signInPage } from "./Pages.js"
import { storable } from "./Secrets.js"
import { type IssuedTokens, OAuthTokens } from "./Tokens.js"
import * as Wire from "./Wire.js"

const DASHBOARD_STYLES = join(import.meta.dir, "..", "..", "dashboard", "styles.css")
const PAGE_STYLES = join(import.meta.dir, "pages.css")

/**
 * The consent page's cookie: the browser that signed in holds the consent form's token, so only it is shown the
 * consent page (its address carries the pending authorization's id, which alone is not enough). One cookie per
 * pending authorization, so two authorizations in two tabs do not clash; it lives as long as the authorization.
 */
const consentCookie = (pending: string) => `pcs_consent_${pending}`
const setConsentCookie = (authUrl: string, pending: string, value: string, maxAge: number) =>
  [
    `${consentCookie(pending)}=${value}`,
    `Path=${new URL(authUrl).pathname}/authorize`,
    `Max-Age=${maxAge}`,
    "HttpOnly",
    "SameSite=Lax",
    ...(authUrl.startsWith("https:") ? ["Secure"] : [])
  ].join("; ")

const MAX_BODY_BYTES = 64 * 1024

const noStore = { "cache-control": "no-store", pragma: "no-cache" }

/**
 * No script at all, styles from this service only. No `form-action`: Chromium applies it to the redirect that
 * follows a form's POST, and the consent form's answer is a redirect to the client, wherever that is.
 */
const pageHeaders = {
  ...noStore,
  "x-frame-options": "DENY",
  "content-security-policy":
    "default-src 'none'; style-src 'self'; img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff"
}

const html = (body: string, status = 200) =>
  HttpServerResponse.text(body, { status, contentType: "text/html; charset=utf-8", headers: pageHeaders })

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers: { ...noStore, ...headers } })

/**
 * An RFC 6749 §5.2 answer: 401 for `invalid_client` (with `WWW-Authenticate: Basic` when the client tried HTTP
 * Basic), 400 for the rest.
 */
const oauthError = (error: OAuthError, triedBasic: boolean) =>
  json(
    { error: error.error, error_description: error.description } satisfies typeof Wire.OAuthErrorBody.Encoded,
    error.error === "invalid_client" ? 401 : 400,
    error.error === "invalid_client" && triedBasic ? { "www-authenticate": `Basic realm="oauth", charset="UTF-8"` } : {}
  )

/** A 429 in RFC 6749 form: `temporarily_unavailable`, which generic clients know to retry (no `rate_limited` here). */
const tooMany = (retryAfter: number, description = "Too many requests") =>
  json({ error: "temporarily_unavailable", error_description: `${description}; retry in ${retryAfter} s` }, 429, {
    "retry-after": String(retryAfter)
  })

/** A call over its limit (a client's, or its IP's for failed client authentication): answered with `tooMany`. */
class Throttled extends Schema.TaggedError<Throttled>()("Throttled", {
  retryAfter: Schema.Number,
  description: Schema.String
}) {}

const contentType = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";", 1)[0]?.trim().toLowerCase() ?? ""

/** The body's parameters, from `application/x-www-form-urlencoded` or a JSON object of strings; a key once. */
const readParams = Effect.fnUntraced(function* (request: HttpServerRequest.HttpServerRequest, allowForm = true) {
  const type = contentType(request)
  const invalid = (description: string) => OAuthError.of("invalid_request", description)
  const declared = Number(request.headers["content-length"] ?? "0")
  if (declared > MAX_BODY_BYTES) return yield* invalid("The body is too large")
  const text = yield* Effect.mapError(request.text, () => invalid("The body could not be read"))
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) return yield* invalid("The body is too large")
  const params: Record<string, string | undefined> = {}
  if (type === "application/x-www-form-urlencoded" && allowForm) {
    for (const [key, value] of new URLSearchParams(text)) {
      if (key in params) return yield* invalid(`${key} is repeated`)
      params[key] = value
    }
    return params
  }
  if (type === "application/json") {
    const parsed = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: () => invalid("The body is not valid JSON")
    })
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      return yield* invalid("The body must be a JSON object")
    }
    for (const [key, value] of Object.entries(parsed)) {
      if (typeof value !== "string") return yield* invalid(`${key} must be a string`)
      params[key] = value
    }
    return params
  }
  return yield* invalid(
    allowForm
      ? "Send the body as application/x-www-form-urlencoded or application/json"
      : "Send the body as application/json"
  )
})

/** `Authorization: Basic` client credentials (RFC 6749 §2.3.1: each part form-urlencoded before base64). */
const basicCredentials = Effect.fnUntraced(function* (request: HttpServerRequest.HttpServerRequest) {
  const header = request.headers.authorization
  if (header === undefined) return Option.none()
  const encoded = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header)?.[1]
  const invalid = OAuthError.of("invalid_client", "Malformed Basic credentials")
  if (encoded === undefined) return yield* invalid
  const decoded = Buffer.from(encoded, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  if (colon < 0) return yield* invalid
  // Text no engine can store (a NUL byte, a lone surrogate) is no client's: refused here, before any query.
  const part = (text: string) =>
    Effect.flatMap(
      Effect.try({ try: () => decodeURIComponent(text.replace(/\+/g, " ")), catch: () => invalid }),
      (value) => (storable(value) ? Effect.succeed(value) : Effect.fail(invalid))
    )
  return Option.some({ id: yield* part(decoded.slice(0, colon)), secret: yield* part(decoded.slice(colon + 1)) })
})

const clientIp = (request: HttpServerRequest.HttpServerRequest) =>
  Option.getOrElse(request.remoteAddress, () => "unknown")

/** A parameter that may be absent (present but empty is kept: some checks tell the two apart). */
const Text = Schema.optionalWith(Schema.String, { as: "Option" })
/** A form field read as empty when absent. */
const Field = Schema.optionalWith(Schema.String, { default: () => "" })
const required = Wire.requiredParam
/** A space-separated list (`scope`), split; blank is empty. */
const SpaceSeparated = Schema.transform(Schema.String, Schema.Array(Schema.String), {
  strict: true,
  decode: (text) => (text.trim() === "" ? [] : text.split(" ").filter((item) => item !== "")),
  encode: (items) => items.join(" ")
})

/** `GET /authorize` (RFC 6749 §4.1.1, RFC 7636 §4.3). Never fails: what is wrong is the service's to answer. */
const AuthorizeQuery = Schema.Struct({
  client_id: Text,
  redirect_uri: Text,
  response_type: Text,
  scope: Schema.optionalWith(SpaceSeparated, { default: () => [] }),
  state: Text,
  code_challenge: Text,
  code_challenge_method: Text
}).pipe(
  Schema.rename({
    client_id: "clientId",
    redirect_uri: "redirectUri",
    response_type: "responseType",
    code_challenge: "codeChallenge",
    code_challenge_method: "codeChallengeMethod"
  })
)

/** The sign-in form (and the consent form's first two fields). */
const SignInForm = Schema.Struct({ pending: Field, csrf_token: Field, email: Field, password: Field })
const ConsentForm = Schema.Struct({ pending: Field, csrf_token: Field, decision: Schema.Literal("approve", "deny") })

/** `client_secret_post` credentials (§2.3.1). */
const ClientParams = Schema.Struct({ client_id: Text, client_secret: Text })
const CodeExchangeParams = Schema.Struct({
  code: required("code"),
  redirect_uri: required("redirect_uri"),
  code_verifier: Text
}).pipe(Schema.rename({ redirect_uri: "redirectUri", code_verifier: "codeVerifier" }))
const RefreshParams = Schema.Struct({
  refresh_token: required("refresh_token"),
  scope: Schema.optionalWith(SpaceSeparated, { as: "Option" })
}).pipe(Schema.rename({ refresh_token: "refreshToken" }))

/** Parameters → a typed request; the first thing wrong is the `invalid_request` description. */
const decodeParams =
  <A, I>(schema: Schema.Schema<A, I>) =>
  (params: Record<string, string | undefined>) =>
    Schema.decodeUnknown(schema)(params).pipe(
      Effect.mapError((error) =>
        OAuthError.of(
          "invalid_request",
          ParseResult.ArrayFormatter.formatErrorSync(error)[0]?.message ?? "The request is invalid"
        )
      )
    )

/** Who the client says it is: HTTP Basic or `client_id`/`client_secret` in the body, never both. */
const clientCredentials = Effect.fnUntraced(function* (
  basic: Option.Option<{ readonly id: string; readonly secret: string }>,
  params: Record<string, string | undefined>
) {
  const { client_id: clientId, client_secret: clientSecret } = yield* decodeParams(ClientParams)(params)
  if (Option.isSome(basic)) {
    if (Option.isSome(clientSecret))
      return yield* OAuthError.of("invalid_request", "Use one client authentication method, not two")
    if (Option.isSome(clientId) && clientId.value !== basic.value.id) {
      return yield* OAuthError.of("invalid_request", "client_id does not match the Basic credentials")
    }
    const credentials: ClientCredentials = { id: basic.value.id, secret: Option.some(basic.value.secret) }
    return credentials
  }
  if (Option.isNone(clientId) || clientId.value === "") {
    return yield* OAuthError.of("invalid_client", "Client authentication failed")
  }
  const credentials: ClientCredentials = { id: clientId.value, secret: clientSecret }
  return credentials
})

/** The token endpoint's answer (§5.1). */
const tokenResponse = (issued: IssuedTokens): typeof Wire.TokenResponse.Encoded => ({
  access_token: issued.accessToken,
  token_type: "Bearer",
  expires_in: issued.expiresIn,
  refresh_token: issued.refreshToken,
  scope: issued.scope
})

/** The redirect back to the client, with `iss` (RFC 9207) and the client's `state`. */
const redirectTo = (redirectUri: string, params: Record<string, string | null | undefined>) => {
  const url = new URL(redirectUri)
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null) url.searchParams.set(key, value)
  }
  return HttpServerResponse.redirect(url.toString(), { status: 302, headers: noStore })
}

/** A defect on these routes is answered in their own form, not the `/v1` envelope. */
const guardJson = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchAllCause(handler, (cause) => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure) && failure.value instanceof OAuthError) {
      const error = failure.value
      return Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
        oauthError(error, request.headers.authorization !== undefined)
      )
    }
    if (Option.isSome(failure) && failure.value instanceof Throttled) {
      return Effect.succeed(tooMany(failure.value.retryAfter, failure.value.description))
    }
    if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
    return Effect.as(
      Effect.logError("unexpected failure", cause),
      json({ error: "server_error", error_description: "An internal error occurred" }, 500)
    )
  })

const guardHtml = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchAllCause(handler, (cause) => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure) && failure.value instanceof OAuthError) {
      return Effect.succeed(html(errorPage(failure.value.description), 400))
    }
    if (Cause.isInterruptedOnly(cause)) return Effect.interrupt
    return Effect.as(Effect.logError("unexpected failure", cause), html(errorPage("An internal error occurred."), 500))
  })

/**
 * Form actions are absolute, built from the issuer: a relative one resolves against the page's own URL, and the
 * sign-in page is served both at `/oauth/authorize` and (after a wrong password) at `/oauth/authorize/sign-in`.
 */
const signInAction = (authUrl: string) => `${authUrl}/authorize/sign-in`
const consentAction = (authUrl: string) => `${authUrl}/authorize/consent`
const expiredForm = "This sign-in form has expired or was already used."

export const OAuthRoutes = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const clients = yield* OAuthClients
    const authorizations = yield* OAuthAuthorizations
    const tokens = yield* OAuthTokens
    const keys = yield* SigningKeys
    const signIn = yield* SignIn
    const users = yield* Users
    const sessions = yield* Sessions
    const currentIssuer = yield* makeCurrentIssuer
    const limits = yield* OAuthLimits

    /** The body's parameters and the client they (or HTTP Basic) authenticate. */
    const authenticatedCall = Effect.fnUntraced(function* (
      request: HttpServerRequest.HttpServerRequest,
      confidentialOnly: boolean
    ) {
      const basic = yield* basicCredentials(request)
      const params = yield* readParams(request)
      const client = yield* Effect.flatMap(clientCredentials(basic, params), clients.authenticate)
      if (confidentialOnly && client.isPublic) {
        return yield* OAuthError.of("invalid_client", "Only a confidential client may introspect tokens")
      }
      return { client, params }
    })

    /**
     * The client of a call to `/token`, `/revoke` or `/introspect`, with the body's parameters, under the limits:
     * nothing is looked at while the IP's allowance for failed client authentication is spent; a call that
     * authenticates no client (`confidentialOnly`: no public client either) counts against that; an authenticated
     * client spends one of its own.
     */
    const limitedClient = Effect.fnUntraced(function* (bucket: ClientBucket, confidentialOnly = false) {
      const request = yield* HttpServerRequest.HttpServerRequest
      const ip = clientIp(request)
      const guard = yield* limits.ipAllowed(ip)
      if (!guard.allowed) {
        return yield* new Throttled({
          retryAfter: guard.retryAfter,
          description: "Too many failed client authentications from this address"
        })
      }
      const attempt = yield* Effect.either(authenticatedCall(request, confidentialOnly))
      if (attempt._tag === "Left") {
        yield* limits.ipFailed(ip)
        return yield* attempt.left
      }
      const { client } = attempt.right
      // A public client proves nothing but its public id: its allowance is per address, so no one spends it for all.
      const counted = yield* limits.client(client.isPublic ? `${client.id}@${ip}` : client.id, bucket)
      if (!counted.allowed) {
        return yield* new Throttled({
          retryAfter: counted.retryAfter,
          description: "Too many requests for this client"
        })
      }
      return attempt.right
    })

    // The stylesheet, read once on first use: the dashboard's, then the pages' own additions.
    const stylesheet = yield* Effect.cached(
      Effect.tryPromise(async () => {
        const text = `${await Bun.file(DASHBOARD_STYLES).text()}\n${await Bun.file(PAGE_STYLES).text()}`
        return { text, etag: `"${sha256Hex(text).slice(0, 22)}"` }
      })
    )
    yield* router.get(
      STYLESHEET_PATH,
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const styles = yield* stylesheet
        const headers = { "cache-control": "no-cache", etag: styles.etag, "x-content-type-options": "nosniff" }
        if (request.headers["if-none-match"] === styles.etag) return HttpServerResponse.empty({ status: 304, headers })
        return HttpServerResponse.text(styles.text, { contentType: "text/css; charset=utf-8", headers })
      }).pipe(
        Effect.catchAll((error) =>
          Effect.as(
            Effect.logError("the authorization pages' stylesheet could not be read", error),
            HttpServerResponse.text("The stylesheet could not be read.", { status: 500 })
          )
        )
      )
    )

    const metadata = guardJson(
      Effect.gen(function* () {
        const { authUrl } = yield* currentIssuer
        const answer: typeof Wire.AuthorizationServerMetadata.Encoded = {
          issuer: authUrl,
          authorization_endpoint: `${authUrl}/authorize`,
          token_endpoint: `${authUrl}/token`,
          revocation_endpoint: `${authUrl}/revoke`,
          introspection_endpoint: `${authUrl}/introspect`,
          jwks_uri: `${authUrl}/jwks.json`,
          response_types_supported: ["code"],
          response_modes_supported: ["query"],
          grant_types_supported: ["authorization_code", "refresh_token"],
          code_challenge_methods_supported: ["S256"],
          token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
          revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
          introspection_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
          scopes_supported: scopeNames,
          authorization_response_iss_parameter_supported: true,
          service_documentation: `${authUrl.replace(/\/oauth$/, "")}/docs`
        }
        return json(answer, 200, { "cache-control": "public, max-age=300" })
      })
    )
    yield* router.get("/.well-known/oauth-authorization-server/oauth", metadata)
    yield* router.get("/.well-known/oauth-authorization-server", metadata)

    // RFC 9728: the resource `{base_url}/v1`, at the RFC's place for it and at the bare well-known address.
    const resourceMetadata = guardJson(
      Effect.gen(function* () {
        const { authUrl, baseUrl } = yield* currentIssuer
        const answer: typeof Wire.ProtectedResourceMetadata.Encoded = {
          resource: `${baseUrl}/v1`,
          authorization_servers: [authUrl],
          scopes_supported: scopeNames,
          bearer_methods_supported: ["header"],
          resource_name: "Project Collaboration Service API",
          resource_documentation: `${baseUrl}/docs`
        }
        return json(answer, 200, { "cache-control": "public, max-age=300" })
      })
    )
    yield* router.get(PROTECTED_RESOURCE_METADATA_PATH, resourceMetadata)
    yield* router.get("/.well-known/oauth-protected-resource", resourceMetadata)

    yield* router.get(
      "/oauth/jwks.json",
      guardJson(Effect.map(keys.jwks, (jwks) => json(jwks, 200, { "cache-control": "public, max-age=60" })))
    )

    yield* router.get(
      "/oauth/authorize",
      guardHtml(
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const { authUrl } = yield* currentIssuer
          const params: Record<string, string> = {}
          for (const [key, value] of new URL(request.url, "http://localhost").searchParams) params[key] ??= value
          const query = yield* Effect.orDie(Schema.decodeUnknown(AuthorizeQuery)(params))
          return yield* authorizations.start(query).pipe(
            Effect.map((started) =>
              html(
                signInPage({
                  action: signInAction(authUrl),
                  pending: started.pending.id,
                  csrf: started.csrf,
                  clientName: started.client.name
                })
              )
            ),
            Effect.catchTags({
              UntrustedAuthorizationRequest: (untrusted) => Effect.succeed(html(errorPage(untrusted.message), 400)),
              AuthorizationRejected: (rejected) =>
                Effect.succeed(
                  redirectTo(rejected.redirectUri, {
                    error: rejected.error,
                    error_description: rejected.description,
                    state: rejected.state,
                    iss: authUrl
                  })
                )
            })
          )
        })
      )
    )

    yield* router.post(
      "/oauth/authorize/sign-in",
      guardHtml(
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const { authUrl } = yield* currentIssuer
          const form = yield* Effect.flatMap(readParams(request), decodeParams(SignInForm))
          const awaiting = yield* authorizations.find({ pending: form.pending, csrf: form.csrf_token }, "sign_in")
          if (Option.isNone(awaiting)) return html(errorPage(expiredForm), 400)
          const again = (error: string, status: number) =>
            html(
              signInPage({
                action: signInAction(authUrl),
                pending: form.pending,
                csrf: form.csrf_token,
                clientName: awaiting.value.client.name,
                email: form.email,
                error
              }),
              status
            )
          const perIp = yield* signIn.perIp("login", clientIp(request))
          if (!perIp.allowed) return again("Too many sign-in attempts; wait a minute and try again.", 429)
          const user = yield* Effect.either(signIn.verify(form.email, form.password))
          if (user._tag === "Left") {
            return user.left.reason === "limited"
              ? again("Too many failed sign-ins for this account; try again later.", 429)
              : user.left.reason === "suspended"
                ? again(SignInFailed.suspendedMessage, 403)
                : again(SignInFailed.invalidMessage, 401)
          }
          // This sign-in serves this authorization alone: it starts no session, so it records no `session.created`
          // (docs/audit.md); the consent that follows records `authorization.granted`, a wrong password
          // `session.failed`.
          const pending = awaiting.value.pending.id
          const csrf = yield* authorizations.signedIn(pending, user.right.id)
          // Post/Redirect/Get: the consent page has its own address, so a reload never posts the password again.
          return HttpServerResponse.empty({
            status: 303,
            headers: {
              ...noStore,
              location: `${consentAction(authUrl)}?${new URLSearchParams({ pending })}`,
              "set-cookie": setConsentCookie(authUrl, pending, csrf, PENDING_TTL_SECONDS)
            }
          })
        })
      )
    )

    yield* router.get(
      "/oauth/authorize/consent",
      guardHtml(
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const { authUrl } = yield* currentIssuer
          const pending = new URL(request.url, "http://localhost").searchParams.get("pending") ?? ""
          const csrf = request.cookies[consentCookie(pending)] ?? ""
          const awaiting = yield* authorizations.find({ pending, csrf }, "consent")
          if (Option.isNone(awaiting) || awaiting.value.pending.userId === null) {
            return html(errorPage(expiredForm), 400)
          }
          const { client, scopes } = awaiting.value
          const found = awaiting.value.pending
          const user = yield* Effect.either(users.get(awaiting.value.pending.userId))
          if (user._tag === "Left") return html(errorPage(expiredForm), 400)
          const restart = new URL(`${authUrl}/authorize`)
          for (const [key, value] of Object.entries({
            response_type: "code",
            client_id: client.id,
            redirect_uri: found.redirectUri,
            scope: found.scope,
            state: found.state,
            code_challenge: found.codeChallenge,
            code_challenge_method: found.codeChallenge === null ? null : "S256"
          })) {
            if (value !== null) restart.searchParams.set(key, value)
          }
          return html(
            consentPage({
              action: consentAction(authUrl),
              pending,
              csrf,
              clientName: client.name,
              scopes,
              user: { name: user.right.name, email: user.right.email },
              restart: restart.toString(),
              redirectUri: found.redirectUri
            })
          )
        })
      )
    )

    yield* router.post(
      "/oauth/authorize/consent",
      guardHtml(
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const { authUrl } = yield* currentIssuer
          const params = yield* readParams(request)
          const form = yield* Effect.option(decodeParams(ConsentForm)(params))
          if (Option.isNone(form)) return html(errorPage("The consent form was not answered."), 400)
          const { csrf_token: csrf, decision, pending } = form.value
          const decided = yield* authorizations.decide({ pending, csrf }, decision === "approve")
          if (Option.isNone(decided)) return html(errorPage(expiredForm), 400)
          const { outcome, redirectUri, state } = decided.value
          // A user suspended since signing in is told so, as the sign-in form tells them; the application is told
          // nothing (no redirect), as it is not when the sign-in refuses them.
          const answer =
            outcome._tag === "Approved"
              ? redirectTo(redirectUri, { code: outcome.code, state, iss: authUrl })
              : outcome._tag === "Suspended"
                ? html(errorPage(SignInFailed.suspendedMessage, "Nothing was shared with the application."), 403)
                : redirectTo(redirectUri, {
                    error: "access_denied",
                    error_description: "The user refused the request",
                    state,
                    iss: authUrl
                  })
          // The answered authorization's cookie is spent.
          return HttpServerResponse.setHeader(answer, "set-cookie", setConsentCookie(authUrl, pending, "", 0))
        })
      )
    )

    yield* router.post(
      "/oauth/token",
      guardJson(
        Effect.gen(function* () {
          const { client, params } = yield* limitedClient("tokens")
          const { grant_type: grantType } = yield* decodeParams(Wire.TokenRequest)(params)
          switch (grantType) {
            case "authorization_code":
              return json(
                tokenResponse(yield* tokens.exchangeCode(client, yield* decodeParams(CodeExchangeParams)(params)))
              )
            case "refresh_token":
              return json(tokenResponse(yield* tokens.refresh(client, yield* decodeParams(RefreshParams)(params))))
            default:
              return yield* OAuthError.of(
                "unsupported_grant_type",
                "grant_type must be authorization_code or refresh_token"
              )
          }
        })
      )
    )

    yield* router.post(
      "/oauth/revoke",
      guardJson(
        Effect.gen(function* () {
          const { client, params } = yield* limitedClient("tokens")
          const { token } = yield* decodeParams(Wire.RevokeRequest)(params)
          yield* tokens.revoke(client, token)
          return json({})
        })
      )
    )

    // RFC 7662: `token_type_hint` is accepted and not needed (our tokens say what they are).
    yield* router.post(
      "/oauth/introspect",
      guardJson(
        Effect.gen(function* () {
          const { client, params } = yield* limitedClient("introspection", true)
          const { token } = yield* decodeParams(Wire.IntrospectionRequest)(params)
          const answer: typeof Wire.Introspection.Encoded = yield* tokens.introspect(client, token)
          return json(answer)
        })
      )
    )

    yield* router.post(
      "/oauth/login",
      guardJson(
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const perIp = yield* signIn.perIp("login", clientIp(request))
          if (!perIp.allowed) return tooMany(perIp.retryAfter, "Too many sign-in attempts from this address")
          const params = yield* Effect.flatMap(readParams(request, false), decodeParams(Wire.LoginRequest))
          const user = yield* Effect.either(signIn.verify(params.email, params.password))
          if (user._tag === "Left") {
            return user.left.reason === "limited"
              ? tooMany(user.left.retryAfter, "Too many failed sign-ins for this account")
              : json(
                  {
                    error: "invalid_grant",
                    error_description:
                      user.left.reason === "suspended" ? SignInFailed.suspendedMessage : SignInFailed.invalidMessage
                  },
                  401
                )
          }
          const issuer = yield* currentIssuer
          const session = yield* sessions.start(user.right.id, {
            ip: Option.getOrNull(request.remoteAddress),
            userAgent: request.headers["user-agent"] ?? null
          })
          const token = yield* keys.signSession(user.right, issuer, session)
          const answer: typeof Wire.SessionToken.Encoded = {
            access_token: token,
            token_type: "Bearer",
            expires_in: JWT_TTL_SECONDS
          }
          return json(answer)
        })
      )
    )

    // Ends the session whose JWT is the bearer: it answers 401 at once, on every replica. 204 when it is ended (or
    // had ended already); 401 `invalid_token` for a bearer that is no session JWT of this service.
    yield* router.post(
      "/oauth/logout",
      guardJson(
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const token = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? "")?.[1] ?? ""
          const issuer = yield* currentIssuer
          const principal = yield* Effect.either(keys.verify(token, issuer))
          if (principal._tag === "Left") {
            return json({ error: "invalid_token", error_description: principal.left.message }, 401, {
              "www-authenticate": `Bearer realm="oauth", error="invalid_token"`
            })
          }
          yield* sessions.end(principal.right)
          return HttpServerResponse.empty({ status: 204, headers: noStore })
        })
      )
    )
  })
)
