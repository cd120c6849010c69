// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * OAuth for people, in Chromium, the whole loop: Olga registers an application in the dashboard (its secret shown
 * once, with Copy), edits it and rotates its secret; Bea runs the application's PKCE flow through the sign-in and
 * consent pages (a wrong password first; after sign-in the address bar shows the consent page, not the form's
 * POST target) and the browser lands on the application — a small receiver on loopback standing in for it — with
 * `code` and `state`; the code is exchanged and the token used. Bea then finds the application under her
 * authorized applications and revokes it: the token answers 401 at once. Also: Deny, "Not you?", deleting the
 * application with a confirmation. Every new or changed page is photographed at 1280 and 375 px.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { createHash, randomBytes } from "node:crypto"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type Server, startServer } from "../support/server.ts"
import {
  type BrowserSession,
  expectNoProblems,
  expectOnlyLoopback,
  openBrowser,
  openSettings,
  signIn,
  userWithPassword
} from "./browser.ts"

let server: Server
let receiver: Receiver
let session: BrowserSession
let olga: Awaited<ReturnType<typeof userWithPassword>>
let bea: Awaited<ReturnType<typeof userWithPassword>>
const app = { id: "", secret: "" }
let accessToken = ""

beforeAll(async () => {
  receiver = startReceiver({
    default: { status: 200, body: "client received the redirect", headers: { "content-type": "text/plain" } }
  })
  server = await startServer({ env: { AUTH_IP_LIMIT_PER_MINUTE: "100000" } })
  ;[olga, bea] = await Promise.all([userWithPassword(server, "Olga Owner"), userWithPassword(server, "Bea Browser")])
  session = await openBrowser({ origin: server.url })
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
  await receiver?.stop()
}, 20_000)

const authorizeUrl = (state: string, challenge: string) => {
  const url = new URL(`${server.url}/oauth/authorize`)
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: app.id,
    redirect_uri: receiver.url("/callback"),
    scope: "read projects:write",
    state,
    code_challenge: challenge,
    code_challenge_method: "S256"
  }).toString()
  return url.toString()
}

const pkce = () => {
  const verifier = randomBytes(32).toString("base64url")
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") }
}

const signOutOfDashboard = async () => {
  await session.page.getByRole("button", { name: "Sign out" }).click()
  await session.page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
}

test("Olga registers an application in the dashboard: the secret is shown once with Copy; edit; rotate", async () => {
  const { page } = session
  await signIn(page, server.url, olga)
  await openSettings(page, "OAuth apps")
  await page.getByRole("heading", { level: 1, name: "OAuth applications" }).waitFor()
  await page.getByText("You have not registered an application yet.").waitFor()
  await page.getByText("Register an application").click()
  // A bad redirect URI first: the API's message lands next to the field.
  await page.getByLabel("Application name").fill("Receiver App")
  await page.getByLabel("Redirect URIs").fill("/callback")
  await page.getByRole("button", { name: "Register application" }).click()
  await page.locator('[data-field="redirect_uris"] .field-error').filter({ hasText: "absolute URL" }).waitFor()
  await session.shots("30-oauth-apps-register-error")

  await page.getByLabel("Redirect URIs").fill(receiver.url("/callback"))
  await page.getByRole("button", { name: "Register application" }).click()
  const shown = page.getByLabel("Its client secret")
  await shown.waitFor()
  app.secret = await shown.inputValue()
  expect(app.secret).toMatch(/^pcc_[0-9A-Za-z]{40}$/)
  await page.getByRole("button", { name: "Copy" }).click()
  await page.getByText("Copied to the clipboard.").waitFor()
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(app.secret)
  app.id = (await page.locator(".secret-once code").first().textContent()) ?? ""
  expect(app.id).toMatch(/^cli_/)
  await page.getByRole("row", { name: /Receiver App/ }).waitFor()
  await session.shots("31-oauth-apps-created")

  // Not shown again: the list and the application's page have no secret.
  await page.getByRole("button", { name: "Done" }).click()
  await page.getByRole("link", { name: "Receiver App" }).click()
  await page.getByRole("heading", { level: 1, name: "Receiver App" }).waitFor()
  expect(await page.content()).not.toContain(app.secret)

  // Edit: a second redirect URI.
  await page.getByText("Edit application").click()
  await page.getByLabel("Redirect URIs").fill(`${receiver.url("/callback")}\n${receiver.url("/other")}`)
  await page.getByRole("button", { name: "Save changes" }).click()
  await page.getByText("Application saved.").waitFor()
  await page.getByText(receiver.url("/other")).waitFor()

  // Rotate, with a confirmation: the new secret replaces the old one at the token endpoint.
  await page.getByRole("button", { name: "Rotate secret" }).click()
  await session.shots("32-oauth-app-rotate-confirm")
  await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click()
  const rotated = page.getByLabel("The new client secret")
  await rotated.waitFor()
  const secret = await rotated.inputValue()
  expect(secret).not.toBe(app.secret)
  app.secret = secret
  await session.shots("33-oauth-app")
  const read = await server.request(`/v1/oauth-clients/${app.id}`, { key: (await server.user()).key })
  expect(read.status).toBe(404)
  await signOutOfDashboard()
}, 120_000)

