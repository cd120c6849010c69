// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * Webhooks in the dashboard, in Chromium: registered with event checkboxes (the generated secret shown once), a
 * receiver that fails five times, the delivery log filtered by status (with each delivery's last status code),
 * each attempt's time, duration, status code and error, and its request (headers, pretty payload) beside its
 * response (status, headers, body), Redeliver once the receiver recovers — the new attempt shown, the delivery
 * delivered and the webhook active again; recovering failed deliveries since a time; sending a test event and
 * filtering the log by event type; a delivery that is retrying (said in words, with the next time and zone) and
 * whose page refreshes by itself; then editing, rotating the secret (shown once, with until when the old one still
 * verifies; the next delivery is signed with both) and deleting. The list shows each webhook's health ("No attempts
 * yet", then the latest status with its time and "0 % of 5 attempts in 24 h"); the log and a delivery's page name the
 * event's project; the secret field is a text field (no password manager fill), gone while Ed25519 is chosen, and an
 * Ed25519 webhook's edit form has none. axe-core on the pages changed. Retry delays are shortened with
 * WEBHOOK_RETRY_DELAYS; a second server waits ten minutes between attempts, to see a delivery retrying. Waits are
 * generous: the machine running CI is loaded.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { createHmac } from "node:crypto"
import { readFileSync } from "node:fs"
import type { Page } from "playwright-core"
import { Webhook as StandardWebhook } from "standardwebhooks"
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
let slow: Server // ten minutes between attempts
let receiver: Receiver
let session: BrowserSession
let ann: Awaited<ReturnType<typeof userWithPassword>>
let annKey: string
let firstSecret: string // the secret made at registration

beforeAll(async () => {
  receiver = startReceiver()
  ;[server, slow] = await Promise.all([
    startServer({ env: ENV }),
    startServer({ env: { ...ENV, WEBHOOK_RETRY_DELAYS: "10m,10m,10m,10m" } })
  ])
  ann = await userWithPassword(server, "Ann Hooks")
  annKey = (await server.fixtures.apiKey(ann.id, { name: "test", scopes: "read,write" })).key
  session = await openBrowser({ origin: server.url })
}, 120_000)

afterAll(async () => {
  await session?.close()
  await Promise.all([server?.stop(), slow?.stop()])
  await receiver?.stop()
}, 20_000)

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
  // Each type with its description from the catalogue, and "All events", which ticks or clears the nine.
  await page.getByText("A project was created; data is the project.").waitFor()
  const ticked = page.locator('form[aria-label="Register a webhook"] input[name="events"]:checked')
  await page.getByLabel("All events").check()
  expect(await ticked.count()).toBe(9)
  await session.shots("10-webhook-register-events")
  await page.getByLabel("All events").uncheck()
  expect(await ticked.count()).toBe(0)
  // No event ticked: the API's message appears next to the checkboxes.
  // The secret is a text field a password manager leaves alone, with its rule beside it.
  const secretField = page.getByLabel("Secret (optional)")
  expect(await secretField.getAttribute("type")).toBe("text")
  expect(await secretField.getAttribute("autocomplete")).toBe("off")
  expect(await secretField.getAttribute("minlength")).toBe("16")
  expect(await secretField.getAttribute("maxlength")).toBe("256")
  await page.getByText("16–256 characters, a new random one (never a password).").waitFor()
  await page.getByLabel("Payload URL").fill(receiver.url(path))
  await page.getByRole("button", { name: "Register webhook" }).click()
  await page.locator('[data-field="events"] .field-error', { hasText: "at least one event type" }).waitFor(WAIT)
  await session.shots("10-webhook-register-error")
  await page.getByLabel("project.created").check()
  await page.getByRole("button", { name: "Register webhook" }).click()
  const secretBox = page.getByLabel("Its signing secret")
  await secretBox.waitFor(WAIT)
  const secret = await secretBox.inputValue()
  expect(secret).toMatch(/^whsec_[A-Za-z0-9]{32}$/)
  firstSecret = secret
  // No attempt yet: the list says so in its Health column.
  const listed = page.locator("tbody tr", { hasText: receiver.url(path) })
  await listed.locator('td[data-label="Health"]', { hasText: "No attempts yet" }).waitFor(WAIT)
  await session.shots("11-webhooks")

  // An event: five attempts, all failing.
  const created = await server.request("/v1/projects", { method: "POST", key: annKey, body: { name: "Hooked" } })
  expect(created.status).toBe(201)
  const attempts = await receiver.waitFor(5, { path, timeoutMs: 30_000 })
  expect(attempts[0]!.headers["x-service-signature"]).toBe(sign(secret, attempts[0]!.body))
  const hooks = await server.request("/v1/webhooks", { key: annKey })
  const hookId: string = hooks.body.data[0].id
  await eventually(
    async () => {
      const log = await server.request(`/v1/webhooks/${hookId}/deliveries`, { key: annKey })
      return log.body.data[0]?.status === "failed" ? true : undefined
    },
    { what: "the delivery to fail", timeoutMs: 30_000 }
  )

  // The list's health: the latest attempt's status and time, and the share of the day's attempts that succeeded.
  await page.goto(`${server.url}/dashboard/webhooks`)
  const health = listed.locator('td[data-label="Health"]')
  await health.locator(".badge", { hasText: "HTTP 500" }).waitFor(WAIT)
  const apiHealth = (await server.request("/v1/webhooks", { key: annKey })).body.data[0].health
  expect(await health.locator("time").getAttribute("datetime")).toBe(apiHealth.last_attempt_at)
  expect(await health.locator(".health-share").textContent()).toBe("0 % of 5 attempts in 24 h")
  expect(await violations(page)).toEqual([])
  await session.shots("11-webhooks-health")

  // The webhook page: failed, the delivery log filtered by status.
  await page.getByRole("link", { name: receiver.url(path) }).click()
  await page.locator(".page-head .badge", { hasText: "failed" }).waitFor(WAIT)
  await page.getByLabel("Status").selectOption("delivered")
  await page.getByRole("button", { name: "Apply" }).click()
  await page.getByText("No delivered deliveries.").waitFor()
  await page.getByLabel("Status").selectOption("failed")
  await page.getByRole("button", { name: "Apply" }).click()
  await page.waitForURL(/status=failed/)
  const row = page.locator("tbody tr", { hasText: "project.created" })
  await row.waitFor(WAIT)
  expect(await row.locator(".badge").textContent()).toBe("failed")
  expect(await row.locator('td[data-label="Attempts"]').textContent()).toBe("5")
  await row.getByRole("button", { name: /^Retry delivery/ }).waitFor(WAIT)
  expect(await row.locator('td[data-label="Last code"]').textContent()).toBe("500")
  // Which project the event was about.
  expect(await row.locator('td[data-label="Resource"]').textContent()).toBe("Hooked")
  expect(await violations(page)).toEqual([])
  await session.shots("12-webhook-failed")

  // The delivery: five attempts with time, duration, status code, error and response body.
  await row.getByRole("link", { name: /^Attempts of delivery/ }).click()
  await page.getByRole("heading", { level: 1, name: "Delivery of project.created" }).waitFor(WAIT)
  await page.locator("dd", { hasText: "Hooked" }).waitFor(WAIT)
  const attemptRows = page.locator("tbody tr")
  expect(await attemptRows.count()).toBe(5)
  for (let i = 0; i < 5; i++) {
    const cells = attemptRows.nth(i)
    expect(await cells.locator('td[data-label="#"]').textContent()).toBe(String(i + 1))
    expect(await cells.locator('td[data-label="Status code"]').textContent()).toBe("500")
    expect(await cells.locator('td[data-label="Outcome"]').textContent()).toBe("failed")
    expect(await cells.locator('td[data-label="Duration"]').textContent()).toMatch(/^\d+ ms$/)
    expect(await cells.locator('td[data-label="Time"] time').getAttribute("datetime")).toMatch(/^\d{4}-\d\d-\d\dT/)
    expect(await cells.locator('td[data-label="Error"]').textContent()).toBe("HTTP 500")
  }
  // Each attempt's request beside its response: the latest open, the headers as sent (signatures included), the
  // payload pretty-printed, the response's status, headers and body.
  const exchanges = page.locator("details.exchange")
  expect(await exchanges.count()).toBe(5)
  const latest = exchanges.first()
  expect(await latest.getAttribute("open")).not.toBeNull()
  expect(await latest.locator("summary").textContent()).toContain("Attempt 5: HTTP 500")
  const request = latest.getByRole("region", { name: "Request of attempt 5" })
  const sentHeaders = (await request.locator("pre.headers").textContent()) ?? ""
  expect(sentHeaders).toContain(`webhook-signature: ${attempts[4]!.headers["webhook-signature"]}`)
  expect(sentHeaders).toContain(`x-service-signature: ${attempts[4]!.headers["x-service-signature"]}`)
  expect(sentHeaders).toContain(`webhook-id: ${attempts[4]!.headers["webhook-id"]}`)
  expect(await request.locator("pre.payload").textContent()).toBe(
    JSON.stringify(JSON.parse(attempts[4]!.body), null, 2)
  )
  const response = latest.getByRole("region", { name: "Response of attempt 5" })
  expect(await response.locator("pre.payload").textContent()).toBe("receiver down: disk full")
  expect(await response.locator("pre.headers").textContent()).toContain("content-type: text/plain")
  // The event, on the events page.
  expect(await page.locator("dd a", { hasText: /^evt_/ }).getAttribute("href")).toBe(
    `/dashboard/events/${attempts[0]!.headers["webhook-id"]}`
  )
  await session.shots("13-delivery-failed")

  // The receiver recovers; Redeliver makes one extra attempt, shown at once.
  receiver.setDefault({ status: 200, body: "thanks" }, path)
  await page.getByRole("button", { name: "Redeliver" }).click()
  await page.getByText("Attempt 6 (manual) succeeded: HTTP 200. The delivery is delivered.").waitFor(WAIT)
  await page.locator(".page-head .badge", { hasText: "delivered" }).waitFor(WAIT)
  expect(await attemptRows.count()).toBe(6)
  expect(await attemptRows.nth(5).locator('td[data-label="Status code"]').textContent()).toBe("200")
  expect(await attemptRows.nth(5).locator('td[data-label="Outcome"]').textContent()).toBe("succeeded")
  expect(await attemptRows.nth(5).locator('td[data-label="Trigger"]').textContent()).toBe("manual")
  expect(await attemptRows.nth(4).locator('td[data-label="Trigger"]').textContent()).toBe("schedule")
  expect(await exchanges.first().locator("summary").textContent()).toContain("Attempt 6 (manual): HTTP 200")
  // Five scheduled attempts, and the manual one beside them.
  await page.locator("dd", { hasText: "5 of 5 scheduled, 1 manual" }).waitFor()
  // Redeliver stays for a delivered delivery too.
  await page.getByRole("button", { name: "Redeliver" }).waitFor()
  expect(receiver.requests(path)).toHaveLength(6)
  await session.shots("14-delivery-retried")

  // The webhook is active again (its next success made it so).
  await page.getByRole("link", { name: "← Webhook" }).click()
  await page.locator(".page-head .badge", { hasText: "active" }).waitFor(WAIT)
  await page.getByLabel("Status").selectOption("delivered")
  await page.getByRole("button", { name: "Apply" }).click()
  await page
    .locator("tbody tr", { hasText: "project.created" })
    .locator(".badge", { hasText: "delivered" })
    .waitFor(WAIT)
}, 120_000)

