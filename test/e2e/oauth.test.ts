/**
 * The OAuth 2.0 authorization server, driven by an independent client (`oauth4webapi`) against the real server:
 * the authorization-code flow through the HTML sign-in and consent forms, with client_secret_post,
 * client_secret_basic and a public client with PKCE; then the error paths.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import * as oauth from "oauth4webapi"
import { runStatement } from "../support/databases.ts"
import { startInProcess } from "../support/in-process.ts"
import { formAction, formField } from "../support/oauthPages.ts"
import type { Server } from "../support/server.ts"

const REDIRECT = "http://127.0.0.1:9/callback"
const OTHER_REDIRECT = "http://127.0.0.1:9/other"
const insecure = { [oauth.allowInsecureRequests]: true } as const

let server: Server
let as: oauth.AuthorizationServer
let issuer: URL
const user = { id: "", email: "", password: "correct horse battery" }
let confidential: { client_id: string; client_secret: string }
let publicClient: { client_id: string }

beforeAll(async () => {
  server = await startInProcess({ env: { AUTH_IP_LIMIT_PER_MINUTE: "100000" } })
  user.email = `oauth.${Math.random().toString(36).slice(2, 8)}@example.com`
  const created = await server.cli<{ id: string }>(
    "users",
    "create",
    "--email",
    user.email,
    "--name",
    "OAuth User",
    "--password",
    user.password
  )
  user.id = created.id
  confidential = await server.cli(
    "oauth-clients",
    "create",
    "--name",
    "Confidential App",
    "--redirect-uri",
    REDIRECT,
    "--redirect-uri",
    OTHER_REDIRECT
  )
  publicClient = await server.cli(
    "oauth-clients",
    "create",
    "--name",
    "Mobile App",
    "--redirect-uri",
    REDIRECT,
    "--public"
  )
  issuer = new URL(`${server.url}/oauth`)
  as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure })
  )
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

interface AuthorizeOptions {
  readonly clientId: string
  readonly scope?: string
  readonly redirectUri?: string
  readonly state?: string
  readonly challenge?: string
  readonly decision?: "approve" | "deny"
}

const authorizeUrl = (options: AuthorizeOptions) => {
  const url = new URL(as.authorization_endpoint!)
  url.searchParams.set("client_id", options.clientId)
  url.searchParams.set("redirect_uri", options.redirectUri ?? REDIRECT)
  url.searchParams.set("response_type", "code")
  url.searchParams.set("scope", options.scope ?? "read write")
  if (options.state !== undefined) url.searchParams.set("state", options.state)
  if (options.challenge !== undefined) {
    url.searchParams.set("code_challenge", options.challenge)
    url.searchParams.set("code_challenge_method", "S256")
  }
  return url
}

/**
 * After a successful sign-in: the 303 (Post/Redirect/Get) to the consent page, followed as a browser does, with
 * the cookie it set. Answers the consent page.
 */
const followToConsent = async (signedIn: globalThis.Response) => {
  expect(signedIn.status).toBe(303)
  const location = new URL(signedIn.headers.get("location")!, signedIn.url)
  expect(location.pathname).toBe("/oauth/authorize/consent")
  const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0]!
  expect(cookie).toMatch(/^pcs_consent_[0-9A-Za-z]{32}=[0-9A-Za-z]{32}$/)
  const consent = await fetch(location, { redirect: "manual", headers: { cookie } })
  return { consent, url: location.toString(), html: await consent.text(), cookie }
}

