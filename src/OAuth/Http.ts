/**
 * The authorization server's routes, outside the `/v1` HttpApi: they answer in RFC 6749 / 7009 / 8414 forms
 * (and HTML for the sign-in and consent pages), never in the `/v1` envelope.
 *
 *   GET  /oauth/authorize            sign-in page (or an error page / error redirect)
 *   POST /oauth/authorize/sign-in    the sign-in form → the consent page
 *   POST /oauth/authorize/consent    the consent form → 302 to the client with `code` or `error=access_denied`
 *   POST /oauth/token                authorization_code and refresh_token grants
 *   POST /oauth/revoke               RFC 7009
 *   POST /oauth/login                JWT session from {email, password}
 *   GET  /oauth/jwks.json            the JWT verification keys
 *   GET  /.well-known/oauth-authorization-server[/oauth]   RFC 8414 metadata
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option } from "effect"
import { currentIssuer } from "../Auth/Issuer.js"
import { JWT_TTL_SECONDS, SigningKeys } from "../Auth/Jwt.js"
import { SignIn, SignInFailed } from "../Auth/SignIn.js"
import { scopeNames } from "../Domain/Scopes.js"
import { OAuth, OAuthError } from "./OAuth.js"
import { consentPage, errorPage, signInPage } from "./Pages.js"

const MAX_BODY_BYTES = 64 * 1024

const noStore = { "cache-control": "no-store", pragma: "no-cache" }

const pageHeaders = {
  ...noStore,
  "x-frame-options": "DENY",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff"
}

const html = (body: string, status = 200) =>
  HttpServerResponse.text(body, { status, contentType: "text/html; charset=utf-8", headers: pageHeaders })

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers: { ...noStore, ...headers } })

const oauthError = (error: OAuthError) =>
  json(
    { error: error.error, error_description: error.description },
    error.status,
    error.basic ? { "www-authenticate": `Basic realm="oauth", charset="UTF-8"` } : {}
  )

const tooMany = (retryAfter: number) =>
  json(
    { error: "rate_limited", error_description: "Too many requests; retry later" },
    429,
    { "retry-after": String(retryAfter) }
  )

const contentType = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()

/** The body's parameters, from `application/x-www-form-urlencoded` or a JSON object of strings. */
const readParams = (request: HttpServerRequest.HttpServerRequest, allowForm = true) =>
  Effect.gen(function*() {
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
      const parsed = yield* Effect.try({ try: (): unknown => JSON.parse(text), catch: () => invalid("The body is not valid JSON") })
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
      allowForm ? "Send the body as application/x-www-form-urlencoded or application/json" : "Send the body as application/json"
    )
  })

/** `Authorization: Basic` client credentials (RFC 6749 §2.3.1: each part form-urlencoded before base64). */
const basicCredentials = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const header = request.headers["authorization"]
    if (header === undefined) return Option.none()
    const match = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header)
    const invalid = OAuthError.of("invalid_client", "Malformed Basic credentials", 401, true)
    if (match === null) return yield* invalid
    const decoded = Buffer.from(match[1]!, "base64").toString("utf8")
    const colon = decoded.indexOf(":")
    if (colon < 0) return yield* invalid
    const part = (text: string) => Effect.try({ try: () => decodeURIComponent(text.replace(/\+/g, " ")), catch: () => invalid })
    return Option.some({ id: yield* part(decoded.slice(0, colon)), secret: yield* part(decoded.slice(colon + 1)) })
  })

const clientIp = (request: HttpServerRequest.HttpServerRequest) => Option.getOrElse(request.remoteAddress, () => "unknown")

