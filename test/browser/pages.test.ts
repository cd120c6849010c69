// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * The dashboard's pages as issue 44 found them, in Chromium: a project's page names its team (linked) and its owner;
 * ids have a Copy button that keeps focus and says "Copied"; a refused role change puts the current role back and
 * says why; each action (start a deployment, send an invitation, revoke one) says its result in the page's status
 * banner, in place of the previous one, and a form that succeeded folds away with focus on what opened it; an error
 * about a field is shown at that field only; the new-key form says what each scope means. Each page is photographed
 * at 1280 and 375 px and checked with axe-core (`session.shots`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type { Page } from "playwright-core"
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
let projectId = ""

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
    body: { name: "Launch site", description: "Shared with the team", visibility: "team", team_id: team.id }
  })
  expect(created.status).toBe(201)
  projectId = created.body.data.id
  session = await openBrowser({ origin: server.url })
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
}, 20_000)

/** What has focus: its tag and accessible name (its `aria-label`, else its text). */
const focused = (page: Page) =>
  page.evaluate(() => {
    const active = document.activeElement
    if (active === null) return "none"
    return `${active.tagName.toLowerCase()}:${active.getAttribute("aria-label") ?? (active.textContent ?? "").trim()}`
  })

/** The page's status banner (the live region every page has), once it says something. */
const banner = (page: Page) => page.locator("main > .flash[role=status]")

const signOut = async (page: Page) => {
  await page.getByRole("button", { name: "Sign out", exact: true }).click()
  await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
}