/** What a browser does: open the authorize URL, sign in, answer the consent form; answers the redirect's URL. */
const browse = async (options: AuthorizeOptions) => {
  const url = authorizeUrl(options)
  const page = await fetch(url, { redirect: "manual" })
  expect(page.status).toBe(200)
  expect(page.headers.get("content-type")).toContain("text/html")
  const signIn = await page.text()
  const pending = formField(signIn, "pending")
  const signedIn = await fetch(formAction(signIn, page.url), {
    method: "POST",
    redirect: "manual",
    body: new URLSearchParams({
      pending,
      csrf_token: formField(signIn, "csrf_token"),
      email: user.email,
      password: user.password
    })
  })
  const { consent, html: consentHtml } = await followToConsent(signedIn)
  expect(consent.status).toBe(200)
  expect(consentHtml).toContain("Allow access?")
  const answered = await fetch(formAction(consentHtml, consent.url), {
    method: "POST",
    redirect: "manual",
    body: new URLSearchParams({
      pending,
      csrf_token: formField(consentHtml, "csrf_token"),
      decision: options.decision ?? "approve"
    })
  })
  expect(answered.status).toBe(302)
  return { location: new URL(answered.headers.get("location")!), consentHtml }
}

const pkce = async () => {
  const verifier = oauth.generateRandomCodeVerifier()
  return { verifier, challenge: await oauth.calculatePKCECodeChallenge(verifier) }
}

/** The confidential client's flow up to the code (no PKCE unless asked). */
const codeFor = async (options: Partial<AuthorizeOptions> = {}) => {
  const state = oauth.generateRandomState()
  const { location } = await browse({ clientId: confidential.client_id, state, ...options })
  const params = oauth.validateAuthResponse(
    as,
    { client_id: options.clientId ?? confidential.client_id },
    location,
    state
  )
  return params.get("code")!
}

const tokenRequest = (body: Record<string, string>, headers: Record<string, string> = {}, json = false) =>
  fetch(as.token_endpoint!, {
    method: "POST",
    headers: { "content-type": json ? "application/json" : "application/x-www-form-urlencoded", ...headers },
    body: json ? JSON.stringify(body) : new URLSearchParams(body)
  })

const exchange = (code: string, extra: Record<string, string> = {}) =>
  tokenRequest({
    grant_type: "authorization_code",
    code,
    redirect_uri: REDIRECT,
    client_id: confidential.client_id,
    client_secret: confidential.client_secret,
    ...extra
  })

const expectOAuthError = async (res: Response, status: number, error: string) => {
  expect(res.status).toBe(status)
  expect(res.headers.get("content-type")).toContain("application/json")
  expect(res.headers.get("cache-control")).toBe("no-store")
  const body = await res.json()
  expect(body.error).toBe(error)
  expect(typeof body.error_description).toBe("string")
  expect(body).not.toHaveProperty("meta")
  return body
}

const me = (token: string) => server.request("/v1/users/me", { key: token })

describe("metadata", () => {
  test("RFC 8414 metadata at both well-known places, issuer = {base_url}/oauth", async () => {
    for (const path of ["/.well-known/oauth-authorization-server/oauth", "/.well-known/oauth-authorization-server"]) {
      const res = await server.request(path)
      expect(res.status).toBe(200)
      expect(res.body.issuer).toBe(`${server.url}/oauth`)
      expect(res.body.token_endpoint).toBe(`${server.url}/oauth/token`)
      expect(res.body.jwks_uri).toBe(`${server.url}/oauth/jwks.json`)
      expect(res.body.code_challenge_methods_supported).toEqual(["S256"])
      expect(res.body.grant_types_supported).toEqual(["authorization_code", "refresh_token"])
    }
    expect(as.issuer).toBe(issuer.href)
  })
})

