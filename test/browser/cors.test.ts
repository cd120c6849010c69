// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * A single-page application on another origin (another loopback port), in Chromium: it discovers the
 * authorization server, sends the person through a PKCE sign-in as a public client, redeems the code at
 * `/oauth/token` with `fetch`, calls `/v1` with the bearer token (a preflight: `Authorization`, JSON,
 * `Idempotency-Key`), reads the headers it is allowed to read, revokes the token and reads the 401's challenge.
 * `/oauth/introspect` stays closed to it. The consent page, with several scopes and what a token can never do, is
 * photographed at 1280 and 375 px.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { freePort } from "../support/helpers.ts"
import { type Server, startServer } from "../support/server.ts"
import { type BrowserSession, expectOnlyLoopback, openBrowser, problems, userWithPassword } from "./browser.ts"

let server: Server
let session: BrowserSession
let app: ReturnType<typeof Bun.serve>
let appUrl = ""
let clientId = ""
let person: Awaited<ReturnType<typeof userWithPassword>>

/** The application: one page, plain script; its state between the two visits in sessionStorage. */
const spa = (serviceUrl: string, client: string, redirectUri: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Browser App</title></head>
<body><main><h1>Browser App</h1><button id="start" disabled>Sign in with the service</button><pre id="result"></pre></main>
<script type="module">
const service = ${JSON.stringify(serviceUrl)}
const clientId = ${JSON.stringify(client)}
const redirectUri = ${JSON.stringify(redirectUri)}
const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "")
const show = (value) => { document.getElementById("result").textContent = JSON.stringify(value) }
const metadata = await (await fetch(service + "/.well-known/oauth-authorization-server/oauth")).json()
const resource = await (await fetch(service + "/.well-known/oauth-protected-resource/v1")).json()
const params = new URLSearchParams(location.search)
if (!params.has("code")) {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)))
  const challenge = b64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)))
  const state = b64url(crypto.getRandomValues(new Uint8Array(16)))
  sessionStorage.setItem("pkce", JSON.stringify({ verifier, state }))
  const url = new URL(metadata.authorization_endpoint)
  url.search = new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: redirectUri,
    scope: "read write projects:read team:manage", state, code_challenge: challenge, code_challenge_method: "S256" })
  const start = document.getElementById("start")
  start.addEventListener("click", () => { location.assign(url.toString()) })
  start.disabled = false
} else {
  const { verifier, state } = JSON.parse(sessionStorage.getItem("pkce"))
  const out = { resource: resource.resource, stateMatches: params.get("state") === state, iss: params.get("iss") }
  const token = await fetch(metadata.token_endpoint, { method: "POST", body: new URLSearchParams({
    grant_type: "authorization_code", code: params.get("code"), redirect_uri: redirectUri, client_id: clientId,
    code_verifier: verifier }) })
  const tokens = await token.json()
  out.token = { status: token.status, scope: tokens.scope, type: tokens.token_type }
  const bearer = { authorization: "Bearer " + tokens.access_token }
  const me = await fetch(resource.resource + "/users/me", { headers: { ...bearer, "x-request-id": crypto.randomUUID() } })
  out.me = { status: me.status, email: (await me.json()).data.email, requestId: me.headers.get("x-request-id"),
    limit: me.headers.get("x-ratelimit-limit"), remaining: me.headers.get("x-ratelimit-remaining"),
    reset: me.headers.get("x-ratelimit-reset") }
  const key = crypto.randomUUID()
  const create = () => fetch(resource.resource + "/projects", { method: "POST",
    headers: { ...bearer, "content-type": "application/json", "idempotency-key": key },
    body: JSON.stringify({ name: "Made from another origin" }) })
  const created = await create()
  const replayed = await create()
  out.project = { status: created.status, name: (await created.json()).data.name, replayed: replayed.headers.get("idempotent-replayed") }
  const list = await fetch(resource.resource + "/projects?per_page=1", { headers: bearer })
  out.list = { status: list.status, link: list.headers.get("link") }
  const introspect = await fetch(service + "/oauth/introspect", { method: "POST",
    body: new URLSearchParams({ token: tokens.access_token, client_id: clientId }) }).then(() => "readable", () => "blocked")
  out.introspect = introspect
  const revoked = await fetch(metadata.revocation_endpoint, { method: "POST",
    body: new URLSearchParams({ token: tokens.access_token, client_id: clientId }) })
  out.revoke = revoked.status
  const after = await fetch(resource.resource + "/users/me", { headers: bearer })
  out.after = { status: after.status, challenge: after.headers.get("www-authenticate") }
  show(out)
}
</script></body></html>`

beforeAll(async () => {
  server = await startServer({ env: { AUTH_IP_LIMIT_PER_MINUTE: "100000" } })
  const port = freePort()
  appUrl = `http://127.0.0.1:${port}`
  const client = await server.cli<{ client_id: string }>(
    "oauth-clients",
    "create",
    "--name",
    "Browser App",
    "--redirect-uri",
    `${appUrl}/callback`,
    "--public"
  )
  clientId = client.client_id
  const page = spa(server.url, clientId, `${appUrl}/callback`)
  app = Bun.serve({
    hostname: "127.0.0.1",
    port,
    fetch: () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } })
  })
  person = await userWithPassword(server, "Sam Single")
  session = await openBrowser()
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
  app?.stop(true)
}, 20_000)