test("recover failed deliveries since a time: the count, and the log refreshing itself until they are delivered", async () => {
  const { page } = session
  const path = "/failing"
  receiver.setDefault({ status: 500, body: "down again" }, path)
  const hookId: string = (await server.request("/v1/webhooks", { key: annKey })).body.data[0].id
  for (const name of ["Outage 1", "Outage 2"]) {
    expect((await server.request("/v1/projects", { method: "POST", key: annKey, body: { name } })).status).toBe(201)
  }
  await eventually(
    async () => {
      const log = await server.request(`/v1/webhooks/${hookId}/deliveries?status=failed`, { key: annKey })
      return log.body.meta.total === 2 ? true : undefined
    },
    { what: "two failed deliveries", timeoutMs: 15_000 }
  )
  receiver.setDefault({ status: 200, body: "back" }, path)
  await page.goto(`${server.url}/dashboard/webhooks/${hookId}`)
  await page.getByRole("heading", { level: 1, name: "Webhook" }).waitFor()
  // Five failures each: the webhook is failed, and can be set active by hand.
  await page.locator(".page-head .badge", { hasText: "failed" }).waitFor()
  await page.getByRole("button", { name: "Set active again" }).waitFor()
  await page.getByText("Recover failed deliveries since…").click()
  // The default: a day back, in the reader's time zone.
  expect(await page.getByLabel("Since").inputValue()).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d$/)
  await session.shots("16-webhook-recover-form")
  await page.evaluate(() => document.body.setAttribute("data-not-reloaded", "yes"))
  await page.getByRole("button", { name: "Recover deliveries" }).click()
  await page.getByText("Queued 2 failed deliveries for a new attempt.").waitFor()
  // The log follows the retried deliveries by itself (no reload) until they are delivered.
  await eventually(
    async () => ((await page.locator("tbody .badge", { hasText: "delivered" }).count()) === 3 ? true : undefined),
    { what: "the three deliveries shown delivered", timeoutMs: 20_000 }
  )
  expect(await page.locator("tbody .badge", { hasText: "failed" }).count()).toBe(0)
  // The webhook's status follows (a manual attempt that succeeds makes it active), without a reload.
  await page.locator(".page-head .badge", { hasText: "active" }).waitFor({ timeout: 15_000 })
  expect(await page.getByRole("button", { name: "Set active again" }).count()).toBe(0)
  expect(await page.evaluate(() => document.body.getAttribute("data-not-reloaded"))).toBe("yes")
  await session.shots("17-webhook-recovered")
  // The page edits the version it now shows: saving is not refused as someone else's change.
  await page.getByText("Edit webhook").click()
  await page.getByRole("button", { name: "Save changes" }).click()
  await page.getByText("Webhook saved.").waitFor()
  expect(await page.getByText("changed this webhook meanwhile").count()).toBe(0)
}, 120_000)