describe("authorization-code flow with oauth4webapi", () => {
  test("client_secret_post with PKCE, then refresh with rotation", async () => {
    const client: oauth.Client = { client_id: confidential.client_id }
    const { verifier, challenge } = await pkce()
    const state = oauth.generateRandomState()
    const { location, consentHtml } = await browse({
      clientId: client.client_id,
      state,
      challenge,
      scope: "read projects:read"
    })
    expect(consentHtml).toContain("projects:read")
    expect(location.origin + location.pathname).toBe(REDIRECT)
    const params = oauth.validateAuthResponse(as, client, location, state)
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.ClientSecretPost(confidential.client_secret),
      params,
      REDIRECT,
      verifier,
      insecure
    )
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response)
    expect(tokens.token_type).toBe("bearer")
    expect(tokens.access_token).toMatch(/^pco_[0-9A-Za-z]{40}$/)
    expect(tokens.refresh_token).toMatch(/^pcr_[0-9A-Za-z]{40}$/)
    expect(tokens.expires_in).toBe(3600)
    expect(tokens.scope).toBe("read projects:read")

    const profile = await me(tokens.access_token)
    expect(profile.status).toBe(200)
    expect(profile.body.data.id).toBe(user.id)

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(
        as,
        client,
        oauth.ClientSecretPost(confidential.client_secret),
        tokens.refresh_token!,
        insecure
      )
    )
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token)
    expect(refreshed.scope).toBe("read projects:read")
    expect((await me(refreshed.access_token)).status).toBe(200)
  }, 15_000)

  test("client_secret_basic without PKCE (a confidential client may omit it)", async () => {
    const client: oauth.Client = { client_id: confidential.client_id }
    const state = oauth.generateRandomState()
    const { location } = await browse({ clientId: client.client_id, state })
    const params = oauth.validateAuthResponse(as, client, location, state)
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(confidential.client_secret),
      params,
      REDIRECT,
      oauth.nopkce,
      insecure
    )
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response)
    expect(tokens.scope).toBe("read write")
    expect((await me(tokens.access_token)).status).toBe(200)
  }, 15_000)

  test("a public client with PKCE authenticates with client_id alone", async () => {
    const client: oauth.Client = { client_id: publicClient.client_id, token_endpoint_auth_method: "none" }
    const { verifier, challenge } = await pkce()
    const state = oauth.generateRandomState()
    const { location } = await browse({ clientId: client.client_id, state, challenge, scope: "projects:read" })
    const params = oauth.validateAuthResponse(as, client, location, state)
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      REDIRECT,
      verifier,
      insecure
    )
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response)
    expect(tokens.scope).toBe("projects:read")
    expect((await server.request("/v1/projects", { key: tokens.access_token })).status).toBe(200)

    // Without the verifier the same kind of code is refused.
    const again = await browse({ clientId: client.client_id, state: "s2", challenge, scope: "projects:read" })
    const noVerifier = await tokenRequest({
      grant_type: "authorization_code",
      code: again.location.searchParams.get("code")!,
      redirect_uri: REDIRECT,
      client_id: publicClient.client_id
    })
    await expectOAuthError(noVerifier, 400, "invalid_grant")
  }, 15_000)

  test("the spec's exchange: a raw application/json body with client_secret", async () => {
    const code = await codeFor()
    const res = await tokenRequest(
      {
        grant_type: "authorization_code",
        code,
        client_id: confidential.client_id,
        client_secret: confidential.client_secret,
        redirect_uri: REDIRECT
      },
      {},
      true
    )
    expect(res.status).toBe(200)
    expect(res.headers.get("cache-control")).toBe("no-store")
    const body = await res.json()
    expect(Object.keys(body).sort()).toEqual(["access_token", "expires_in", "refresh_token", "scope", "token_type"])
    expect(body).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "read write" })
    expect((await me(body.access_token)).status).toBe(200)
  }, 15_000)
})

