// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * Two people editing one project in the dashboard (issue 42): the dashboard sends `If-Match` with the `ETag` the page
 * was drawn from, so a save after someone else's change is refused (412) instead of silently overwriting it; the
 * form then says so and shows the current version, and saving again replaces it. A button (Archive) refused the same
 * way reloads the page with the current version and says why. The webhook edit, the team's rename and delete and the
 * OAuth application's edit and delete, a webhook's "Set active again" and Delete, and a deployment's finish are
 * guarded the same way. Photographed at 1280 and 375 px.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { eventually } from "../support/helpers.ts"
import { type ServerProcess, startServer } from "../support/server.ts"
import {
  type BrowserSession,
  expectNoProblems,
  expectOnlyLoopback,
  openBrowser,
  signIn,
  userWithPassword,
  violations
} from "./browser.ts"

let server: ServerProcess
let session: BrowserSession
let ann: Awaited<ReturnType<typeof userWithPassword>>
let colleague = ""

beforeAll(async () => {
  // Retries a moment apart: a webhook whose receiver is down is `failed` within seconds.
  server = await startServer({
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_DELAYS: "100ms,100ms,100ms,100ms" }
  })
  ann = await userWithPassword(server, "Ann Example")
  // The colleague: another client of the same account (another tab, a script), through the API.
  colleague = (await server.fixtures.apiKey(ann.id, { name: "colleague" })).key
  session = await openBrowser({ origin: server.url })
  // Signed in once for every test (each can run alone).
  await signIn(session.page, server.url, ann)
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
}, 20_000)

const project = async (id: string) => (await server.request(`/v1/projects/${id}`, { key: colleague })).body.data