describe("pages", () => {
  test("a project's page names its team, linked, and its owner; its id has a Copy button that keeps focus", async () => {
    const { page } = session
    await signIn(page, server.url, mia)
    await page.goto(`${server.url}/dashboard/projects/${projectId}`)
    await page.getByRole("heading", { level: 1, name: "Launch site" }).waitFor()
    const facts = page.locator("dl.facts")
    await facts.getByRole("link", { name: "Rocket" }).waitFor()
    expect(await facts.getByRole("link", { name: "Rocket" }).getAttribute("href")).toBe(`/dashboard/teams/${teamId}`)
    expect(await facts.textContent()).not.toContain("team_")
    expect(await facts.locator("dt:has-text('Owner') + dd").textContent()).toBe("Ann Owner")

    const copy = page.getByRole("button", { name: "Copy project id" })
    await copy.focus()
    await page.keyboard.press("Enter")
    await facts.getByRole("status").filter({ hasText: "Copied" }).waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(projectId)
    expect(await focused(page)).toBe("button:Copy project id")
    await session.shots("80-project-team-owner")
    await signOut(page)

    await signIn(page, server.url, ann)
    await page.goto(`${server.url}/dashboard/projects/${projectId}`)
    await page.getByRole("heading", { level: 1, name: "Launch site" }).waitFor()
    await page.locator("dl.facts dt:has-text('Owner') + dd", { hasText: "Ann Owner (you)" }).waitFor()
  }, 120_000)

  test("a refused role change puts the current role back and says why; a change that works keeps focus on its button", async () => {
    const { page } = session
    await page.goto(`${server.url}/dashboard/teams/${teamId}`)
    await page.getByRole("heading", { level: 1, name: "Rocket" }).waitFor()
    await page.getByRole("button", { name: "Copy team id" }).click()
    await page.locator("dl.facts").getByRole("status").filter({ hasText: "Copied" }).waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(teamId)

    // Ann is the only owner: making herself a member is refused, and her row shows "owner" again.
    const self = page.locator("tbody tr", { hasText: ann.email }).first()
    const own = self.getByLabel(`Role of ${ann.name}`, { exact: true })
    await own.selectOption("member")
    await self.getByRole("button", { name: `Change the role of ${ann.name}` }).click()
    await self.getByRole("alert").filter({ hasText: "must keep at least one owner" }).waitFor()
    expect(await own.inputValue()).toBe("owner")
    expect(await focused(page)).toBe(`button:Change the role of ${ann.name}`)
    await session.shots("81-team-role-refused")

    // Mia made an admin: the page is drawn again, and focus is on the same row's button.
    const member = page.locator("tbody tr", { hasText: mia.email }).first()
    await member.getByLabel(`Role of ${mia.name}`, { exact: true }).selectOption("admin")
    await member.getByRole("button", { name: `Change the role of ${mia.name}` }).click()
    await banner(page)
      .filter({ hasText: `${mia.name} is now an admin.` })
      .waitFor()
    await page.waitForFunction(
      (name) => document.activeElement?.getAttribute("aria-label") === name,
      `Change the role of ${mia.name}`
    )
    expect(
      await page
        .locator("tbody tr", { hasText: mia.email })
        .first()
        .getByLabel(`Role of ${mia.name}`, { exact: true })
        .inputValue()
    ).toBe("admin")
  }, 120_000)

  test("sending an invitation says so in place of the last banner and folds the form away; revoking it says so too", async () => {
    const { page } = session
    // A banner from the last action is on the page ("… is now an admin."): the next action replaces it.
    await banner(page).filter({ hasText: "is now an admin" }).waitFor()
    const summary = page.getByText("Invite someone")
    await summary.click()
    await page.getByLabel("Email", { exact: true }).fill("dora@example.com")
    await page.getByRole("button", { name: "Send invitation" }).click()
    await banner(page).filter({ hasText: "Invitation sent to dora@example.com (member)." }).waitFor()
    expect(await banner(page).textContent()).not.toContain("is now an admin")
    expect(await page.locator("details", { has: page.getByText("Invite someone") }).getAttribute("open")).toBeNull()
    expect(await focused(page)).toBe("summary:Invite someone")
    const dora = page.locator("tbody tr", { hasText: "dora@example.com" })
    await dora.locator(".badge", { hasText: "pending" }).waitFor()
    await session.shots("82-invitation-sent")

    // The same email again: the conflict has no field, so the form's banner says it (once).
    await summary.click()
    await page.getByLabel("Email", { exact: true }).fill("dora@example.com")
    await page.getByRole("button", { name: "Send invitation" }).click()
    await page.locator("form .form-error").waitFor()
    expect(await page.locator("form .field-error:not(:empty)").count()).toBe(0)
    // An email the API refuses: said at the field only, no banner.
    await page.getByLabel("Email", { exact: true }).fill("not an email")
    await page.getByRole("button", { name: "Send invitation" }).click()
    await page.locator('[data-field="email"] .field-error', { hasText: /\S/ }).waitFor()
    expect(await page.locator("form .form-error").count()).toBe(0)
    expect(await focused(page)).toMatch(/^input:/)
    await session.shots("83-invitation-field-error")

    await dora.getByRole("button", { name: "Revoke the invitation to dora@example.com" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Revoke invitation" }).click()
    await banner(page).filter({ hasText: "Invitation to dora@example.com revoked." }).waitFor()
    await dora.locator(".badge", { hasText: "revoked" }).waitFor()
    // The Revoke button is gone with its row's change: focus is on the section's heading, not on <body>.
    await page.waitForFunction(() => document.activeElement?.tagName === "H2")
    expect(await focused(page)).toBe("h2:Invitations")
  }, 120_000)

  test("starting a deployment says so, folds the form away and gives focus back to what opened it", async () => {
    const { page } = session
    await page.goto(`${server.url}/dashboard/projects/${projectId}`)
    await page.getByRole("heading", { level: 1, name: "Launch site" }).waitFor()
    await page.getByText("No deployments yet.").waitFor()
    await page.getByText("Start a deployment").click()
    await page.getByLabel("Ref").fill("v2.0.0")
    await page.getByRole("button", { name: "Start deployment" }).click()
    await banner(page).filter({ hasText: "Deployment of v2.0.0 to production started." }).waitFor()
    await page.locator("tbody tr", { hasText: "v2.0.0" }).locator(".badge", { hasText: "running" }).waitFor()
    expect(await page.locator("details", { has: page.getByText("Start a deployment") }).getAttribute("open")).toBeNull()
    expect(await focused(page)).toBe("summary:Start a deployment")
    // Opened again, the form is empty for the next one.
    await page.getByText("Start a deployment").click()
    expect(await page.getByLabel("Ref").inputValue()).toBe("")
    await session.shots("84-deployment-started")

    await page.getByRole("button", { name: "Mark v2.0.0 succeeded" }).click()
    await banner(page).filter({ hasText: "Deployment of v2.0.0 to production marked succeeded." }).waitFor()
    await page.waitForFunction(() => document.activeElement?.tagName === "H2")
    expect(await focused(page)).toBe("h2:Deployments")
  }, 120_000)

  test("the new-key form says what each scope means", async () => {
    const { page } = session
    await openSettings(page, "API keys")
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor()
    await page.getByText("New API key").click()
    const described = (label: string) =>
      page
        .getByLabel(label, { exact: true })
        .evaluate((box) => document.getElementById(box.getAttribute("aria-describedby") ?? "")?.textContent ?? "")
    expect(await described("read")).toBe("Read everything you can see")
    expect(await described("projects:write")).toBe("Change projects and their deployments only")
    expect(await described("team:manage")).toContain("members, roles and invitations")
    await session.shots("85-api-key-scopes")
  }, 120_000)

  test("nothing left 127.0.0.1, and no CSP violation or error reached the console", () => {
    expectOnlyLoopback(session)
    expectNoProblems(session)
  })
})