describe("authorize errors", () => {
  test("an unregistered redirect_uri or unknown client gets an error page, never a redirect", async () => {
    const cases = [
      authorizeUrl({ clientId: confidential.client_id, redirectUri: "http://127.0.0.1:9/evil" }),
      authorizeUrl({ clientId: confidential.client_id, redirectUri: `${REDIRECT}/` }),
      authorizeUrl({ clientId: "cli_01jd3xkq8w0000000000000000" })
    ]
    for (const url of cases) {
      const res = await fetch(url, { redirect: "manual" })
      expect(res.status).toBe(400)
      expect(res.headers.get("location")).toBeNull()
      expect(res.headers.get("content-type")).toContain("text/html")
      expect(await res.text()).toContain("cannot continue")
    }
  })

  test("a public client without PKCE is redirected with error=invalid_request", async () => {
    const res = await fetch(authorizeUrl({ clientId: publicClient.client_id, state: "st" }), { redirect: "manual" })
    expect(res.status).toBe(302)
    const location = new URL(res.headers.get("location")!)
    expect(location.origin + location.pathname).toBe(REDIRECT)
    expect(location.searchParams.get("error")).toBe("invalid_request")
    expect(location.searchParams.get("state")).toBe("st")
    expect(location.searchParams.get("code")).toBeNull()
  })

  test("unknown scopes are redirected with error=invalid_scope", async () => {
    const res = await fetch(authorizeUrl({ clientId: confidential.client_id, scope: "read admin", state: "st" }), {
      redirect: "manual"
    })
    expect(res.status).toBe(302)
    expect(new URL(res.headers.get("location")!).searchParams.get("error")).toBe("invalid_scope")
  })

  test("deny on the consent page → error=access_denied with the state", async () => {
    const { location } = await browse({ clientId: confidential.client_id, state: "deny-me", decision: "deny" })
    expect(location.searchParams.get("error")).toBe("access_denied")
    expect(location.searchParams.get("state")).toBe("deny-me")
    expect(location.searchParams.get("code")).toBeNull()
    expect(() => oauth.validateAuthResponse(as, { client_id: confidential.client_id }, location, "deny-me")).toThrow(
      oauth.AuthorizationResponseError
    )
  }, 15_000)

  test("the forms need their CSRF token; a wrong password shows the form again; consent is answered once", async () => {
    const url = authorizeUrl({ clientId: confidential.client_id, state: "csrf" })
    const page = await fetch(url)
    const html = await page.text()
    const pending = formField(html, "pending")
    const action = formAction(html, page.url)
    const forged = await fetch(action, {
      method: "POST",
      body: new URLSearchParams({ pending, csrf_token: "x".repeat(32), email: user.email, password: user.password })
    })
    expect(forged.status).toBe(400)
    expect(await forged.text()).not.toContain("Allow access?")

    const wrong = await fetch(action, {
      method: "POST",
      body: new URLSearchParams({
        pending,
        csrf_token: formField(html, "csrf_token"),
        email: user.email,
        password: "wrong password"
      })
    })
    expect(wrong.status).toBe(401)
    const wrongHtml = await wrong.text()
    expect(wrongHtml).toContain("The email or password is wrong")

    // The form shown again after a wrong password is posted from /oauth/authorize/sign-in, as a browser would.
    const ok = await fetch(formAction(wrongHtml, wrong.url), {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({
        pending,
        csrf_token: formField(wrongHtml, "csrf_token"),
        email: user.email,
        password: user.password
      })
    })
    const followed = await followToConsent(ok)
    const consentHtml = followed.html
    expect(followed.consent.status).toBe(200)
    // The consent page is shown only to the browser holding the sign-in's cookie.
    const withoutCookie = await fetch(followed.url, { redirect: "manual" })
    expect(withoutCookie.status).toBe(400)
    expect(await withoutCookie.text()).not.toContain("Allow access?")
    const wrongCookie = await fetch(followed.url, {
      redirect: "manual",
      headers: { cookie: `pcs_consent_${pending}=${"x".repeat(32)}` }
    })
    expect(wrongCookie.status).toBe(400)
    // It says who is signed in, with a way to start again as someone else, and where the browser will go.
    expect(consentHtml).toContain("OAuth User")
    expect(consentHtml).toContain(user.email)
    expect(consentHtml).toContain("Not you?")
    expect(consentHtml).toContain(REDIRECT)
    const consentAction = formAction(consentHtml, followed.url)
    expect(consentAction.pathname).toBe("/oauth/authorize/consent")
    // The sign-in token does not work on the consent form.
    const early = await fetch(consentAction, {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({ pending, csrf_token: formField(html, "csrf_token"), decision: "approve" })
    })
    expect(early.status).toBe(400)
    const consentBody = new URLSearchParams({
      pending,
      csrf_token: formField(consentHtml, "csrf_token"),
      decision: "approve"
    })
    const first = await fetch(consentAction, { method: "POST", redirect: "manual", body: consentBody })
    expect(first.status).toBe(302)
    const replay = await fetch(consentAction, { method: "POST", redirect: "manual", body: consentBody })
    expect(replay.status).toBe(400)
    expect(replay.headers.get("location")).toBeNull()
  }, 15_000)
})

