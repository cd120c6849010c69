// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * The Events page in Chromium: the caller's feed newest first, each event's JSON (pretty-printed, the same value
 * as delivered) and the project it is about by name, the type filter (several types at once, kept in the address),
 * paging, and one event's page at `/dashboard/events/<id>` (what a delivery links to) with its deliveries to the
 * caller's webhooks and "Resend to this webhook" (the manual attempt's outcome shown, focus back on the button); an
 * event outside the caller's audience says not found. Screenshots at 1280 and 375 px; axe-core on each page.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import type { Page } from "playwright-core"
import { eventually, type Receiver, startReceiver } from "../support/receiver.ts"
import { type Server, startServer } from "../support/server.ts"
import {
  type BrowserSession,
  expectNoProblems,
  expectOnlyLoopback,
  openBrowser,
  signIn,
  userWithPassword
} from "./browser.ts"

const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8")

/** axe-core's violations on the current page (injected through the DevTools protocol: the page's CSP stays). */
const violations = async (page: Page) => {
  await page.evaluate(axeSource)
  return page.evaluate(async () => {
    const axe = (
      globalThis as unknown as { axe: { run: (context: Document) => Promise<{ violations: Array<{ id: string }> }> } }
    ).axe
    const result = await axe.run(document)
    return result.violations.map((violation) => violation.id)
  })
}

/** How long a step that waits for the server, the worker or the browser may take on a loaded machine. */
const WAIT = { timeout: 30_000 } as const

let server: Server
let receiver: Receiver
let session: BrowserSession
let ann: Awaited<ReturnType<typeof userWithPassword>>
let annKey: string
let bobKey: string
const projectIds: Array<string> = []

beforeAll(async () => {
  receiver = startReceiver()
  server = await startServer({
    env: {
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      WEBHOOK_RETRY_DELAYS: "100ms,100ms,100ms,100ms",
      WEBHOOK_POLL_INTERVAL: "100ms"
    }
  })
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
  await receiver?.stop()
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
  // Which project each is about, by name.
  expect(await items.nth(2).locator(".event-subject").textContent()).toBe("Project 23")
  expect(await items.nth(0).locator(".event-subject").textContent()).toBe("Renamed")
  expect(await violations(page)).toEqual([])
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
  await page.locator("dd", { hasText: "Project 23" }).waitFor()
  // Created before any webhook: delivered to none.
  await page.getByText("This event was not delivered to any of your webhooks.").waitFor(WAIT)
  await session.shots("62-event")
}, 120_000)

test("an event's page lists its deliveries; Resend to this webhook makes a manual attempt, focus stays on it", async () => {
  const { page } = session
  receiver.setDefault({ status: 200, body: "ok" }, "/events-up")
  receiver.setDefault({ status: 503, body: "down" }, "/events-down")
  const register = async (path: string) => {
    const res = await server.request("/v1/webhooks", {
      method: "POST",
      key: annKey,
      body: { url: receiver.url(path), events: ["project.created"] }
    })
    expect(res.status).toBe(201)
    return res.body.data.id as string
  }
  const up = await register("/events-up")
  const down = await register("/events-down")
  const project = await server.request("/v1/projects", { method: "POST", key: annKey, body: { name: "Deliverable" } })
  expect(project.status).toBe(201)
  const event = (await server.request("/v1/events?per_page=1", { key: annKey })).body.data[0]
  expect(event.data.id).toBe(project.body.data.id)
  const deliveries = await eventually(
    async () => {
      const page = await server.request(`/v1/events/${event.id}/deliveries`, { key: annKey })
      const all: Array<{ id: string; webhook_id: string; status: string }> = page.body.data
      return all.length === 2 && all.every((d) => d.status !== "pending") ? all : undefined
    },
    { what: "both deliveries to settle", timeoutMs: 30_000 }
  )
  const failed = deliveries.find((d) => d.webhook_id === down)!
  expect(failed.status).toBe("failed")

  await page.goto(`${server.url}/dashboard/events/${event.id}`)
  await page.getByRole("heading", { level: 1, name: "project.created" }).waitFor(WAIT)
  await page.locator("dd", { hasText: "Deliverable" }).waitFor(WAIT)
  const rows = page.locator("section tbody tr")
  await rows.first().waitFor(WAIT)
  expect(await rows.count()).toBe(2)
  const upRow = rows.filter({ hasText: receiver.url("/events-up") })
  const downRow = rows.filter({ hasText: receiver.url("/events-down") })
  expect(await upRow.locator(".badge").textContent()).toBe("delivered")
  expect(await downRow.locator(".badge").textContent()).toBe("failed")
  expect(await downRow.locator('td[data-label="Attempts"]').textContent()).toBe("5")
  expect(await downRow.locator('td[data-label="Last code"]').textContent()).toBe("503")
  expect(await upRow.getByRole("link", { name: receiver.url("/events-up"), exact: true }).getAttribute("href")).toBe(
    `/dashboard/webhooks/${up}`
  )
  expect(
    await downRow.getByRole("link", { name: `Delivery to ${receiver.url("/events-down")}` }).getAttribute("href")
  ).toBe(`/dashboard/webhooks/${down}/deliveries/${failed.id}`)
  expect(await violations(page)).toEqual([])
  await session.shots("64-event-deliveries")

  // The receiver is back: resend the failed one, by keyboard.
  receiver.setDefault({ status: 200, body: "back" }, "/events-down")
  const before = receiver.requests("/events-down").length
  const resend = downRow.getByRole("button", { name: `Resend to this webhook: ${receiver.url("/events-down")}` })
  await resend.focus()
  await page.keyboard.press("Enter")
  await page.getByText("Attempt 6 (manual) succeeded: HTTP 200. The delivery is delivered.").waitFor(WAIT)
  await downRow.locator(".badge", { hasText: "delivered" }).waitFor(WAIT)
  expect(receiver.requests("/events-down").length).toBe(before + 1)
  // Focus is back on the button that was pressed (the list was drawn again around it).
  await page.waitForFunction((id) => document.activeElement?.getAttribute("data-resend") === id, failed.id, WAIT)
  const delivered = await server.request(`/v1/webhooks/${down}/deliveries/${failed.id}`, { key: annKey })
  expect(delivered.body.data.status).toBe("delivered")
  expect(delivered.body.data.attempts.at(-1)).toMatchObject({ trigger: "manual", outcome: "succeeded" })
  expect(await violations(page)).toEqual([])
  await session.shots("65-event-resent")

  // Each delivery links to its own page.
  await downRow.getByRole("link", { name: `Delivery to ${receiver.url("/events-down")}` }).click()
  await page.getByRole("heading", { level: 1, name: "Delivery of project.created" }).waitFor(WAIT)
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