test("send a test event: the log filtered by event type, and the delivery's request with its pretty payload", async () => {
  const { page } = session
  const path = "/failing"
  const hookId: string = (await server.request("/v1/webhooks", { key: annKey })).body.data[0].id
  const before = receiver.requests(path).length
  await page.getByRole("button", { name: "Send test event" }).click()
  await page.getByText("Test event sent (webhook.test).").waitFor()
  const [sent] = (await receiver.waitFor(before + 1, { path })).slice(before)
  expect(sent!.headers["x-service-event"]).toBe("webhook.test")
  expect(JSON.parse(sent!.body).data).toEqual({ webhook_id: hookId })

  await page.getByLabel("Event type").selectOption("webhook.test")
  await page.getByRole("button", { name: "Apply" }).click()
  await page.waitForURL(/event_type=webhook\.test/)
  await page.locator("tbody tr", { hasText: "webhook.test" }).first().waitFor()
  const rows = page.locator("tbody tr")
  expect(await rows.count()).toBe(1)
  await page.locator("tbody .badge", { hasText: "delivered" }).waitFor({ timeout: 15_000 })
  await session.shots("18-webhook-test-filtered")

  await rows.first().getByRole("link", { name: "webhook.test" }).click()
  await page.getByRole("heading", { level: 1, name: "Delivery of webhook.test" }).waitFor()
  const payload = page.getByRole("region", { name: "Request of attempt 1" }).locator("pre.payload")
  expect(await payload.textContent()).toBe(JSON.stringify(JSON.parse(sent!.body), null, 2))
  expect(await payload.textContent()).toContain(`"webhook_id": "${hookId}"`)
  await session.shots("19-delivery-test-event")
  await page.getByRole("link", { name: "← Webhook" }).click()
  await page.getByRole("heading", { level: 1, name: "Webhook" }).waitFor()
}, 120_000)

