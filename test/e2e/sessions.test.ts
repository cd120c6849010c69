/**
 * Sessions that end, and users who can be stopped (decisions.md), over HTTP on the engine `DATABASE_URL` selects:
 * every session JWT names its session (`sid`); logout and `DELETE /v1/users/me/sessions[/:id]` end sessions (401
 * `unauthorized` at once); `cli users suspend` refuses every credential of a user, their sign-in, their authorization
 * codes (unspent) and their Allow on a consent page opened before, `reactivate` restores them; a credential whose
 * user was deleted is 401 (never 500) on every endpoint of the contract.
 * Across replicas: test/e2e/replicas-sessions.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as jose from "jose"
import { Api } from "../../src/Api.ts"
import { expectError } from "../support/api.ts"
import { startInProcess } from "../support/in-process.ts"
import { throughSignIn } from "../support/oauthPages.ts"
import { confidentialClient, type OAuthHarness, oauthLayers, oauthTokensOf } from "../support/oauthTokens.ts"
import type { Server } from "../support/server.ts"
import { onDatabase } from "../support/services.ts"

const password = "correct horse battery"
const REDIRECT = "https://app.example.com/callback"

let server: Server
let oauth: OAuthHarness
let client = { id: "", secret: "" }

beforeAll(async () => {
  server = await startInProcess({
    env: {
      AUTH_IP_LIMIT_PER_MINUTE: "100000",
      RATE_LIMIT_PER_MINUTE: "100000",
      RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "100000"
    }
  })
  oauth = onDatabase(oauthLayers, server.databaseUrl)
  client = await confidentialClient(oauth, "Sessions app", REDIRECT)
}, 60_000)
afterAll(async () => {
  await oauth?.dispose()
  await server?.stop()
}, 20_000)

let counter = 0
/** A user with a password and an API key. */
const person = async () => {
  const email = `sessions.${++counter}.${Math.random().toString(36).slice(2, 8)}@example.com`
  const account = await server.fixtures.account({ email, name: `Person ${counter}`, password })
  const key = (await server.fixtures.apiKey(account.id, { scopes: "read,write,team:manage" })).key
  return { ...account, key }
}

const login = (email: string, userAgent = "sessions-test/1.0") =>
  server.request("/oauth/login", { method: "POST", body: { email, password }, headers: { "user-agent": userAgent } })

const signIn = async (email: string, userAgent?: string): Promise<string> => {
  const res = await login(email, userAgent)
  expect(res.status).toBe(200)
  return res.body.access_token
}

const me = (token: string) => server.request("/v1/users/me", { key: token })

/** OAuth tokens of `userId`'s for the test's client, through the services' own flow. */
const oauthTokens = (userId: string) => oauthTokensOf(oauth, client, REDIRECT, userId)
/** An OAuth access token of `userId`'s for the test's client. */
const oauthToken = async (userId: string) => (await oauthTokens(userId)).accessToken

/** 401 `unauthorized`, with the RFC 6750 challenge `error="invalid_token"` (decisions.md). */
const expectUnauthorized = (res: { status: number; body: any; headers: Headers }) => {
  expectError(res, 401, "unauthorized")
  expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"')
}

