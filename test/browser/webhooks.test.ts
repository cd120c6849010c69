/**
 * Webhooks in the dashboard, in Chromium: registered with event checkboxes (the generated secret shown once), a
 * receiver that fails five times, the delivery log filtered by status, each attempt's time, duration, status code,
 * error and response body, Retry once the receiver recovers — the new attempt shown, the delivery delivered and
 * the webhook active again; then editing, rotating the secret (the next delivery is signed with the new one) and
 * deleting. Retry delays are shortened with WEBHOOK_RETRY_DELAYS.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
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

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "100ms,100ms,100ms,100ms",
  WEBHOOK_TIMEOUT: "2s",
  WEBHOOK_CLAIM_TIMEOUT: "4s",
  WEBHOOK_POLL_INTERVAL: "100ms"
}

let server: Server
let receiver: Receiver
let session: BrowserSession
let ann: Awaited<ReturnType<typeof userWithPassword>>
let annKey: string

beforeAll(async () => {
  receiver = startReceiver()
  server = await startServer({ env: ENV })
  ann = await userWithPassword(server, "Ann Hooks")
  annKey = (await server.fixtures.apiKey(ann.id, { name: "test", scopes: "read,write" })).key
  session = await openBrowser({ origin: server.url })
}, 30_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
  await receiver?.stop()
}, 20_000)

const sign = (secret: string, body: string) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`

test("a webhook that fails five times, its delivery log and attempts, Retry after the receiver recovers", async () => {
  const { page } = session
  const path = "/failing"
  receiver.setDefault({ status: 500, body: "receiver down: disk full" }, path)

  await signIn(page, server.url, ann)
  await page.getByRole("link", { name: "Webhooks" }).click()
  await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor()
  await page.getByText("No webhooks yet.").waitFor()
  await page.getByText("Register a webhook").click()
  // No event ticked: the API's message appears next to the checkboxes.
  await page.getByLabel("Payload URL").fill(receiver.url(path))
  await page.getByRole("button", { name: "Register webhook" }).click()
  await page.locator('[data-field="events"] .field-error', { hasText: "at least one event type" }).waitFor()
  await session.shots("10-webhook-register-error")
  await page.getByLabel("project.created").check()
  await page.getByRole("button", { name: "Register webhook" }).click()
  const secretBox = page.getByLabel("Its signing secret")
  await secretBox.waitFor()
  const secret = await secretBox.inputValue()
  expect(secret).toMatch(/^whsec_[A-Za-z0-9]{32}$/)
  await session.shots("11-webhooks")

  // An event: five attempts, all failing.
  const created = await server.request("/v1/projects", { method: "POST", key: annKey, body: { name: "Hooked" } })
  expect(created.status).toBe(201)
  const attempts = await receiver.waitFor(5, { path, timeoutMs: 15_000 })
  expect(attempts[0]!.headers["x-service-signature"]).toBe(sign(secret, attempts[0]!.body))
  const hooks = await server.request("/v1/webhooks", { key: annKey })
  const hookId: string = hooks.body.data[0].id
  await eventually(
    async () => {
      const log = await server.request(`/v1/webhooks/${hookId}/deliveries`, { key: annKey })
      return log.body.data[0]?.status === "failed" ? true : undefined
    },
    { what: "the delivery to fail" }
  )

  // The webhook page: failed, the delivery log filtered by status.
  await page.getByRole("link", { name: receiver.url(path) }).click()
  await page.locator(".page-head .badge", { hasText: "failed" }).waitFor()
  await page.getByLabel("Status").selectOption("delivered")
  await page.getByRole("button", { name: "Apply" }).click()
  await page.getByText("No delivered deliveries.").waitFor()
  await page.getByLabel("Status").selectOption("failed")
  await page.getByRole("button", { name: "Apply" }).click()
  await page.waitForURL(/status=failed/)
  const row = page.locator("tbody tr", { hasText: "project.created" })
  await row.waitFor()
  expect(await row.locator(".badge").textContent()).toBe("failed")
  expect(await row.locator('td[data-label="Attempts"]').textContent()).toBe("5")
  await row.getByRole("button", { name: /^Retry delivery/ }).waitFor()
  await session.shots("12-webhook-failed")

  // The delivery: five attempts with time, duration, status code, error and response body.
  await row.getByRole("link", { name: /^Attempts of delivery/ }).click()
  await page.getByRole("heading", { level: 1, name: "Delivery of project.created" }).waitFor()
  const attemptRows = page.locator("tbody tr")
  await expect(attemptRows.count()).resolves.toBe(5)
  for (let i = 0; i < 5; i++) {
    const cells = attemptRows.nth(i)
    expect(await cells.locator('td[data-label="#"]').textContent()).toBe(String(i + 1))
    expect(await cells.locator('td[data-label="Status code"]').textContent()).toBe("500")
    expect(await cells.locator('td[data-label="Outcome"]').textContent()).toBe("failed")
    expect(await cells.locator('td[data-label="Duration"]').textContent()).toMatch(/^\d+ ms$/)
    expect(await cells.locator('td[data-label="Time"] time').getAttribute("datetime")).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(await cells.locator('td[data-label="Error"]').textContent()).toBe("HTTP 500")
  }
  await attemptRows.nth(4).getByText("Show (24 characters)").click()
  await page.getByText("receiver down: disk full").last().waitFor()
  await session.shots("13-delivery-failed")

  // The receiver recovers; Retry makes one attempt, shown at once.
  receiver.setDefault({ status: 200, body: "thanks" }, path)
  await page.getByRole("button", { name: "Retry" }).click()
  await page.getByText("Delivered on attempt 6.").waitFor({ timeout: 15_000 })
  await page.locator(".page-head .badge", { hasText: "delivered" }).waitFor()
  await expect(attemptRows.count()).resolves.toBe(6)
  expect(await attemptRows.nth(5).locator('td[data-label="Status code"]').textContent()).toBe("200")
  expect(await attemptRows.nth(5).locator('td[data-label="Outcome"]').textContent()).toBe("succeeded")
  expect(await page.getByRole("button", { name: "Retry" }).count()).toBe(0)
  expect(receiver.requests(path)).toHaveLength(6)
  await session.shots("14-delivery-retried")

  // The webhook is active again (its next success made it so).
  await page.getByRole("link", { name: "← Webhook" }).click()
  await page.locator(".page-head .badge", { hasText: "active" }).waitFor()
  await page.getByLabel("Status").selectOption("delivered")
  await page.getByRole("button", { name: "Apply" }).click()
  await page.locator("tbody tr", { hasText: "project.created" }).locator(".badge", { hasText: "delivered" }).waitFor()
}, 60_000)

test("edit a webhook's events, rotate its secret (shown once, used to sign), delete it", async () => {
  const { page } = session
  const path = "/failing"
  await page.getByText("Edit webhook").click()
  await page.getByLabel("project.updated").check()
  await page.getByRole("button", { name: "Save changes" }).click()
  await page.getByText("Webhook saved.").waitFor()
  await page.locator("dd", { hasText: "project.created, project.updated" }).waitFor()

  await page.getByRole("button", { name: "Rotate secret" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click()
  const box = page.getByLabel("The new signing secret")
  await box.waitFor()
  const secret = await box.inputValue()
  expect(secret).toMatch(/^whsec_[A-Za-z0-9]{32}$/)
  await session.shots("15-webhook-rotated")

  const before = receiver.requests(path).length
  const project = await server.request("/v1/projects", {
    method: "POST",
    key: annKey,
    body: { name: "After rotation" }
  })
  expect(project.status).toBe(201)
  const [latest] = (await receiver.waitFor(before + 1, { path })).slice(before)
  expect(latest!.headers["x-service-signature"]).toBe(sign(secret, latest!.body))

  await page.reload()
  await page.getByRole("heading", { level: 1, name: "Webhook" }).waitFor()
  expect(await page.content()).not.toContain(secret)

  await page.getByRole("button", { name: "Delete webhook" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Delete webhook" }).click()
  await page.getByText("Webhook deleted.").waitFor()
  await page.getByText("No webhooks yet.").waitFor()
  const gone = await server.request("/v1/webhooks", { key: annKey })
  expect(gone.body.data).toEqual([])
}, 60_000)

test("nothing left 127.0.0.1 from the page, and no CSP violation or error reached the console", () => {
  expectOnlyLoopback(session)
  expectNoProblems(session)
})