test("a single-page app on another origin: PKCE sign-in as a public client, /v1 calls, revocation", async () => {
  const { page } = session
  await page.goto(`${appUrl}/`)
  await page.getByRole("button", { name: "Sign in with the service" }).click()
  await page.getByLabel("Email").fill(person.email)
  await page.getByLabel("Password").fill(person.password)
  await page.getByRole("button", { name: "Sign in" }).click()
  await page.getByRole("heading", { level: 1, name: "Allow access?" }).waitFor()
  await page.getByText("Whatever you allow, it can never:").waitFor()
  const consent = await page.locator(".auth-card").textContent()
  expect(consent).not.toContain("API keys, webhooks")
  expect(consent).toContain("See, create or revoke your API keys")
  await session.shots("45-oauth-consent-scopes")
  await page.getByRole("button", { name: "Allow" }).click()
  await page.waitForURL(`${appUrl}/callback?**`)
  const result = page.locator("#result")
  await result.filter({ hasText: "after" }).waitFor({ timeout: 30_000 })
  const out = JSON.parse((await result.textContent()) ?? "{}")
  expect(out).toEqual({
    resource: `${server.url}/v1`,
    stateMatches: true,
    iss: `${server.url}/oauth`,
    token: { status: 200, scope: "read write projects:read team:manage", type: "Bearer" },
    me: {
      status: 200,
      email: person.email,
      requestId: expect.stringMatching(/^req_[0-9a-f-]{36}$/),
      limit: "1000",
      remaining: expect.stringMatching(/^\d+$/),
      reset: expect.stringMatching(/^\d+$/)
    },
    project: { status: 201, name: "Made from another origin", replayed: "true" },
    list: { status: 200, link: expect.stringContaining('rel="first"') },
    introspect: "blocked",
    revoke: 200,
    after: { status: 401, challenge: expect.stringContaining('error="invalid_token"') }
  })
  // The browser asked before its calls with a bearer token, and was answered.
  const preflights = server.logs.filter((line) => line.includes('"method":"OPTIONS"'))
  expect(preflights.some((line) => line.includes('"path":"/v1/users/me"') && line.includes('"status":204'))).toBe(true)
  expect(preflights.some((line) => line.includes('"path":"/v1/projects"') && line.includes('"status":204'))).toBe(true)
  expectOnlyLoopback(session)
  // The one refusal the page provoked on purpose: introspection is closed to browsers (Chromium reports the blocked
  // call by its URL, or as a bare ERR_FAILED for the resource).
  const blocked = (text: string) => text.includes("/oauth/introspect") || text.endsWith("net::ERR_FAILED")
  const refusals = problems(session).filter((problem) => blocked(problem.text))
  expect(refusals.length).toBeGreaterThanOrEqual(1)
  expect(problems(session).filter((problem) => !blocked(problem.text))).toEqual([])
}, 90_000)