test("Bea runs its PKCE flow: sign-in (a wrong password first), consent, and the browser lands on the app", async () => {
  const { page } = session
  const state = randomBytes(12).toString("hex")
  const { challenge, verifier } = pkce()

  await page.goto(authorizeUrl(state, challenge))
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
  await page.getByText("Receiver App").first().waitFor()
  // The dashboard's stylesheet: the primary button wears the dashboard's accent.
  const background = await page
    .getByRole("button", { name: "Sign in" })
    .evaluate((button) => getComputedStyle(button).backgroundColor)
  expect(background).toBe("rgb(29, 78, 216)")
  await session.shots("34-oauth-sign-in")

  await page.getByLabel("Email").fill(bea.email)
  await page.getByLabel("Password").fill("wrong password")
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("alert").filter({ hasText: "The email or password is wrong" }).waitFor()
  expect(await page.getByLabel("Email").inputValue()).toBe(bea.email)
  await session.shots("35-oauth-sign-in-wrong-password")

  await page.getByLabel("Password").fill(bea.password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Allow access?" }).waitFor()
  // Post/Redirect/Get: the address is the consent page's own, never the sign-in form's POST target.
  const address = new URL(page.url())
  expect(address.pathname).toBe("/oauth/authorize/consent")
  expect(address.pathname).not.toBe("/oauth/authorize/sign-in")
  // Who, what and where.
  await page.getByText("Signed in as").waitFor()
  await page.locator(".signed-in-as").getByText(bea.name).waitFor()
  await page.locator(".signed-in-as").getByText(bea.email).waitFor()
  await page.getByRole("link", { name: "Not you?" }).waitFor()
  expect(await page.locator(".scope-list li code").allTextContents()).toEqual(["read", "projects:write"])
  await page.getByText("See your profile, your projects and their deployments", { exact: false }).waitFor()
  await page.getByText("Create, change and delete your projects, and record their deployments").waitFor()
  // What no scope allows, and `read` no longer claims API keys.
  expect(await page.locator(".never li").allTextContents()).toEqual([
    "See, create or revoke your API keys",
    "Register, change or delete OAuth applications, or see their secrets"
  ])
  expect(await page.locator(".scope-list").textContent()).not.toContain("API keys")
  await page
    .locator(".destination code")
    .filter({ hasText: receiver.url("/callback") })
    .waitFor()
  expect(await page.getByRole("button", { name: "Allow" }).getAttribute("class")).toBe("primary")
  expect(await page.getByRole("button", { name: "Deny" }).getAttribute("class")).toBeNull()
  await session.shots("36-oauth-consent")
  // A reload shows the same page (no form is posted again).
  await page.reload()
  await page.getByRole("heading", { level: 1, name: "Allow access?" }).waitFor()

  await page.getByRole("button", { name: "Allow" }).click()
  await page.waitForURL((url) => url.origin === receiver.origin && url.pathname === "/callback")
  await page.getByText("client received the redirect").waitFor()
  const landed = new URL(page.url())
  expect(landed.searchParams.get("state")).toBe(state)
  expect(landed.searchParams.get("iss")).toBe(`${server.url}/oauth`)
  const code = landed.searchParams.get("code") ?? ""
  expect(code.length).toBeGreaterThan(20)

  // The application exchanges the code (PKCE and its rotated secret) and acts for Bea.
  const token = await fetch(`${server.url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: receiver.url("/callback"),
      client_id: app.id,
      client_secret: app.secret,
      code_verifier: verifier
    })
  })
  expect(token.status).toBe(200)
  const grant: { access_token: string; scope: string } = await token.json()
  expect(grant.scope).toBe("read projects:write")
  accessToken = grant.access_token
  const me = await server.request("/v1/users/me", { key: accessToken })
  expect(me.status).toBe(200)
  expect(me.body.data.email).toBe(bea.email)
}, 120_000)

test("Not you? starts again at the sign-in page; Deny sends the browser back with access_denied", async () => {
  const { page } = session
  const state = randomBytes(12).toString("hex")
  await page.goto(authorizeUrl(state, pkce().challenge))
  await page.getByLabel("Email").fill(bea.email)
  await page.getByLabel("Password").fill(bea.password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("link", { name: "Not you?" }).click()
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
  expect(new URL(page.url()).searchParams.get("state")).toBe(state)

  await page.getByLabel("Email").fill(bea.email)
  await page.getByLabel("Password").fill(bea.password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("button", { name: "Deny" }).click()
  await page.waitForURL((url) => url.origin === receiver.origin && url.pathname === "/callback")
  const landed = new URL(page.url())
  expect(landed.searchParams.get("error")).toBe("access_denied")
  expect(landed.searchParams.get("state")).toBe(state)
  expect(landed.searchParams.get("code")).toBeNull()
}, 120_000)

test("Bea sees the application under Authorized apps and revokes it: its token answers 401 at once", async () => {
  const { page } = session
  await signIn(page, server.url, bea)
  await openSettings(page, "Authorized apps")
  await page.getByRole("heading", { level: 1, name: "Authorized applications" }).waitFor()
  const row = page.getByRole("row", { name: /Receiver App/ })
  await row.waitFor()
  await row.getByText("read, projects:write").waitFor()
  await session.shots("37-authorized-apps")

  // Cancel keeps it; confirming revokes it.
  await page.getByRole("button", { name: "Revoke Receiver App" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click()
  expect((await server.request("/v1/users/me", { key: accessToken })).status).toBe(200)
  await page.getByRole("button", { name: "Revoke Receiver App" }).click()
  await session.shots("38-authorized-apps-revoke-confirm")
  await page.getByRole("dialog").getByRole("button", { name: "Revoke access" }).click()
  await page.getByText("You have not authorized any application.").waitFor()
  await session.shots("39-authorized-apps-empty")

  const after = await server.request("/v1/users/me", { key: accessToken })
  expect(after.status).toBe(401)
  expect(after.body.error.code).toBe("unauthorized")
  await signOutOfDashboard()
}, 120_000)

test("Olga deletes the application, with a confirmation", async () => {
  const { page } = session
  await signIn(page, server.url, olga)
  await page.goto(`${server.url}/dashboard/settings/oauth-apps/${app.id}`)
  await page.getByRole("heading", { level: 1, name: "Receiver App" }).waitFor()
  await page.getByRole("button", { name: "Delete application" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Delete application" }).click()
  await page.getByRole("heading", { level: 1, name: "OAuth applications" }).waitFor()
  await page.getByText("“Receiver App” deleted.").waitFor()
  await page.getByText("You have not registered an application yet.").waitFor()
  // The application is gone for the authorization server too: its error page, never a redirect.
  const gone = await page.goto(authorizeUrl("x", pkce().challenge))
  expect(gone?.status()).toBe(400)
  await page.getByRole("heading", { level: 1, name: "This authorization request cannot continue" }).waitFor()
  await page.getByRole("alert").filter({ hasText: "unknown client_id" }).waitFor()
  expect(new URL(page.url()).origin).toBe(server.url)
  await session.shots("40-oauth-error")
}, 120_000)

test("nothing left 127.0.0.1, and no CSP violation or error reached the console", () => {
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 10_000)