test("a save after someone else's change is refused, says so, shows the current version; saving again applies", async () => {
  const { page } = session
  const created = await server.request("/v1/projects", {
    method: "POST",
    key: colleague,
    body: { name: "Apollo", description: "The first one" }
  })
  const id: string = created.body.data.id
  await page.goto(`${server.url}/dashboard/projects/${id}`)
  await page.getByRole("heading", { level: 1, name: "Apollo" }).waitFor()

  await page.getByText("Edit project").click()
  await page.getByLabel("Name").fill("Apollo (mine)")

  // Meanwhile the colleague renames it and rewrites its description.
  const theirs = await server.request(`/v1/projects/${id}`, {
    method: "PUT",
    key: colleague,
    body: { name: "Apollo (theirs)", description: "Rewritten by a colleague" }
  })
  expect(theirs.status).toBe(200)

  await page.getByRole("button", { name: "Save changes" }).click()
  const alert = page.locator(".changed-meanwhile")
  await alert.waitFor()
  expect(await alert.getAttribute("role")).toBe("alert")
  const text = (await alert.textContent()) ?? ""
  expect(text).toContain("Someone else changed this project while you were editing it")
  expect(text).toContain("Apollo (theirs)")
  expect(text).toContain("Rewritten by a colleague")
  // Nothing of the refused save reached the project.
  expect((await project(id)).name).toBe("Apollo (theirs)")
  // The form kept the edit.
  expect(await page.getByLabel("Name").inputValue()).toBe("Apollo (mine)")
  await session.shots("42-changed-meanwhile")

  // Having seen the current version, saving again replaces it.
  await page.getByRole("button", { name: "Save changes" }).click()
  await page.getByRole("heading", { level: 1, name: "Apollo (mine)" }).waitFor()
  await page.getByText("Project saved.").waitFor()
  const saved = await project(id)
  expect(saved.name).toBe("Apollo (mine)")
  // Only the fields of the form were sent: the description the colleague wrote was in the form when it was saved.
  expect(saved.description).toBe("The first one")

  // A button refused the same way: the page again, with the current version and the reason.
  await server.request(`/v1/projects/${id}`, { method: "PUT", key: colleague, body: { description: "Changed again" } })
  await page.getByRole("button", { name: "Archive" }).click()
  await page.getByText("Someone else changed this project meanwhile, so nothing was changed.").waitFor()
  await page.getByText("Changed again").waitFor()
  expect((await project(id)).status).toBe("active")
  await session.shots("42-changed-meanwhile-button")
  // With the current version on the page, Archive applies.
  await page.getByRole("button", { name: "Archive" }).click()
  await page.getByText("Project archived.").waitFor()
  expect((await project(id)).status).toBe("archived")

  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 120_000)

test("a webhook edit after someone else's change is refused the same way", async () => {
  const { page } = session
  const created = await server.request("/v1/webhooks", {
    method: "POST",
    key: colleague,
    body: { url: "http://127.0.0.1:9/first", events: ["project.deleted"] }
  })
  expect(created.status).toBe(201)
  const id: string = created.body.data.id
  await page.goto(`${server.url}/dashboard/webhooks/${id}`)
  await page.getByRole("heading", { level: 1, name: "Webhook" }).waitFor()
  await page.getByText("Edit webhook").click()
  await page.getByLabel("Payload URL").fill("http://127.0.0.1:9/mine")
  const theirs = await server.request(`/v1/webhooks/${id}`, {
    method: "PUT",
    key: colleague,
    body: { url: "http://127.0.0.1:9/theirs" }
  })
  expect(theirs.status).toBe(200)
  await page.getByRole("button", { name: "Save changes" }).click()
  const alert = page.locator(".changed-meanwhile")
  await alert.waitFor()
  const text = (await alert.textContent()) ?? ""
  expect(text).toContain("Someone else changed this webhook while you were editing it")
  expect(text).toContain("http://127.0.0.1:9/theirs")
  const stored = await server.request(`/v1/webhooks/${id}`, { key: colleague })
  expect(stored.body.data.url).toBe("http://127.0.0.1:9/theirs")
  await session.shots("42-webhook-changed-meanwhile")
  await page.getByRole("button", { name: "Save changes" }).click()
  await page.getByText("Webhook saved.").waitFor()
  expect((await server.request(`/v1/webhooks/${id}`, { key: colleague })).body.data.url).toBe("http://127.0.0.1:9/mine")
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 120_000)

test("a team rename after someone else's, and a delete of a team changed meanwhile, are refused the same way", async () => {
  const { page } = session
  // Managing a team takes the team:manage scope.
  const manager = (await server.fixtures.apiKey(ann.id, { name: "team colleague", scopes: "read,write,team:manage" }))
    .key
  const created = await server.request("/v1/teams", { method: "POST", key: manager, body: { name: "Crew" } })
  expect(created.status).toBe(201)
  const id: string = created.body.data.id
  const team = async () => (await server.request(`/v1/teams/${id}`, { key: manager })).body.data
  await page.goto(`${server.url}/dashboard/teams/${id}`)
  await page.getByRole("heading", { level: 1, name: "Crew" }).waitFor()
  await page.getByText("Rename team").click()
  const renameForm = page.getByRole("form", { name: "Rename team" })
  await renameForm.getByLabel("Name").fill("Crew (mine)")
  const theirs = await server.request(`/v1/teams/${id}`, {
    method: "PUT",
    key: manager,
    body: { name: "Crew (theirs)" }
  })
  expect(theirs.status).toBe(200)
  await renameForm.getByRole("button", { name: "Rename" }).click()
  const alert = page.locator(".changed-meanwhile")
  await alert.waitFor()
  const text = (await alert.textContent()) ?? ""
  expect(text).toContain("Someone else changed this team while you were editing it")
  expect(text).toContain("Crew (theirs)")
  expect((await team()).name).toBe("Crew (theirs)")
  expect(await renameForm.getByLabel("Name").inputValue()).toBe("Crew (mine)")
  expect(await violations(page)).toEqual([])
  await session.shots("42-team-changed-meanwhile")
  // Having seen the current name, renaming again replaces it.
  await renameForm.getByRole("button", { name: "Rename" }).click()
  await page.getByText("Team renamed.").waitFor()
  await page.getByRole("heading", { level: 1, name: "Crew (mine)" }).waitFor()
  expect((await team()).name).toBe("Crew (mine)")

  // Delete after the colleague renamed it again: not deleted; the page again with the current name and the reason.
  await server.request(`/v1/teams/${id}`, { method: "PUT", key: manager, body: { name: "Crew (renamed again)" } })
  await page.getByRole("button", { name: "Delete team" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Delete team" }).click()
  await page.getByText("Someone else changed this team meanwhile, so it was not deleted.").waitFor()
  await page.getByRole("heading", { level: 1, name: "Crew (renamed again)" }).waitFor()
  expect((await server.request(`/v1/teams/${id}`, { key: manager })).status).toBe(200)
  await session.shots("42-team-delete-changed-meanwhile")
  // With the current version on the page, Delete applies.
  await page.getByRole("button", { name: "Delete team" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Delete team" }).click()
  await page.getByText("Team “Crew (renamed again)” deleted.").waitFor()
  expect((await server.request(`/v1/teams/${id}`, { key: manager })).status).toBe(404)
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 120_000)

test("an OAuth application's edit after someone else's, and its delete after a change, are refused the same way", async () => {
  const { page } = session
  const created = await server.request("/v1/oauth-clients", {
    method: "POST",
    key: colleague,
    body: { name: "Reader", redirect_uris: ["https://reader.example/cb"] }
  })
  expect(created.status).toBe(201)
  const id: string = created.body.data.id
  const app = async () => await server.request(`/v1/oauth-clients/${id}`, { key: colleague })
  await page.goto(`${server.url}/dashboard/settings/oauth-apps/${id}`)
  await page.getByRole("heading", { level: 1, name: "Reader" }).waitFor()
  await page.getByText("Edit application").click()
  await page.getByLabel("Application name").fill("Reader (mine)")
  const theirs = await server.request(`/v1/oauth-clients/${id}`, {
    method: "PUT",
    key: colleague,
    body: { name: "Reader (theirs)", redirect_uris: ["https://theirs.example/cb"] }
  })
  expect(theirs.status).toBe(200)
  await page.getByRole("button", { name: "Save changes" }).click()
  const alert = page.locator(".changed-meanwhile")
  await alert.waitFor()
  const text = (await alert.textContent()) ?? ""
  expect(text).toContain("Someone else changed this application while you were editing it")
  expect(text).toContain("Reader (theirs)")
  expect(text).toContain("https://theirs.example/cb")
  expect((await app()).body.data.name).toBe("Reader (theirs)")
  expect(await page.getByLabel("Application name").inputValue()).toBe("Reader (mine)")
  expect(await violations(page)).toEqual([])
  await session.shots("42-oauth-app-changed-meanwhile")
  // Having seen the current version, saving again replaces it.
  await page.getByRole("button", { name: "Save changes" }).click()
  await page.getByText("Application saved.").waitFor()
  await page.getByRole("heading", { level: 1, name: "Reader (mine)" }).waitFor()
  expect((await app()).body.data).toMatchObject({
    name: "Reader (mine)",
    redirect_uris: ["https://reader.example/cb"]
  })

  // Delete after the colleague changed it again: not deleted; the page again with the current name and the reason.
  await server.request(`/v1/oauth-clients/${id}`, { method: "PUT", key: colleague, body: { name: "Reader (again)" } })
  await page.getByRole("button", { name: "Delete application" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Delete application" }).click()
  await page.getByText("Someone else changed this application meanwhile, so it was not deleted.").waitFor()
  await page.getByRole("heading", { level: 1, name: "Reader (again)" }).waitFor()
  expect((await app()).status).toBe(200)
  // A rotation on this page changes the record too; the page edits the rotated version afterwards, so Delete applies.
  const beforeRotation = (await app()).headers.get("etag")
  await page.getByRole("button", { name: "Rotate secret" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click()
  await page.getByText("Secret rotated").waitFor()
  expect((await app()).headers.get("etag")).not.toBe(beforeRotation)
  await page.getByRole("button", { name: "Delete application" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Delete application" }).click()
  await page.getByText("“Reader (again)” deleted.").waitFor()
  expect((await app()).status).toBe(404)
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 120_000)

/** A webhook of the colleague's at `url`, and a reader of it as the API has it now. */
const webhookAt = async (url: string, events: ReadonlyArray<string>) => {
  const created = await server.request("/v1/webhooks", { method: "POST", key: colleague, body: { url, events } })
  expect(created.status).toBe(201)
  const id: string = created.body.data.id
  return { id, read: async () => await server.request(`/v1/webhooks/${id}`, { key: colleague }) }
}

test("a webhook's Set active again after someone else's change is refused the same way", async () => {
  const { page } = session
  // Nothing listens on port 9: every attempt fails, and after the fifth the webhook is failed.
  const { id, read: hook } = await webhookAt("http://127.0.0.1:9/down", ["project.created"])
  expect(
    (await server.request("/v1/projects", { method: "POST", key: colleague, body: { name: "Ping" } })).status
  ).toBe(201)
  await eventually(async () => ((await hook()).body.data.status === "failed" ? true : undefined), {
    what: "the webhook failed",
    timeoutMs: 30_000
  })
  await page.goto(`${server.url}/dashboard/webhooks/${id}`)
  await page.locator(".page-head .badge", { hasText: "failed" }).waitFor()

  // Meanwhile the colleague points it elsewhere (it stays failed).
  const theirs = await server.request(`/v1/webhooks/${id}`, {
    method: "PUT",
    key: colleague,
    body: { url: "http://127.0.0.1:9/elsewhere" }
  })
  expect(theirs.status).toBe(200)
  await page.getByRole("button", { name: "Set active again" }).click()
  await page.getByText("Someone else changed this webhook meanwhile, so it was not set active.").waitFor()
  // The page again, with the current version: the colleague's URL, still failed.
  await page.locator("dd code.url", { hasText: "http://127.0.0.1:9/elsewhere" }).waitFor()
  await page.locator(".page-head .badge", { hasText: "failed" }).waitFor()
  expect((await hook()).body.data).toMatchObject({ status: "failed", url: "http://127.0.0.1:9/elsewhere" })
  expect(await violations(page)).toEqual([])
  await session.shots("42-webhook-set-active-changed-meanwhile")
  // With the current version on the page, it applies.
  await page.getByRole("button", { name: "Set active again" }).click()
  await page.getByText("Webhook set active.").waitFor()
  expect((await hook()).body.data.status).toBe("active")
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 120_000)

test("a webhook's Delete after someone else's change is refused the same way", async () => {
  const { page } = session
  const { id, read: hook } = await webhookAt("http://127.0.0.1:9/first", ["project.deleted"])
  await page.goto(`${server.url}/dashboard/webhooks/${id}`)
  await page.locator("dd code.url", { hasText: "http://127.0.0.1:9/first" }).waitFor()
  // Meanwhile the colleague points it elsewhere: not deleted; the page again with the current URL and the reason.
  const theirs = await server.request(`/v1/webhooks/${id}`, {
    method: "PUT",
    key: colleague,
    body: { url: "http://127.0.0.1:9/theirs" }
  })
  expect(theirs.status).toBe(200)
  await page.getByRole("button", { name: "Delete webhook" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Delete webhook" }).click()
  await page.getByText("Someone else changed this webhook meanwhile, so it was not deleted.").waitFor()
  await page.locator("dd code.url", { hasText: "http://127.0.0.1:9/theirs" }).waitFor()
  expect((await hook()).status).toBe(200)
  expect(await violations(page)).toEqual([])
  await session.shots("42-webhook-delete-changed-meanwhile")
  // With the current version on the page, Delete applies.
  await page.getByRole("button", { name: "Delete webhook" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Delete webhook" }).click()
  await page.getByText("Webhook deleted.").waitFor()
  expect((await hook()).status).toBe(404)
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 120_000)

/** A project of the colleague's with a running deployment of each ref; readers of a deployment and of its row. */
const deploying = async (name: string, refs: ReadonlyArray<string>) => {
  const created = await server.request("/v1/projects", { method: "POST", key: colleague, body: { name } })
  expect(created.status).toBe(201)
  const projectId: string = created.body.data.id
  const path = (id: string) => `/v1/projects/${projectId}/deployments/${id}`
  const ids: Array<string> = []
  for (const ref of refs) {
    const started = await server.request(`/v1/projects/${projectId}/deployments`, {
      method: "POST",
      key: colleague,
      body: { ref, environment: "production" }
    })
    expect(started.status).toBe(201)
    ids.push(started.body.data.id)
  }
  return {
    projectId,
    ids,
    path,
    read: async (id: string) => (await server.request(path(id), { key: colleague })).body.data,
    row: (ref: string) => session.page.locator("tbody tr", { hasText: ref })
  }
}

test("a deployment someone else finished since the page showed it is not finished again: the page says so and shows it", async () => {
  const { page } = session
  const { projectId, ids, path, read, row } = await deploying("Hermes", ["v1.0.0", "v1.2.0"])
  const [first = "", untouched = ""] = ids
  await page.goto(`${server.url}/dashboard/projects/${projectId}`)
  await page.getByRole("heading", { level: 1, name: "Hermes" }).waitFor()
  await page.getByRole("button", { name: "Mark v1.0.0 succeeded" }).waitFor()

  // Meanwhile the colleague marks it failed.
  const theirs = await server.request(path(first), {
    method: "PUT",
    key: colleague,
    body: { status: "failed", description: "Rolled back by a colleague" }
  })
  expect(theirs.status).toBe(200)
  await page.getByRole("button", { name: "Mark v1.0.0 succeeded" }).click()
  await page
    .getByText(
      "Someone else changed the deployment of v1.0.0 to production meanwhile, so it was not marked succeeded. Its status now: failed."
    )
    .waitFor()
  // The list shows the current version: failed, with the colleague's description, and nothing left to finish.
  await row("v1.0.0").locator(".badge", { hasText: "failed" }).waitFor()
  await row("v1.0.0").getByText("Rolled back by a colleague").waitFor()
  expect(await page.getByRole("button", { name: "Mark v1.0.0 succeeded" }).count()).toBe(0)
  // Its buttons are gone: focus goes to the section's heading, near where the keyboard left it (not to <body>).
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Deployments")
  expect(await read(first)).toMatchObject({ status: "failed", description: "Rolled back by a colleague" })
  expect(await violations(page)).toEqual([])
  await session.shots("42-deployment-changed-meanwhile")

  // A deployment nobody else touched finishes as before.
  await page.getByRole("button", { name: "Mark v1.2.0 succeeded" }).click()
  await page.getByText("Deployment of v1.2.0 to production marked succeeded.").waitFor()
  expect((await read(untouched)).status).toBe("succeeded")
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 120_000)

test("a deployment finished by someone else while the page sends its finish: If-Match is sent, the API answers 412", async () => {
  const { page } = session
  const { projectId, ids, path, read, row } = await deploying("Hermes II", ["v1.1.0"])
  const [id = ""] = ids
  await page.goto(`${server.url}/dashboard/projects/${projectId}`)
  await page.getByRole("button", { name: "Mark v1.1.0 failed" }).waitFor()
  // The colleague finishes it just before the page's PUT reaches the API (after the page took the tag it sends).
  const ifMatches: Array<string | null> = []
  const pattern = `**${path(id)}`
  await page.route(pattern, async (route) => {
    if (route.request().method() === "PUT") {
      ifMatches.push(await route.request().headerValue("if-match"))
      const colleagues = await server.request(path(id), {
        method: "PUT",
        key: colleague,
        body: { status: "succeeded" }
      })
      expect(colleagues.status).toBe(200)
    }
    await route.continue()
  })
  await page.getByRole("button", { name: "Mark v1.1.0 failed" }).click()
  await page
    .getByText(
      "Someone else changed the deployment of v1.1.0 to production meanwhile, so it was not marked failed. Its status now: succeeded."
    )
    .waitFor()
  await page.unroute(pattern)
  expect(ifMatches).toHaveLength(1)
  expect(ifMatches[0]).toMatch(/^"[^"]+"$/)
  await row("v1.1.0").locator(".badge", { hasText: "succeeded" }).waitFor()
  expect((await read(id)).status).toBe("succeeded")
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 120_000)