describe("token errors", () => {
  test("a reused code is invalid_grant and revokes the tokens issued from it", async () => {
    const code = await codeFor()
    const first = await exchange(code)
    expect(first.status).toBe(200)
    const tokens = await first.json()
    expect((await me(tokens.access_token)).status).toBe(200)

    await expectOAuthError(await exchange(code), 400, "invalid_grant")
    const after = await me(tokens.access_token)
    expect(after.status).toBe(401)
    expect(after.body.error.code).toBe("unauthorized")
    await expectOAuthError(
      await tokenRequest({
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: confidential.client_id,
        client_secret: confidential.client_secret
      }),
      400,
      "invalid_grant"
    )
  }, 15_000)

  test("a redirect_uri other than the authorization request's is invalid_grant", async () => {
    const code = await codeFor()
    await expectOAuthError(await exchange(code, { redirect_uri: OTHER_REDIRECT }), 400, "invalid_grant")
  }, 15_000)

  test("a wrong client secret is 401 invalid_client (with a Basic challenge when Basic was used)", async () => {
    const code = await codeFor()
    const post = await exchange(code, { client_secret: "pcc_wrong" })
    await expectOAuthError(post, 401, "invalid_client")

    const basic = await tokenRequest(
      { grant_type: "authorization_code", code, redirect_uri: REDIRECT },
      { authorization: `Basic ${btoa(`${confidential.client_id}:pcc_wrong`)}` }
    )
    await expectOAuthError(basic, 401, "invalid_client")
    expect(basic.headers.get("www-authenticate")).toMatch(/^Basic /)

    const unknown = await exchange(code, { client_id: "cli_01jd3xkq8w0000000000000000" })
    await expectOAuthError(unknown, 401, "invalid_client")
    // The code was not spent by the failed attempts.
    expect((await exchange(code)).status).toBe(200)
  }, 15_000)

  test("an expired code is invalid_grant", async () => {
    const code = await codeFor()
    const hash = createHash("sha256").update(code).digest("hex")
    await runStatement(
      server.databaseUrl,
      `UPDATE oauth_codes SET expires_at = '2000-01-01T00:00:00.000Z' WHERE code_hash = '${hash}'`
    )
    const body = await expectOAuthError(await exchange(code), 400, "invalid_grant")
    expect(body.error_description).toContain("expired")
  }, 15_000)

  test("a reused refresh token revokes its whole family", async () => {
    const tokens = await (await exchange(await codeFor())).json()
    const refresh = (token: string) =>
      tokenRequest({
        grant_type: "refresh_token",
        refresh_token: token,
        client_id: confidential.client_id,
        client_secret: confidential.client_secret
      })
    const second = await refresh(tokens.refresh_token)
    expect(second.status).toBe(200)
    const rotated = await second.json()
    expect((await me(rotated.access_token)).status).toBe(200)

    await expectOAuthError(await refresh(tokens.refresh_token), 400, "invalid_grant")
    expect((await me(rotated.access_token)).status).toBe(401)
    expect((await me(tokens.access_token)).status).toBe(401)
    await expectOAuthError(await refresh(rotated.refresh_token), 400, "invalid_grant")
  }, 15_000)

  test("a refresh may narrow the scope, never widen it", async () => {
    const tokens = await (await exchange(await codeFor({ scope: "projects:read projects:write" }))).json()
    expect(tokens.scope).toBe("projects:read projects:write")
    const refresh = (scope: string, token: string) =>
      tokenRequest({
        grant_type: "refresh_token",
        refresh_token: token,
        scope,
        client_id: confidential.client_id,
        client_secret: confidential.client_secret
      })
    await expectOAuthError(await refresh("projects:read write", tokens.refresh_token), 400, "invalid_scope")
    const narrowed = await refresh("projects:read", tokens.refresh_token)
    expect(narrowed.status).toBe(200)
    const body = await narrowed.json()
    expect(body.scope).toBe("projects:read")
    expect((await server.request("/v1/projects", { key: body.access_token })).status).toBe(200)
    const create = await server.request("/v1/projects", {
      method: "POST",
      key: body.access_token,
      body: { name: "Nope" }
    })
    expect(create.status).toBe(403)
    // The new refresh token still carries the original grant.
    const back = await refresh("projects:write", body.refresh_token)
    expect(back.status).toBe(200)
    expect((await back.json()).scope).toBe("projects:write")
  }, 15_000)

  test("bad requests are RFC 6749 errors, not the /v1 envelope", async () => {
    await expectOAuthError(
      await tokenRequest({
        grant_type: "password",
        client_id: confidential.client_id,
        client_secret: confidential.client_secret
      }),
      400,
      "unsupported_grant_type"
    )
    const text = await fetch(as.token_endpoint!, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "x"
    })
    await expectOAuthError(text, 400, "invalid_request")
    const noClient = await tokenRequest({ grant_type: "authorization_code", code: "x", redirect_uri: REDIRECT })
    await expectOAuthError(noClient, 401, "invalid_client")
  })
})