describe("session JWTs and their sessions", () => {
  test("every session JWT carries sid; the caller's live sessions are listed with the current one marked", async () => {
    const ann = await person()
    const first = await signIn(ann.email, "first-browser/1.0")
    const second = await signIn(ann.email, "second-browser/2.0")
    const sidOf = (token: string) => jose.decodeJwt(token).sid
    expect(sidOf(first)).toMatch(/^ses_[0-7][0-9a-hjkmnp-tv-z]{25}$/)
    expect(sidOf(second)).not.toBe(sidOf(first))
    const listed = await server.request("/v1/users/me/sessions", { key: second })
    expect(listed.status).toBe(200)
    expect(listed.body.meta.total).toBe(2)
    const byId = new Map<string, any>(listed.body.data.map((session: any) => [session.id, session]))
    expect(byId.get(String(sidOf(second)))).toMatchObject({ current: true, user_agent: "second-browser/2.0" })
    expect(byId.get(String(sidOf(first)))).toMatchObject({ current: false, user_agent: "first-browser/1.0" })
    for (const session of listed.body.data) {
      expect(Object.keys(session).sort()).toEqual(["created_at", "current", "id", "ip", "last_used_at", "user_agent"])
      expect(typeof session.ip).toBe("string")
    }
    // With an API key, none is current.
    const withKey = await server.request("/v1/users/me/sessions", { key: ann.key })
    expect(withKey.body.data.map((session: any) => session.current)).toEqual([false, false])
  }, 60_000)

  test("POST {auth_url}/logout ends the session: its JWT answers 401 unauthorized at once; others stay", async () => {
    const bo = await person()
    const token = await signIn(bo.email)
    const other = await signIn(bo.email)
    expect((await me(token)).status).toBe(200)
    const out = await server.request("/oauth/logout", { method: "POST", key: token })
    expect(out.status).toBe(204)
    expectUnauthorized(await me(token))
    expectUnauthorized(await server.request("/v1/projects", { method: "POST", key: token, body: { name: "x" } }))
    expect((await me(other)).status).toBe(200)
    // Logging out again is no change; something that is no session JWT is 401 in RFC 6750 form.
    expect((await server.request("/oauth/logout", { method: "POST", key: token })).status).toBe(204)
    const garbage = await server.request("/oauth/logout", { method: "POST", key: "not-a-jwt" })
    expect(garbage.status).toBe(401)
    expect(garbage.body.error).toBe("invalid_token")
    // The ended session is no longer listed.
    const listed = await server.request("/v1/users/me/sessions", { key: other })
    expect(listed.body.data.map((session: any) => session.id)).toEqual([jose.decodeJwt(other).sid])
  }, 60_000)

  test("DELETE /v1/users/me/sessions/:id ends one; DELETE /v1/users/me/sessions ends all but the current one", async () => {
    const cy = await person()
    const [a, b, c, d] = [
      await signIn(cy.email),
      await signIn(cy.email),
      await signIn(cy.email),
      await signIn(cy.email)
    ]
    const sid = (token: string | undefined) => String(jose.decodeJwt(token ?? "").sid)
    const ended = await server.request(`/v1/users/me/sessions/${sid(b)}`, { method: "DELETE", key: a })
    expect(ended.status).toBe(204)
    expectUnauthorized(await me(b ?? ""))
    expect((await me(a ?? "")).status).toBe(200)
    // Again, or someone else's, or made up: 404.
    expectError(await server.request(`/v1/users/me/sessions/${sid(b)}`, { method: "DELETE", key: a }), 404, "not_found")
    const dee = await person()
    const theirs = await signIn(dee.email)
    expectError(
      await server.request(`/v1/users/me/sessions/${sid(theirs)}`, { method: "DELETE", key: a }),
      404,
      "not_found"
    )
    expect((await me(theirs)).status).toBe(200)
    const others = await server.request("/v1/users/me/sessions", { method: "DELETE", key: c })
    expect(others.status).toBe(204)
    expectUnauthorized(await me(a ?? ""))
    expectUnauthorized(await me(d ?? ""))
    expect((await me(c ?? "")).status).toBe(200)
    const listed = await server.request("/v1/users/me/sessions", { key: c })
    expect(listed.body.data.map((session: any) => session.id)).toEqual([sid(c)])
  }, 60_000)

  test("OAuth access tokens manage no sessions (403); scopes are checked", async () => {
    const ed = await person()
    const token = await oauthToken(ed.id)
    expectError(await server.request("/v1/users/me/sessions", { key: token }), 403, "forbidden")
    expectError(await server.request("/v1/users/me/sessions", { method: "DELETE", key: token }), 403, "forbidden")
    const reader = (await server.fixtures.apiKey(ed.id, { scopes: "read" })).key
    expect((await server.request("/v1/users/me/sessions", { key: reader })).status).toBe(200)
    expectError(await server.request("/v1/users/me/sessions", { method: "DELETE", key: reader }), 403, "forbidden")
  }, 60_000)
})

/**
 * `email` through the authorization page's sign-in (for the test's client, `read write`), up to the consent form;
 * `answer` posts it as the browser that signed in would.
 */
