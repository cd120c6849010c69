/**
 * The Events page in Chromium: the caller's feed newest first, each event's JSON (pretty-printed, the same value
 * as delivered), the type filter (several types at once, kept in the address), paging, and one event's page at
 * `/dashboard/events/<id>` (what a delivery links to); an event outside the caller's audience says not found.
 * Screenshots at 1280 and 375 px.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
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
let annKey: string
let bobKey: string
const projectIds: Array<string> = []

beforeAll(async () => {
  server = await startServer()
  ann = await userWithPassword(server, "Ann Events")
  annKey = (await server.fixtures.apiKey(ann.id, { name: "test", scopes: "read,write" })).key
  bobKey = (await server.user({ name: "Bob" })).key
  // 23 creates and 2 updates: two pages of 20 in all; three pages of creates alone would not fit on one.
  for (let i = 1; i <= 23; i++) {
    const res = await server.request("/v1/projects", {
      method: "POST",
      key: annKey,
      body: { name: `Project ${i}`, description: i === 23 ? 'Quote " and <tag>' : "" }
    })
    expect(res.status).toBe(201)
    projectIds.push(res.body.data.id)
  }
  for (const id of projectIds.slice(0, 2)) {
    const res = await server.request(`/v1/projects/${id}`, { method: "PUT", key: annKey, body: { name: "Renamed" } })
    expect(res.status).toBe(200)
  }
  session = await openBrowser({ origin: server.url })
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
}, 20_000)

test("the feed newest first with each event's JSON, filtered by type, paged; one event's page", async () => {
  const { page } = session
  await signIn(page, server.url, ann)
  await page.getByRole("link", { name: "Events" }).click()
  await page.getByRole("heading", { level: 1, name: "Events" }).waitFor()
  const items = page.locator(".event-list > li")
  await items.first().waitFor()
  expect(await items.count()).toBe(20)
  await page.getByText("Page 1 of 2 · 25 in all").waitFor()
  // Newest first: the two updates, then the last create.
  expect(await items.nth(0).locator(".event-type").textContent()).toBe("project.updated")
  expect(await items.nth(2).locator(".event-type").textContent()).toBe("project.created")
  const feed = await server.request("/v1/events?per_page=3", { key: annKey })
  const third = feed.body.data[2]
  await items.nth(2).locator("summary").click()
  const shown = await items.nth(2).locator("pre.event-json").textContent()
  expect(JSON.parse(shown ?? "")).toEqual(third)
  expect(shown).toBe(JSON.stringify(third, null, 2))
  expect(shown).toContain('"description": "Quote \\" and <tag>"')
  await session.shots("60-events")

  await page.getByRole("link", { name: "Next →" }).click()
  await page.getByText("Page 2 of 2 · 25 in all").waitFor()
  expect(await items.count()).toBe(5)

  // Filter: updates only, then updates and creates.
  await page.getByLabel("project.updated").check()
  await page.getByRole("button", { name: "Apply" }).click()
  await page.waitForURL(/type=project\.updated$/)
  await page.getByText("2 in all").waitFor()
  expect(await items.count()).toBe(2)
  await page.getByLabel("project.created").check()
  await page.getByRole("button", { name: "Apply" }).click()
  await page.waitForURL(/type=project\.created%2Cproject\.updated|type=project\.created,project\.updated/)
  await page.getByText("Page 1 of 2 · 25 in all").waitFor()
  await page.getByLabel("project.created").uncheck()
  await page.getByLabel("project.updated").uncheck()
  await page.getByLabel("project.deleted").check()
  await page.getByRole("button", { name: "Apply" }).click()
  await page.getByText("No events of these types.").waitFor()
  await session.shots("61-events-filtered-empty")

  // One event's page, from the list's link.
  await page.goto(`${server.url}/dashboard/events`)
  await items.first().waitFor()
  await items.nth(2).locator(".event-type").click()
  await page.getByRole("heading", { level: 1, name: "project.created" }).waitFor()
  expect(new URL(page.url()).pathname).toBe(`/dashboard/events/${third.id}`)
  const alone = await page.locator("pre.event-json").textContent()
  expect(JSON.parse(alone ?? "")).toEqual(third)
  await page.locator("dd", { hasText: third.id }).waitFor()
  await session.shots("62-event")
}, 120_000)

test("an event outside the caller's audience says not found", async () => {
  const { page } = session
  const bobs = await server.request("/v1/projects", { method: "POST", key: bobKey, body: { name: "Bob's" } })
  expect(bobs.status).toBe(201)
  const bobFeed = await server.request("/v1/events", { key: bobKey })
  const id: string = bobFeed.body.data[0].id
  await page.goto(`${server.url}/dashboard/events/${id}`)
  await page.getByRole("heading", { level: 1, name: "Event" }).waitFor()
  await page.getByRole("alert").getByText(`No event with id ${id}`).waitFor()
  await session.shots("63-event-not-found")
}, 120_000)

test("nothing left 127.0.0.1 from the page, and no CSP violation or error reached the console", () => {
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 10_000)