test("edit a webhook's events, rotate its secret (shown once, used to sign), delete it", async () => {
  const { page } = session
  const path = "/failing"
  await page.getByText("Edit webhook").click()
  await page.getByLabel("project.updated").check()
  await page.getByRole("button", { name: "Save changes" }).click()
  await page.getByText("Webhook saved.").waitFor()
  await page.locator("dd", { hasText: "project.created, project.updated" }).waitFor()

  // A rate limit: set in the form, shown on the page, then cleared (an empty field: none).
  await page.getByText("Edit webhook").click()
  await page.getByLabel("Rate limit (attempts a second)").fill("5")
  await page.getByRole("button", { name: "Save changes" }).click()
  await page.locator("dd", { hasText: "5 attempts a second" }).waitFor()
  await session.shots("15-webhook-rate-limit")
  await page.getByText("Edit webhook").click()
  expect(await page.getByLabel("Rate limit (attempts a second)").inputValue()).toBe("5")
  await page.getByLabel("Rate limit (attempts a second)").fill("")
  await page.getByRole("button", { name: "Save changes" }).click()
  await page.locator("dd", { hasText: /^None$/ }).waitFor()

  await page.getByRole("button", { name: "Rotate secret" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click()
  const box = page.getByLabel("The new signing secret")
  await box.waitFor()
  const secret = await box.inputValue()
  expect(secret).toMatch(/^whsec_[A-Za-z0-9]{32}$/)
  // Until when the old one still verifies: a day from now, with the time zone.
  const overlap = (await page.locator(".overlap").textContent()) ?? ""
  expect(overlap).toContain("The previous secret still verifies")
  expect(overlap).toContain("UTC")
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
  // Both secrets sign webhook-signature during the overlap: the new one verifies it.
  expect(latest!.headers["webhook-signature"]?.split(" ")).toHaveLength(2)
  expect(new StandardWebhook(secret).verify(latest!.body, latest!.headers)).toBeTruthy()
  expect(new StandardWebhook(firstSecret).verify(latest!.body, latest!.headers)).toBeTruthy()

  await page.reload()
  await page.getByRole("heading", { level: 1, name: "Webhook" }).waitFor()
  expect(await page.content()).not.toContain(secret)

  await page.getByRole("button", { name: "Delete webhook" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Delete webhook" }).click()
  await page.getByText("Webhook deleted.").waitFor()
  await page.getByText("No webhooks yet.").waitFor()
  const gone = await server.request("/v1/webhooks", { key: annKey })
  expect(gone.body.data).toEqual([])
}, 120_000)

test("register an Ed25519 webhook: the Signature choice, and its public key shown instead of a secret", async () => {
  const { page } = session
  await page.getByRole("link", { name: "Webhooks", exact: true }).click()
  await page.getByRole("heading", { level: 1, name: "Webhooks" }).waitFor()
  await page.getByText("Register a webhook").click()
  await page.getByLabel("Payload URL").fill(receiver.url("/ed25519"))
  await page.locator('form[aria-label="Register a webhook"]').getByLabel("project.created").check()
  // An Ed25519 webhook takes no secret (the API refuses one): the field goes while it is chosen.
  await page.getByLabel("Secret (optional)").waitFor(WAIT)
  await page.getByLabel("Signature").selectOption("ed25519")
  await page.getByLabel("Secret (optional)").waitFor({ state: "hidden", ...WAIT })
  await page.getByRole("button", { name: "Register webhook" }).click()
  const shown = page.locator(".flash code", { hasText: "whpk_" })
  await shown.waitFor(WAIT)
  const hooks = await server.request("/v1/webhooks?per_page=100", { key: annKey })
  const hook = hooks.body.data.find((w: { url: string }) => w.url === receiver.url("/ed25519"))
  expect(hook.signature).toBe("ed25519")
  expect(await shown.textContent()).toBe(hook.public_key)
  await session.shots("11-webhook-ed25519")

  // Its page: the public key among the facts, a key pair to rotate, and an edit form with no Secret field.
  await page.getByRole("link", { name: receiver.url("/ed25519") }).click()
  await page.getByRole("heading", { level: 1, name: "Webhook" }).waitFor(WAIT)
  await page.locator("dd code", { hasText: hook.public_key }).waitFor(WAIT)
  await page.getByRole("button", { name: "Rotate key pair" }).waitFor(WAIT)
  await page.getByText("Edit webhook").click()
  const edit = page.locator('form[aria-label="Edit webhook"]')
  await edit.getByLabel("Payload URL").waitFor(WAIT)
  expect(await edit.locator('input[name="secret"]').count()).toBe(0)
  expect(await edit.getByLabel(/secret/i).count()).toBe(0)
  expect(await violations(page)).toEqual([])
  await session.shots("23-webhook-ed25519-edit")
}, 120_000)

test("a delivery retrying says so (attempt 1 of 5 failed, next at HH:MM with the zone), and its page refreshes by itself", async () => {
  const { page } = session
  const path = "/slow"
  receiver.setDefault({ status: 503, body: "later" }, path)
  const bob = await userWithPassword(slow, "Bob Slow")
  const bobKey = (await slow.fixtures.apiKey(bob.id, { name: "test", scopes: "read,write" })).key
  const hook = await slow.request("/v1/webhooks", {
    method: "POST",
    key: bobKey,
    body: { url: receiver.url(path), events: ["project.created"] }
  })
  expect(hook.status).toBe(201)
  const hookId: string = hook.body.data.id
  expect((await slow.request("/v1/projects", { method: "POST", key: bobKey, body: { name: "Slow" } })).status).toBe(201)
  const pending = await eventually(
    async () => {
      const log = await slow.request(`/v1/webhooks/${hookId}/deliveries`, { key: bobKey })
      const d = log.body.data[0]
      return d?.attempt_count === 1 ? d : undefined
    },
    { what: "the first attempt to fail" }
  )
  expect(pending.status).toBe("pending")
  const next = new Date(pending.next_attempt_at)
  const hhmm = `${String(next.getUTCHours()).padStart(2, "0")}:${String(next.getUTCMinutes()).padStart(2, "0")}`

  await signIn(page, slow.url, bob)
  await page.goto(`${slow.url}/dashboard/webhooks/${hookId}`)
  const row = page.locator("tbody tr", { hasText: "project.created" })
  await row.waitFor()
  // (After midnight the date comes before the time.)
  expect(await row.locator('td[data-label="Status"]').textContent()).toMatch(
    new RegExp(`^pending retrying: attempt 1 of 5 failed, next at (.+, )?${hhmm} UTC$`)
  )
  expect(await row.locator('td[data-label="Last code"]').textContent()).toBe("503")
  await session.shots("20-webhook-retrying")

  await row.getByRole("link", { name: "project.created" }).click()
  await page.getByRole("heading", { level: 1, name: "Delivery of project.created" }).waitFor()
  expect(await page.locator(".delivery-progress").textContent()).toMatch(
    new RegExp(`^retrying: attempt 1 of 5 failed, next at (.+, )?${hhmm} UTC$`)
  )
  await session.shots("21-delivery-retrying")
  // Redeliver while it is retrying: an extra attempt, whose failure is reported as soon as it is recorded; the
  // delivery still waits for its second scheduled attempt, at the same time.
  await page.getByRole("button", { name: "Redeliver" }).click()
  await page
    .getByText("Attempt 2 (manual) failed: HTTP 503. The delivery's status and schedule are unchanged.")
    .waitFor({ timeout: 15_000 })
  expect(await page.locator(".delivery-progress").textContent()).toMatch(
    new RegExp(`^retrying: attempt 1 of 5 failed, next at (.+, )?${hhmm} UTC$`)
  )
  await page.locator("dd", { hasText: "1 of 5 scheduled, 1 manual" }).waitFor()
  const afterRedeliver = (await slow.request(`/v1/webhooks/${hookId}/deliveries/${pending.id}`, { key: bobKey })).body
    .data
  expect(afterRedeliver).toMatchObject({
    status: "pending",
    attempt_count: 1,
    next_attempt_at: pending.next_attempt_at
  })
  await session.shots("22-delivery-redelivered-while-retrying")
  // A retry made elsewhere (the API): the page shows its outcome by itself, without being reloaded.
  await page.evaluate(() => document.body.setAttribute("data-not-reloaded", "yes"))
  receiver.setDefault({ status: 200, body: "ok now" }, path)
  const retried = await slow.request(`/v1/webhooks/${hookId}/deliveries/${pending.id}/retry`, {
    method: "POST",
    key: bobKey
  })
  expect(retried.status).toBe(202)
  await page.locator(".page-head .badge", { hasText: "delivered" }).waitFor({ timeout: 15_000 })
  expect(await page.locator(".delivery-progress").textContent()).toBe("delivered")
  expect(await page.evaluate(() => document.body.getAttribute("data-not-reloaded"))).toBe("yes")
  expect(await page.locator("details.exchange").count()).toBe(3)
}, 120_000)

test("nothing left 127.0.0.1 from the page, and no CSP violation or error reached the console", () => {
  expectOnlyLoopback(session)
  expectNoProblems(session)
}, 10_000)