const upToConsent = async (email: string) => {
  const authorize = new URL("/oauth/authorize", server.url)
  const query = {
    client_id: client.id,
    redirect_uri: REDIRECT,
    response_type: "code",
    scope: "read write",
    state: "st"
  }
  for (const [name, value] of Object.entries(query)) authorize.searchParams.set(name, value)
  return throughSignIn(authorize, email, password)
}

/** The client of the test exchanges `code` at `/oauth/token`. */
const exchangeCode = (code: string) =>
  server.request("/oauth/token", {
    method: "POST",
    body: {
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: client.id,
      client_secret: client.secret
    }
  })

describe("users suspend and reactivate", () => {
  test("a suspended user's key, OAuth token and session answer 401 at once and they cannot sign in; reactivating restores them", async () => {
    const fay = await person()
    const session = await signIn(fay.email)
    const token = await oauthToken(fay.id)
    for (const credential of [fay.key, session, token]) expect((await me(credential)).status).toBe(200)

    const suspended = await server.cli("users", "suspend", "--email", fay.email)
    expect(suspended).toMatchObject({ id: fay.id, email: fay.email })
    expect(typeof suspended.suspended_at).toBe("string")
    for (const credential of [fay.key, session, token]) {
      expectUnauthorized(await me(credential))
      expectUnauthorized(await server.request("/v1/projects", { method: "POST", key: credential, body: { name: "x" } }))
    }
    const refused = await login(fay.email)
    expect(refused.status).toBe(401)
    expect(refused.body).toMatchObject({
      error: "invalid_grant",
      error_description: expect.stringContaining("suspended")
    })
    // Nor through the authorization page's sign-in form (403, no consent page; the form shows again).
    const authorize = new URL("/oauth/authorize", server.url)
    const query = { client_id: client.id, redirect_uri: REDIRECT, response_type: "code", scope: "read", state: "st" }
    for (const [name, value] of Object.entries(query)) authorize.searchParams.set(name, value)
    const page = await fetch(authorize, { redirect: "manual" })
    expect(page.status).toBe(200)
    const form = await page.text()
    const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(form)?.[1] ?? ""
    const action = new URL(/<form method="post" action="([^"]+)"/.exec(form)?.[1] ?? "", page.url)
    const pageSignIn = await fetch(action, {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({
        pending: field("pending"),
        csrf_token: field("csrf_token"),
        email: fay.email,
        password
      })
    })
    expect(pageSignIn.status).toBe(403)
    expect(pageSignIn.headers.get("location")).toBeNull()
    expect(await pageSignIn.text()).toContain("suspended")
    // A wrong password is told nothing about the suspension.
    const wrong = await server.request("/oauth/login", {
      method: "POST",
      body: { email: fay.email, password: "nope nope" }
    })
    expect(wrong.body.error_description).not.toContain("suspended")
    // Suspending again changes nothing.
    expect((await server.cli("users", "suspend", "--email", fay.email)).suspended_at).toBe(suspended.suspended_at)

    const back = await server.cli("users", "reactivate", "--email", fay.email)
    expect(back.suspended_at).toBeNull()
    for (const credential of [fay.key, session, token]) expect((await me(credential)).status).toBe(200)
    expect((await login(fay.email)).status).toBe(200)
  }, 60_000)

  test("a code issued before the suspension is invalid_grant while it lasts, and not spent: reactivated, it is exchanged", async () => {
    const gil = await person()
    const approved = await (await upToConsent(gil.email)).answer("approve")
    expect(approved.status).toBe(302)
    const code = new URL(approved.headers.get("location") ?? "").searchParams.get("code") ?? ""
    expect(code).not.toBe("")

    await server.cli("users", "suspend", "--email", gil.email)
    const refused = await exchangeCode(code)
    expect(refused.status).toBe(400)
    expect(refused.body).toEqual({ error: "invalid_grant", error_description: "The user is suspended" })

    await server.cli("users", "reactivate", "--email", gil.email)
    const exchanged = await exchangeCode(code)
    expect(exchanged.status).toBe(200)
    expect((await me(exchanged.body.access_token)).status).toBe(200)
  }, 60_000)

  test("suspended between sign-in and consent: Allow answers 403 with the suspended page; no code, no grant", async () => {
    const hal = await person()
    const { answer } = await upToConsent(hal.email)
    await server.cli("users", "suspend", "--email", hal.email)
    const approved = await answer("approve")
    expect(approved.status).toBe(403)
    expect(approved.headers.get("location")).toBeNull()
    const page = await approved.text()
    expect(page).toContain("This account is suspended")
    // Not told to start again from the application, which would only end here again.
    expect(page).toContain("Nothing was shared with the application.")
    expect(page).not.toContain("start again")
    // The consent form was answered: its cookie is spent, and posting it again finds nothing.
    expect(approved.headers.get("set-cookie")).toContain("Max-Age=0")
    expect((await answer("approve")).status).toBe(400)

    await server.cli("users", "reactivate", "--email", hal.email)
    const grants = await server.request("/v1/authorizations", { key: hal.key })
    expect(grants.status).toBe(200)
    expect(grants.body.data).toEqual([])
    const granted = await server.request("/v1/users/me/audit-log?action=authorization.granted", { key: hal.key })
    expect(granted.status).toBe(200)
    expect(granted.body.data).toEqual([])
  }, 60_000)

  test("an unknown user is exit 3 (not found)", async () => {
    const { runCliInProcess } = await import("../support/cli.ts")
    const res = await runCliInProcess(server.databaseUrl, ["users", "suspend", "--email", "nobody@example.com"])
    expect(res.code).toBe(3)
  }, 60_000)
})