/** A defect on these routes is answered in their own form, not the `/v1` envelope. */
const guardJson = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.catchAllCause(handler, (cause) => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure) && failure.value instanceof OAuthError) return Effect.succeed(oauthError(failure.value))
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
  Effect.gen(function*() {
    const oauth = yield* OAuth
    const keys = yield* SigningKeys
    const signIn = yield* SignIn

    const metadata = guardJson(Effect.gen(function*() {
      const { authUrl } = yield* currentIssuer
      return json({
        issuer: authUrl,
        authorization_endpoint: `${authUrl}/authorize`,
        token_endpoint: `${authUrl}/token`,
        revocation_endpoint: `${authUrl}/revoke`,
        jwks_uri: `${authUrl}/jwks.json`,
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
        revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
        scopes_supported: scopeNames,
        authorization_response_iss_parameter_supported: true,
        service_documentation: `${authUrl.replace(/\/oauth$/, "")}/docs`
      }, 200, { "cache-control": "public, max-age=300" })
    }))
    yield* router.get("/.well-known/oauth-authorization-server/oauth", metadata)
    yield* router.get("/.well-known/oauth-authorization-server", metadata)

    yield* router.get("/oauth/jwks.json", guardJson(Effect.map(keys.jwks, (jwks) =>
      json(jwks, 200, { "cache-control": "public, max-age=60" }))))

    yield* router.get("/oauth/authorize", guardHtml(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { authUrl } = yield* currentIssuer
      const query = new URL(request.url, "http://localhost").searchParams
      const params: Record<string, string | undefined> = {}
      for (const [key, value] of query) params[key] ??= value
      const outcome = yield* oauth.startAuthorization(params, authUrl)
      switch (outcome._tag) {
        case "ErrorPage":
          return html(errorPage(outcome.message), 400)
        case "Redirect":
          return HttpServerResponse.redirect(outcome.location, { status: 302, headers: noStore })
        case "SignIn":
          return html(signInPage({
            action: signInAction(authUrl),
            pending: outcome.pending,
            csrf: outcome.csrf,
            clientName: outcome.client.name
          }))
      }
    })))

    yield* router.post("/oauth/authorize/sign-in", guardHtml(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { authUrl } = yield* currentIssuer
      const params = yield* readParams(request)
      const pending = yield* oauth.pendingFor(params.pending ?? "", params.csrf_token ?? "", "sign_in")
      if (Option.isNone(pending)) return html(errorPage(expiredForm), 400)
      const again = (error: string, status: number) =>
        html(signInPage({
          action: signInAction(authUrl),
          pending: params.pending ?? "",
          csrf: params.csrf_token ?? "",
          clientName: pending.value.client.name,
          email: params.email ?? "",
          error
        }), status)
      const perIp = yield* signIn.perIp("login", clientIp(request))
      if (!perIp.allowed) return again("Too many sign-in attempts; wait a minute and try again.", 429)
      const user = yield* Effect.either(signIn.verify(params.email ?? "", params.password ?? ""))
      if (user._tag === "Left") {
        return user.left.reason === "limited"
          ? again("Too many failed sign-ins for this account; try again later.", 429)
          : again(SignInFailed.invalidMessage, 401)
      }
      const csrf = yield* oauth.signedIn(pending.value.row.id, user.right.id)
      return html(consentPage({
        action: consentAction(authUrl),
        pending: pending.value.row.id,
        csrf,
        clientName: pending.value.client.name,
        scopes: pending.value.scopes
      }))
    })))

    yield* router.post("/oauth/authorize/consent", guardHtml(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const { authUrl } = yield* currentIssuer
      const params = yield* readParams(request)
      if (params.decision !== "approve" && params.decision !== "deny") {
        return html(errorPage("The consent form was not answered."), 400)
      }
      const location = yield* oauth.decide(params.pending ?? "", params.csrf_token ?? "", params.decision === "approve", authUrl)
      if (Option.isNone(location)) return html(errorPage(expiredForm), 400)
      return HttpServerResponse.redirect(location.value, { status: 302, headers: noStore })
    })))

    yield* router.post("/oauth/token", guardJson(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const perIp = yield* signIn.perIp("token", clientIp(request))
      if (!perIp.allowed) return tooMany(perIp.retryAfter)
      const basic = yield* basicCredentials(request)
      const params = yield* readParams(request)
      const tokens = yield* oauth.token(params, basic)
      return json(tokens)
    })))

    yield* router.post("/oauth/revoke", guardJson(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const basic = yield* basicCredentials(request)
      const params = yield* readParams(request)
      yield* oauth.revoke(params, basic)
      return json({})
    })))

    yield* router.post("/oauth/login", guardJson(Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const perIp = yield* signIn.perIp("login", clientIp(request))
      if (!perIp.allowed) return tooMany(perIp.retryAfter)
      const params = yield* readParams(request, false)
      if (params.email === undefined || params.password === undefined) {
        return yield* OAuthError.of("invalid_request", "email and password are required")
      }
      const user = yield* Effect.either(signIn.verify(params.email, params.password))
      if (user._tag === "Left") {
        return user.left.reason === "limited"
          ? tooMany(user.left.retryAfter)
          : json({ error: "invalid_grant", error_description: SignInFailed.invalidMessage }, 401)
      }
      const issuer = yield* currentIssuer
      const token = yield* keys.signSession(user.right, issuer)
      return json({ access_token: token, token_type: "Bearer", expires_in: JWT_TTL_SECONDS })
    })))
  })
)