describe("using and revoking OAuth tokens", () => {
  test("OAuth tokens manage no OAuth clients (403); the grant is listed, and revoking it is 401 at once", async () => {
    const tokens = await (await exchange(await codeFor({ scope: "read write" }))).json()
    const asApp = (path: string, method = "GET", body?: unknown) =>
      server.request(path, { method, key: tokens.access_token, ...(body === undefined ? {} : { body }) })
    for (const [method, path, body] of [
      ["GET", "/v1/oauth-clients", undefined],
      ["POST", "/v1/oauth-clients", { name: "x", redirect_uris: [REDIRECT] }]
    ] as const) {
      const res = await asApp(path, method, body)
      expect(res.status).toBe(403)
      expect(res.body.error.message).toBe("OAuth access tokens cannot manage OAuth clients")
    }
    // The user's own session sees the grant under its authorizations; revoking it stops every token of it.
    const login = await fetch(`${server.url}/oauth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: user.email, password: user.password })
    })
    const session: { access_token: string } = await login.json()
    const listed = await server.request("/v1/authorizations", { key: session.access_token })
    expect(listed.status).toBe(200)
    const grant = listed.body.data.find((item: { client: { id: string } }) => item.client.id === confidential.client_id)
    expect(grant).toMatchObject({ client: { id: confidential.client_id, name: "Confidential App" } })
    expect(grant.scopes).toEqual(expect.arrayContaining(["read", "write"]))
    expect(grant.last_used_at).not.toBeNull()
    expect((await asApp("/v1/users/me")).status).toBe(200)
    const revoked = await server.request(`/v1/authorizations/${grant.id}`, {
      method: "DELETE",
      key: session.access_token
    })
    expect(revoked.status).toBe(204)
    const after = await asApp("/v1/users/me")
    expect(after.status).toBe(401)
    expect(after.headers.get("www-authenticate")).toContain("invalid_token")
    await expectOAuthError(
      await tokenRequest({
        grant_type: "refresh_token",
        refresh_token: tokens.refresh_token,
        client_id: confidential.client_id,
        client_secret: confidential.client_secret
      }),
      400,
      "invalid_grant"
    )
    const again = await server.request("/v1/authorizations", { key: session.access_token })
    expect(again.body.data.map((item: { id: string }) => item.id)).not.toContain(grant.id)
  }, 30_000)

  test("scopes limit what a token may do; OAuth tokens cannot manage API keys", async () => {
    const readOnly = await (await exchange(await codeFor({ scope: "projects:read" }))).json()
    const create = await server.request("/v1/projects", {
      method: "POST",
      key: readOnly.access_token,
      body: { name: "x" }
    })
    expect(create.status).toBe(403)
    expect(create.body.error.code).toBe("forbidden")
    expect((await server.request("/v1/projects", { key: readOnly.access_token })).status).toBe(200)

    const full = await (await exchange(await codeFor({ scope: "read write" }))).json()
    const list = await server.request("/v1/api-keys", { key: full.access_token })
    expect(list.status).toBe(403)
    const key = await server.request("/v1/api-keys", {
      method: "POST",
      key: full.access_token,
      body: { name: "k", scopes: ["read"] }
    })
    expect(key.status).toBe(403)
    expect(key.body.error.message).toContain("OAuth")
    const project = await server.request("/v1/projects", {
      method: "POST",
      key: full.access_token,
      body: { name: "Via OAuth" }
    })
    expect(project.status).toBe(201)
  }, 15_000)

  test("RFC 7009 revocation: a revoked token is 401 on /v1; unknown tokens answer 200", async () => {
    const client: oauth.Client = { client_id: confidential.client_id }
    const auth = oauth.ClientSecretBasic(confidential.client_secret)
    const tokens = await (await exchange(await codeFor())).json()
    expect((await me(tokens.access_token)).status).toBe(200)
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, auth, tokens.access_token, insecure)
    )
    const revoked = await me(tokens.access_token)
    expect(revoked.status).toBe(401)
    expect(revoked.headers.get("www-authenticate")).toContain(`error="invalid_token"`)

    const unknown = await oauth.revocationRequest(as, client, auth, "pco_unknown", insecure)
    expect(unknown.status).toBe(200)

    // Revoking a refresh token takes the grant's access tokens with it.
    const more = await (await exchange(await codeFor())).json()
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth, more.refresh_token, insecure))
    expect((await me(more.access_token)).status).toBe(401)

    const wrongSecret = await oauth.revocationRequest(
      as,
      client,
      oauth.ClientSecretPost("pcc_wrong"),
      more.access_token,
      insecure
    )
    expect(wrongSecret.status).toBe(401)
  }, 20_000)

  test("unknown, garbage and expired OAuth tokens are 401", async () => {
    expect((await me(`pco_${"A".repeat(40)}`)).status).toBe(401)
    expect((await me("pco_short")).status).toBe(401)
    const tokens = await (await exchange(await codeFor())).json()
    const hash = createHash("sha256").update(tokens.access_token).digest("hex")
    await runStatement(
      server.databaseUrl,
      `UPDATE oauth_tokens SET expires_at = '2000-01-01T00:00:00.000Z' WHERE token_hash = '${hash}'`
    )
    expect((await me(tokens.access_token)).status).toBe(401)
  }, 15_000)
})

describe("request decoding at the edge", () => {
  test("each malformed token, revocation and login request gets its RFC 6749 answer and description", async () => {
    const secretPost = { client_id: confidential.client_id, client_secret: confidential.client_secret }
    const basic = `Basic ${btoa(`${confidential.client_id}:${confidential.client_secret}`)}`
    const description = async (res: Response, status: number, error: string) =>
      (await expectOAuthError(res, status, error)).error_description
    expect(await description(await tokenRequest({ ...secretPost }), 400, "invalid_request")).toBe(
      "grant_type is required"
    )
    expect(await description(await tokenRequest({ ...secretPost, grant_type: "" }), 400, "invalid_request")).toBe(
      "grant_type is required"
    )
    expect(
      await description(await tokenRequest({ ...secretPost, grant_type: "authorization_code" }), 400, "invalid_request")
    ).toBe("code is required")
    expect(
      await description(
        await tokenRequest({ ...secretPost, grant_type: "authorization_code", code: "abc" }, {}, true),
        400,
        "invalid_request"
      )
    ).toBe("redirect_uri is required")
    expect(
      await description(
        await tokenRequest({ ...secretPost, grant_type: "refresh_token", refresh_token: "" }),
        400,
        "invalid_request"
      )
    ).toBe("refresh_token is required")
    // Client authentication comes before the grant is looked at.
    const unknownClient = await tokenRequest({ client_id: "cli_01jd3xkq8w0000000000000000", client_secret: "x" })
    expect((await expectOAuthError(unknownClient, 401, "invalid_client")).error_description).toBe(
      "Client authentication failed"
    )
    expect(unknownClient.headers.get("www-authenticate")).toBeNull()
    // Two methods at once, or a body client_id naming another client than Basic does.
    const both = await tokenRequest({ grant_type: "refresh_token", client_secret: "x" }, { authorization: basic })
    expect(await description(both, 400, "invalid_request")).toBe("Use one client authentication method, not two")
    const mismatch = await tokenRequest(
      { grant_type: "refresh_token", client_id: publicClient.client_id },
      { authorization: basic }
    )
    expect(await description(mismatch, 400, "invalid_request")).toBe("client_id does not match the Basic credentials")
    const malformed = await tokenRequest({ grant_type: "refresh_token" }, { authorization: "Basic !!!" })
    expect(await description(malformed, 401, "invalid_client")).toBe("Malformed Basic credentials")
    expect(malformed.headers.get("www-authenticate")).toContain("Basic")
    // A JSON value that is not a string, and a repeated form key.
    const notString = await fetch(as.token_endpoint!, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ ...secretPost, grant_type: 1 })
    })
    expect(await description(notString, 400, "invalid_request")).toBe("grant_type must be a string")
    const repeated = await fetch(as.token_endpoint!, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `client_id=${confidential.client_id}&grant_type=a&grant_type=b`
    })
    expect(await description(repeated, 400, "invalid_request")).toBe("grant_type is repeated")

    const revoke = await fetch(as.revocation_endpoint!, { method: "POST", body: new URLSearchParams(secretPost) })
    expect(await description(revoke, 400, "invalid_request")).toBe("token is required")

    const login = await fetch(`${server.url}/oauth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: user.email })
    })
    expect(await description(login, 400, "invalid_request")).toBe("email and password are required")
  })

  test("authorize: a missing response_type, an empty one and a lone code_challenge_method each redirect their error", async () => {
    const redirected = async (edit: (url: URL) => void) => {
      const url = authorizeUrl({ clientId: confidential.client_id, state: "st" })
      edit(url)
      const res = await fetch(url, { redirect: "manual" })
      expect(res.status).toBe(302)
      const location = new URL(res.headers.get("location")!)
      expect(location.searchParams.get("state")).toBe("st")
      expect(location.searchParams.get("iss")).toBe(issuer.href)
      return [location.searchParams.get("error"), location.searchParams.get("error_description")]
    }
    expect(await redirected((url) => url.searchParams.delete("response_type"))).toEqual([
      "invalid_request",
      "response_type is required"
    ])
    expect(await redirected((url) => url.searchParams.set("response_type", ""))).toEqual([
      "unsupported_response_type",
      "Only response_type=code is supported"
    ])
    expect(await redirected((url) => url.searchParams.set("code_challenge_method", "S256"))).toEqual([
      "invalid_request",
      "code_challenge_method without code_challenge"
    ])
    expect(
      await redirected((url) => {
        url.searchParams.set("code_challenge", "a".repeat(43))
        url.searchParams.set("code_challenge_method", "plain")
      })
    ).toEqual(["invalid_request", "code_challenge_method must be S256"])
    expect(await redirected((url) => url.searchParams.set("scope", "  "))).toEqual([
      "invalid_scope",
      "scope must be one or more of: read, write, projects:read, projects:write, team:manage, billing:read (space-separated)"
    ])
    const noClient = await fetch(`${as.authorization_endpoint}?response_type=code`, { redirect: "manual" })
    expect(noClient.status).toBe(400)
    expect(await noClient.text()).toContain("The request has no client_id.")
  })
})