describe("a credential whose user was deleted", () => {
  /** Every endpoint of the contract, its path parameters filled with well-formed ids of nothing. */
  const endpoints = () => {
    const sample: Record<string, string> = {
      id: "proj_01jd3xkq8w0000000000000000",
      team_id: "team_01jd3xkq8w0000000000000000",
      user_id: "usr_01jd3xkq8w0000000000000000",
      invitation_id: "inv_01jd3xkq8w0000000000000000",
      deployment_id: "dpl_01jd3xkq8w0000000000000000",
      delivery_id: "dlv_01jd3xkq8w0000000000000000"
    }
    const all: Array<{ method: string; path: string }> = []
    for (const group of Object.values(Api.groups)) {
      for (const endpoint of Object.values(group.endpoints)) {
        const path = endpoint.path.replace(
          /:(\w+)/g,
          (_: string, name: string) => sample[name] ?? "x_01jd3xkq8w0000000000000000"
        )
        all.push({ method: endpoint.method, path })
      }
    }
    return all
  }

  test("is 401 unauthorized, never 500, on every endpoint that takes one (API key, session JWT, OAuth token)", async () => {
    const gus = await person()
    const session = await signIn(gus.email)
    const { accessToken: token, refreshToken } = await oauthTokens(gus.id)
    for (const credential of [gus.key, session, token]) expect((await me(credential)).status).toBe(200)
    const deleted = await server.cli("users", "delete", "--email", gus.email)
    expect(deleted).toMatchObject({ id: gus.id, deleted: true })
    const list = endpoints()
    expect(list.length).toBeGreaterThan(40)
    for (const [kind, credential] of [
      ["api_key", gus.key],
      ["session", session],
      ["oauth", token]
    ] as const) {
      for (const { method, path } of list) {
        const res = await server.request(path, {
          method,
          key: credential,
          ...(method === "POST" || method === "PUT" ? { body: { name: "x" } } : {})
        })
        expect({
          kind,
          method,
          path,
          status: res.status,
          code: res.body?.error?.code,
          challenge: res.headers.get("www-authenticate")?.includes('error="invalid_token"')
        }).toEqual({
          kind,
          method,
          path,
          status: 401,
          code: "unauthorized",
          challenge: true
        })
      }
    }
    // The authorization server's endpoints that take one: logout (the session is gone: nothing to end, and no
    // record of a user who no longer exists), and a refresh (the grant went with the user).
    const logout = await server.request("/oauth/logout", { method: "POST", key: session })
    expect(logout.status).toBe(204)
    const refreshed = await server.request("/oauth/token", {
      method: "POST",
      body: {
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: client.id,
        client_secret: client.secret
      }
    })
    expect({ status: refreshed.status, error: refreshed.body.error }).toEqual({ status: 400, error: "invalid_grant" })
  }, 60_000)
})
