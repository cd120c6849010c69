// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * Teams (members, roles, invitations, your own pending invitations) and a project's deployments, in Chromium.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { type Server, startServer } from "../support/server.ts"
import {
  type BrowserSession,
  expectNoProblems,
  expectOnlyLoopback,
  openBrowser,
  signIn,
  userWithPassword
} from "./browser.ts"

let server: Server
let session: BrowserSession
let ann: Awaited<ReturnType<typeof userWithPassword>>
let bob: Awaited<ReturnType<typeof userWithPassword>>

beforeAll(async () => {
  server = await startServer()
  ;[ann, bob] = await Promise.all([userWithPassword(server, "Ann Owner"), userWithPassword(server, "Bob Invitee")])
  session = await openBrowser({ origin: server.url })
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
}, 20_000)

const signOut = async () => {
  await session.page.getByRole("button", { name: "Sign out" }).click()
  await session.page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
}

describe("teams and deployments", () => {
  let teamUrl = ""

  test("a team: created, someone invited and someone else's invitation revoked, filtered by status", async () => {
    const { page } = session
    await signIn(page, server.url, ann)
    await page.getByRole("link", { name: "Teams", exact: true }).click()
    await page.getByRole("heading", { level: 1, name: "Teams" }).waitFor()
    await page.getByText("No pending invitations.").waitFor()
    await page.getByText("New team").click()
    await page.getByLabel("Name").fill("Rocket")
    await page.getByRole("button", { name: "Create team" }).click()
    await page.getByRole("heading", { level: 1, name: "Rocket" }).waitFor()
    await page.getByText("you: owner").waitFor()
    teamUrl = page.url()
    const owner = page.locator("tbody tr", { hasText: ann.email })
    await owner.waitFor()
    // The sole owner is not offered Leave (it could only end in "must keep at least one owner"): told why instead.
    await owner.getByText("You are the only owner: make someone else owner before you leave.").waitFor()
    expect(await owner.getByRole("button", { name: /^Leave/ }).count()).toBe(0)
    // Times carry their zone (the browser's, UTC here); the hour as the locale writes it ("0:14:37", "14:14:37").
    expect(await owner.locator("time").textContent()).toMatch(/\b\d{1,2}:\d{2}:\d{2}( [AP]M)? UTC$/)

    await page.getByText("Invite someone").click()
    await page.getByLabel("Email", { exact: true }).fill(bob.email)
    await page.getByLabel("Role", { exact: true }).selectOption("admin")
    await page.getByRole("button", { name: "Send invitation" }).click()
    const bobInvite = page.locator("tbody tr", { hasText: bob.email })
    await bobInvite.locator(".badge", { hasText: "pending" }).waitFor()

    // The form folded away once the invitation was sent: opened again for the next one.
    await page.getByText("Invite someone").click()
    await page.getByLabel("Email", { exact: true }).fill("carol@example.com")
    await page.getByRole("button", { name: "Send invitation" }).click()
    const carol = page.locator("tbody tr", { hasText: "carol@example.com" })
    await carol.waitFor()
    // Inviting the same email twice: the API's conflict message is shown.
    await page.getByText("Invite someone").click()
    await page.getByLabel("Email", { exact: true }).fill("carol@example.com")
    await page.getByRole("button", { name: "Send invitation" }).click()
    await page.locator(".form-error").waitFor()
    await carol.getByRole("button", { name: "Revoke the invitation to carol@example.com" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Revoke invitation" }).click()
    await carol.locator(".badge", { hasText: "revoked" }).waitFor()
    // Where the Revoke button was: what happened, and when.
    expect(await carol.locator("td").last().textContent()).toMatch(/^Revoked \d/)
    await session.shots("30-team")

    await page.getByLabel("Status").selectOption("revoked")
    await page.getByRole("button", { name: "Apply" }).click()
    await page.waitForURL(/istatus=revoked/)
    await page.locator("tbody tr", { hasText: "carol@example.com" }).waitFor()
    expect(await page.locator("tbody tr", { hasText: bob.email }).filter({ hasText: "pending" }).count()).toBe(0)
  }, 120_000)

  test("the invitee sees it under Teams and accepts; the owner changes the role, then removes them", async () => {
    const { page } = session
    await signOut()
    await signIn(page, server.url, bob)
    await page.getByRole("link", { name: "Teams", exact: true }).click()
    const row = page.locator("tbody tr", { hasText: "admin" })
    await row.getByRole("button", { name: "Accept the invitation to Rocket" }).waitFor()
    // What and who, by name: the invitee cannot read the team, and an id tells a person nothing.
    const cells = await row.locator("td").allTextContents()
    expect(cells.slice(0, 3)).toEqual(["Rocket", ann.name, "admin"])
    expect(cells.join(" ")).not.toContain("team_")
    expect(cells[3]).toMatch(/ UTC$/)
    await session.shots("31-teams-invited")
    await row.getByRole("button", { name: "Accept the invitation to Rocket" }).click()
    await page.getByRole("heading", { level: 1, name: "Rocket" }).waitFor()
    await page.getByText("you: admin").waitFor()
    await page.getByRole("status").filter({ hasText: "you are a member of Rocket" }).waitFor()
    // A member who is not the last owner may leave.
    await page.locator("tbody tr", { hasText: bob.email }).getByRole("button", { name: "Leave Rocket" }).waitFor()

    await signOut()
    await signIn(page, server.url, ann)
    await page.goto(teamUrl)
    const member = page.locator("tbody tr", { hasText: bob.email }).first()
    await member.getByLabel(`Role of ${bob.name}`, { exact: true }).selectOption("member")
    // Reload only once the change is confirmed: a reload sent first would race the PUT (it lost on PostgreSQL).
    await member.getByRole("button", { name: `Change the role of ${bob.name}` }).click()
    await page
      .getByRole("status")
      .filter({ hasText: `${bob.name} is now a member.` })
      .waitFor()
    // The redrawn page's invitations load after its members: the shot waits for them.
    await page.locator("tbody tr", { hasText: "carol@example.com" }).waitFor()
    await session.shots("31-team-role-changed")
    await page.reload()
    expect(
      await page
        .locator("tbody tr", { hasText: bob.email })
        .first()
        .getByLabel(`Role of ${bob.name}`, { exact: true })
        .inputValue()
    ).toBe("member")
    // The last owner cannot be demoted: the API's message shows.
    const self = page.locator("tbody tr", { hasText: ann.email }).first()
    await self.getByLabel(`Role of ${ann.name}`, { exact: true }).selectOption("member")
    await self.getByRole("button", { name: `Change the role of ${ann.name}` }).click()
    // Named, not by id.
    expect(await self.getByRole("alert").textContent()).toContain("Team Rocket must keep at least one owner")

    await page
      .locator("tbody tr", { hasText: bob.email })
      .first()
      .getByRole("button", { name: `Remove ${bob.name}` })
      .click()
    await page.getByRole("dialog").getByRole("button", { name: "Remove member" }).click()
    await page
      .locator("tbody tr", { hasText: bob.email })
      .filter({ has: page.getByRole("button", { name: `Remove ${bob.name}` }) })
      .waitFor({ state: "detached" })
  }, 120_000)

  test("declining an invitation", async () => {
    const { page } = session
    await page.getByText("Invite someone").click()
    await page.getByLabel("Email", { exact: true }).fill(bob.email)
    await page.getByRole("button", { name: "Send invitation" }).click()
    await page.locator("tbody tr", { hasText: bob.email }).locator(".badge", { hasText: "pending" }).waitFor()
    await signOut()
    await signIn(page, server.url, bob)
    await page.getByRole("link", { name: "Teams", exact: true }).click()
    await page.getByRole("button", { name: /^Decline/ }).click()
    await page.getByText("No pending invitations.").waitFor()
    await signOut()
    await signIn(page, server.url, ann)
  }, 120_000)

  test("a project's deployments: started, finished as succeeded or failed, filtered; a bad environment shown at its field", async () => {
    const { page } = session
    await page.getByText("New project").click()
    await page.getByLabel("Name").fill("Launchpad")
    await page.getByRole("button", { name: "Create project" }).click()
    await page.getByRole("heading", { level: 1, name: "Launchpad" }).waitFor()
    await page.getByText("No deployments yet.").waitFor()

    await page.getByText("Start a deployment").click()
    await page.getByLabel("Environment", { exact: true }).first().fill("Prod!")
    await page.getByLabel("Ref").fill("v1.0.0")
    await page.getByRole("button", { name: "Start deployment" }).click()
    await page.locator('[data-field="environment"] .field-error', { hasText: /\S/ }).waitFor()

    await page.getByLabel("Environment", { exact: true }).first().fill("production")
    await page.getByRole("button", { name: "Start deployment" }).click()
    const first = page.locator("tbody tr", { hasText: "v1.0.0" })
    await first.locator(".badge", { hasText: "running" }).waitFor()
    await first.getByRole("button", { name: "Mark v1.0.0 succeeded" }).click()
    await first.locator(".badge", { hasText: "succeeded" }).waitFor()

    await page.getByText("Start a deployment").click()
    await page.getByLabel("Ref").fill("v1.0.1")
    await page.getByRole("button", { name: "Start deployment" }).click()
    const second = page.locator("tbody tr", { hasText: "v1.0.1" })
    await second.getByRole("button", { name: "Mark v1.0.1 failed" }).click()
    await second.locator(".badge", { hasText: "failed" }).waitFor()
    await session.shots("32-deployments")

    await page.getByLabel("Status").selectOption("failed")
    await page.getByRole("button", { name: "Apply" }).click()
    await page.waitForURL(/dstatus=failed/)
    await page.locator("tbody tr", { hasText: "v1.0.1" }).waitFor()
    expect(await page.locator("tbody tr", { hasText: "v1.0.0" }).count()).toBe(0)
  }, 120_000)

  test("an owner with another owner beside them may leave; the sign-in page gives a neutral hint, no commands", async () => {
    const { page } = session
    const team = await server.fixtures.team("Duo", ann.id)
    await server.fixtures.addMember(team.id, bob.id, "owner")
    await page.goto(`${server.url}/dashboard/teams/${team.id}`)
    await page.getByRole("heading", { level: 1, name: "Duo" }).waitFor()
    await page.locator("tbody tr", { hasText: ann.email }).getByRole("button", { name: "Leave Duo" }).waitFor()
    expect(await page.getByText("You are the only owner").count()).toBe(0)

    await signOut()
    // A visitor is pointed to whoever runs the service; the operator's commands are in docs/cli.md, not here.
    await page.getByText("Ask whoever runs this service").waitFor()
    expect(await page.locator("main").textContent()).not.toContain("bun run cli")
    expect(await page.locator("main pre").count()).toBe(0)
    await session.shots("33-sign-in")
  }, 120_000)

  test("nothing left 127.0.0.1, and no CSP violation or error reached the console", () => {
    expectOnlyLoopback(session)
    expectNoProblems(session)
  }, 10_000)
})
