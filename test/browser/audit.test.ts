// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * The audit logs in Chromium (issue 41): changes made through the API appear, newest first and by name, in the
 * team's Audit log tab (owners and admins) and in the owner's Settings → Security log, with the action filter; a
 * team member sees no Audit log tab. axe-core finds no violation on either page.
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
let teamId = ""

beforeAll(async () => {
  server = await startServer({ env: { AUTH_IP_LIMIT_PER_MINUTE: "100000" } })
  ;[ann, mia] = await Promise.all([userWithPassword(server, "Ann Owner"), userWithPassword(server, "Mia Member")])
  const team = await server.fixtures.team("Rocket", ann.id)
  teamId = team.id
  await server.fixtures.addMember(team.id, mia.id, "member")
  const key = (await server.fixtures.apiKey(ann.id, { scopes: "read,write" })).key
  const created = await server.request("/v1/projects", {
    method: "POST",
    key,
    body: { name: "Launch site", description: "Shared", visibility: "team", team_id: team.id }
  })
  expect(created.status).toBe(201)
  const doomed = await server.request("/v1/projects", {
    method: "POST",
    key,
    body: { name: "Old pad", description: "", visibility: "team", team_id: team.id }
  })
  expect(doomed.status).toBe(201)
  expect((await server.request(`/v1/projects/${doomed.body.data.id}`, { method: "DELETE", key })).status).toBe(204)
  // Ann signed in elsewhere too, so that "Sign out everywhere else" ends a session (and so records it).
  const elsewhere = await server.request("/oauth/login", {
    method: "POST",
    body: { email: ann.email, password: ann.password }
  })
  expect(elsewhere.status).toBe(200)
  session = await openBrowser({ origin: server.url })
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
}, 20_000)

describe("audit logs in the dashboard", () => {
  test("the team's Audit log tab: the changes by name, newest first, filtered by action", async () => {
    const { page } = session
    await signIn(page, server.url, ann)
    await page.goto(`${server.url}/dashboard/teams/${teamId}`)
    await page.getByRole("heading", { level: 1, name: "Rocket" }).waitFor()
    await page.getByRole("navigation", { name: "Team" }).getByRole("link", { name: "Audit log" }).click()
    await page.getByRole("heading", { level: 1, name: "Rocket: audit log" }).waitFor()
    const rows = page.locator("tbody tr")
    await rows.filter({ hasText: "deleted project" }).waitFor()
    const texts = await rows.allInnerTexts()
    // Newest first: the deletion, then the two creations (the newest of them "Old pad").
    const deleted = texts.findIndex((text) => text.includes("deleted project") && text.includes("Old pad"))
    const launched = texts.findIndex((text) => text.includes("created project") && text.includes("Launch site"))
    expect(deleted).toBeGreaterThanOrEqual(0)
    expect(launched).toBeGreaterThan(deleted)
    expect(texts[deleted]).toContain("Ann Owner")
    expect(texts[deleted]).toContain("API key")
    expect(texts.join("\n")).not.toContain("prj_")
    await session.shots("70-team-audit-log")

    await page.getByLabel("Action").selectOption("project.deleted")
    await page.getByRole("button", { name: "Apply" }).click()
    await page.waitForURL(/action=project\.deleted/)
    // The page is drawn again for the new address: wait for its table, then read it.
    await rows.filter({ hasText: "Old pad" }).waitFor()
    expect(await rows.count()).toBe(1)
    expect(await rows.first().textContent()).toContain("deleted project")
    expect(await page.getByLabel("Action").inputValue()).toBe("project.deleted")
  }, 120_000)

  test("Settings → Security log: the owner's sign-in, a change made in the dashboard, and the API's", async () => {
    const { page } = session
    // A change made with the dashboard's own session: sign out everywhere else.
    await openSettings(page, "Sessions")
    await page.getByRole("button", { name: "Sign out everywhere else" }).click()
    // The log is read once the sessions have ended (the page says nothing of it but its list).
    const ended = page.waitForResponse(
      (response) => response.url().endsWith("/v1/users/me/sessions") && response.request().method() === "DELETE"
    )
    await page.getByRole("dialog").getByRole("button", { name: "Sign out everywhere else" }).click()
    expect((await ended).status()).toBe(204)
    await page.getByRole("dialog").waitFor({ state: "detached" })
    await page.getByRole("link", { name: "Security log", exact: true }).click()
    await page.getByRole("heading", { level: 1, name: "Security log" }).waitFor()
    const rows = page.locator("tbody tr")
    const signedIn = rows.filter({ hasText: "signed in" }).first()
    await signedIn.waitFor()
    expect(await signedIn.textContent()).toContain("Ann Owner")
    const revoked = rows.filter({ hasText: "signed a session out" }).first()
    await revoked.waitFor()
    expect(await revoked.textContent()).toContain("every other session")
    expect(await revoked.textContent()).toContain("Session")
    expect(await rows.first().textContent()).toContain("signed a session out")
    await rows.filter({ hasText: "Old pad" }).first().waitFor()
    await rows.filter({ hasText: "Launch site" }).first().waitFor()
    await session.shots("71-security-log")
    await page.getByRole("button", { name: "Sign out", exact: true }).click()
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
  }, 120_000)

  test("a team member sees no Audit log tab, and the page itself says it is not theirs", async () => {
    const { page } = session
    await signIn(page, server.url, mia)
    await page.goto(`${server.url}/dashboard/teams/${teamId}`)
    await page.getByRole("heading", { level: 1, name: "Rocket" }).waitFor()
    await page.getByRole("heading", { level: 2, name: "Members" }).waitFor()
    expect(await page.getByRole("link", { name: "Audit log" }).count()).toBe(0)
    await page.goto(`${server.url}/dashboard/teams/${teamId}/audit-log`)
    await page.getByText("Only the team's owners and admins can read its audit log.").waitFor()
    expect(await page.locator("tbody tr").count()).toBe(0)
    expectOnlyLoopback(session)
    expectNoProblems(session)
  }, 120_000)
})
