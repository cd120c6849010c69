/**
 * The OAuth authorization flow done by a person in Chromium: the sign-in page (a wrong password first), the
 * consent page, and the browser's redirect back to the client with `code` and `state` — caught by a small
 * receiver on loopback standing in for the client. The code is then exchanged (PKCE) and the token used. Also:
 * refusing redirects with `error=access_denied`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { createHash, randomBytes } from "node:crypto"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type Server, startServer } from "../support/server.ts"
import { type BrowserSession, expectNoProblems, expectOnlyLoopback, openBrowser, userWithPassword } from "./browser.ts"

let server: Server
let receiver: Receiver
let session: BrowserSession
let client: { readonly client_id: string; readonly client_secret: string }
let bea: Awaited<ReturnType<typeof userWithPassword>>

beforeAll(async () => {
  receiver = startReceiver({
    default: { status: 200, body: "client received the redirect", headers: { "content-type": "text/plain" } }
  })
  server = await startServer()
  bea = await userWithPassword(server, "Bea Browser")
  client = await server.cli(
    "oauth-clients",
    "create",
    "--name",
    "Receiver App",
    "--redirect-uri",
    receiver.url("/callback")
  )
  session = await openBrowser()
}, 30_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
  await receiver?.stop()
}, 20_000)

const authorizeUrl = (state: string, challenge: string) => {
  const url = new URL(`${server.url}/oauth/authorize`)
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: receiver.url("/callback"),
    scope: "read projects:write",
    state,
    code_challenge: challenge,
    code_challenge_method: "S256"
  }).toString()
  return url.toString()
}

test("sign in with a wrong password, then the right one; allow; the browser lands on the client with code and state", async () => {
  const { page } = session
  const state = randomBytes(12).toString("hex")
  const verifier = randomBytes(32).toString("base64url")
  const challenge = createHash("sha256").update(verifier).digest("base64url")

  await page.goto(authorizeUrl(state, challenge))
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
  expect(await page.getByText("Receiver App").count()).toBe(1)

  await page.getByLabel("Email").fill(bea.email)
  await page.getByLabel("Password").fill("wrong password")
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("alert").filter({ hasText: "The email or password is wrong" }).waitFor()
  await session.shots("20-oauth-wrong-password")

  // The same page again (its form posts to an absolute address); the email is kept.
  expect(await page.getByLabel("Email").inputValue()).toBe(bea.email)
  await page.getByLabel("Password").fill(bea.password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Allow access?" }).waitFor()
  expect(await page.locator("li code").allTextContents()).toEqual(["read", "projects:write"])
  await session.shots("21-oauth-consent")

  await page.getByRole("button", { name: "Allow" }).click()
  await page.waitForURL((url) => url.origin === receiver.origin && url.pathname === "/callback")
  await page.getByText("client received the redirect").waitFor()
  const landed = new URL(page.url())
  expect(landed.searchParams.get("state")).toBe(state)
  const code = landed.searchParams.get("code") ?? ""
  expect(code.length).toBeGreaterThan(20)
  expect(landed.searchParams.get("iss")).toBe(`${server.url}/oauth`)
  expect(receiver.requests().filter((request) => request.path.startsWith("/callback?"))).toHaveLength(1)

  // The client exchanges the code and acts for Bea.
  const token = await fetch(`${server.url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: receiver.url("/callback"),
      client_id: client.client_id,
      client_secret: client.client_secret,
      code_verifier: verifier
    })
  })
  expect(token.status).toBe(200)
  const grant: { access_token: string; scope: string } = await token.json()
  expect(grant.scope).toBe("read projects:write")
  const me = await server.request("/v1/users/me", { key: grant.access_token })
  expect(me.status).toBe(200)
  expect(me.body.data.email).toBe(bea.email)
}, 30_000)

test("deny: the browser lands on the client with error=access_denied and the state", async () => {
  const { page } = session
  const state = randomBytes(12).toString("hex")
  const challenge = createHash("sha256").update(randomBytes(32).toString("base64url")).digest("base64url")
  await page.goto(authorizeUrl(state, challenge))
  await page.getByLabel("Email").fill(bea.email)
  await page.getByLabel("Password").fill(bea.password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("button", { name: "Deny" }).click()
  await page.waitForURL((url) => url.origin === receiver.origin && url.pathname === "/callback")
  const landed = new URL(page.url())
  expect(landed.searchParams.get("error")).toBe("access_denied")
  expect(landed.searchParams.get("state")).toBe(state)
  expect(landed.searchParams.get("code")).toBeNull()
}, 30_000)

test("nothing left 127.0.0.1, and no CSP violation or error reached the console", () => {
  expectOnlyLoopback(session)
  expectNoProblems(session)
})
