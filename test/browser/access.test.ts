// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * What the dashboard offers by role and session, in Chromium: a team `member` on a team project sees no Archive,
 * Delete or visibility control (the owner does); Settings → Sessions lists the sessions, this one marked, and "Sign out
 * everywhere else" ends the others; Sign out ends the dashboard's own session at the service (its token is refused).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
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
let session: BrowserSession
let ann: Awaited<ReturnType<typeof userWithPassword>>
let mia: Awaited<ReturnType<typeof userWithPassword>>
let projectId = ""

beforeAll(async () => {
  server = await startServer({ env: { AUTH_IP_LIMIT_PER_MINUTE: "100000" } })
  ;[ann, mia] = await Promise.all([userWithPassword(server, "Ann Owner"), userWithPassword(server, "Mia Member")])
  const team = await server.fixtures.team("Rocket", ann.id)
  await server.fixtures.addMember(team.id, mia.id, "member")
  const key = (await server.fixtures.apiKey(ann.id, { scopes: "read,write" })).key
  const created = await server.request("/v1/projects", {
    method: "POST",
    key,
    body: { name: "Launch site", description: "Shared with the team", visibility: "team", team_id: team.id }
  })
  projectId = created.body.data.id
  session = await openBrowser({ origin: server.url })
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
}, 20_000)

const login = (email: string, password: string) =>
  server.request("/oauth/login", { method: "POST", body: { email, password }, headers: { "user-agent": "curl/8.5.0" } })

describe("roles and sessions in the dashboard", () => {
  test("a member's view of a team project: no Archive, Delete or visibility; the owner's has them", async () => {
    const { page } = session
    await signIn(page, server.url, mia)
    await page.goto(`${server.url}/dashboard/projects/${projectId}`)
    await page.getByRole("heading", { level: 1, name: "Launch site" }).waitFor()
    await page.getByText("need the team role admin or owner").waitFor()
    expect(await page.getByRole("button", { name: "Archive" }).count()).toBe(0)
    expect(await page.getByRole("button", { name: "Delete project" }).count()).toBe(0)
    await page.getByText("Edit project").click()
    expect(await page.getByLabel("Visibility").count()).toBe(0)
    await page.getByLabel("Name").waitFor()
    await session.shots("60-member-team-project")
    await page.getByRole("button", { name: "Sign out", exact: true }).click()
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()

    await signIn(page, server.url, ann)
    await page.goto(`${server.url}/dashboard/projects/${projectId}`)
    await page.getByRole("heading", { level: 1, name: "Launch site" }).waitFor()
    await page.getByRole("button", { name: "Archive" }).waitFor()
    await page.getByRole("button", { name: "Delete project" }).waitFor()
  }, 120_000)

  test("Settings → Sessions: listed with this one marked; Sign out everywhere else; Sign out ends the session", async () => {
    const { page } = session
    // Two more sessions of Ann's, elsewhere.
    const [elsewhere, phone] = [await login(ann.email, ann.password), await login(ann.email, ann.password)]
    for (const res of [elsewhere, phone]) expect(res.status).toBe(200)
    await openSettings(page, "Sessions")
    await page.getByRole("heading", { level: 1, name: "Sessions" }).waitFor()
    // Settings is the main navigation's current section, and Sessions the current one of its tabs.
    const current = (navigation: string, link: string) =>
      page
        .getByRole("navigation", { name: navigation })
        .getByRole("link", { name: link, exact: true })
        .getAttribute("aria-current")
    expect([await current("Main", "Settings"), await current("Settings", "Sessions")]).toEqual(["page", "page"])
    expect(await current("Settings", "API keys")).toBeNull()
    await page.locator("tbody tr", { hasText: "this session" }).waitFor()
    expect(await page.locator("tbody tr", { hasText: "curl/8.5.0" }).count()).toBe(2)
    await session.shots("61-sessions")
    await page.getByRole("button", { name: "Sign out everywhere else" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Sign out everywhere else" }).click()
    await page.locator("tbody tr", { hasText: "curl/8.5.0" }).first().waitFor({ state: "detached" })
    expect(await page.locator("tbody tr").count()).toBe(1)
    for (const res of [elsewhere, phone]) {
      expect((await server.request("/v1/users/me", { key: res.body.access_token })).status).toBe(401)
    }
    // The dashboard's own token, then Sign out: the token is refused afterwards.
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("pcs.dashboard.session") ?? "{}").token)
    expect((await server.request("/v1/users/me", { key: token })).status).toBe(200)
    await page.getByRole("button", { name: "Sign out", exact: true }).click()
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
    expect((await server.request("/v1/users/me", { key: token })).status).toBe(401)
    expectOnlyLoopback(session)
    expectNoProblems(session)
  }, 120_000)
})
