// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * The dashboard in a real browser (Chromium, headless): how it is served, signing in (a wrong password first, then
 * by keyboard), projects, and Settings → API keys — a key created, used, not shown again after a reload, revoked.
 * Every page is photographed at 1280×800 and 375×740 into /tmp/dashboard-shots/. No request may leave 127.0.0.1,
 * and no CSP violation or error may reach the console.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { brotliDecompressSync, gunzipSync } from "node:zlib"
import { type Server, startServer } from "../support/server.ts"
import {
  type BrowserSession,
  expectNoProblems,
  expectOnlyLoopback,
  openBrowser,
  openSettings,
  userWithPassword
} from "./browser.ts"

let server: Server
let session: BrowserSession
let ann: Awaited<ReturnType<typeof userWithPassword>>

beforeAll(async () => {
  server = await startServer()
  ann = await userWithPassword(server, "Ann Example")
  session = await openBrowser({ origin: server.url })
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
}, 20_000)

describe("serving", () => {
  test("GET / redirects to /dashboard; deep links get the shell; assets are hashed, immutable and compressed", async () => {
    const root = await fetch(`${server.url}/`, { redirect: "manual" })
    expect(root.status).toBe(302)
    expect(root.headers.get("location")).toBe("/dashboard")

    const shell = await fetch(`${server.url}/dashboard/webhooks/whk_x/deliveries/dlv_y?status=failed`, {
      headers: { "accept-encoding": "identity" }
    })
    expect(shell.status).toBe(200)
    expect(shell.headers.get("content-type")).toBe("text/html; charset=utf-8")
    expect(shell.headers.get("cache-control")).toBe("no-cache")
    const csp = shell.headers.get("content-security-policy") ?? ""
    expect(csp).toContain("default-src 'self'")
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("style-src 'self'")
    expect(csp).not.toContain("unsafe-inline")
    expect(csp).not.toContain("unsafe-eval")
    expect(shell.headers.get("x-content-type-options")).toBe("nosniff")
    expect(shell.headers.get("x-frame-options")).toBe("DENY")
    const html = await shell.text()
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/) // no inline script
    expect(html).not.toMatch(/<style|style="/) // no inline style
    const assets = [...html.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map((match) => match[1]!)
    expect(assets.length).toBe(2)
    for (const path of assets) {
      expect(path).toMatch(/^\/dashboard\/assets\/[a-z0-9_-]+-[a-z0-9]{8}\.(js|css)$/)
      const plain = await fetch(`${server.url}${path}`, { headers: { "accept-encoding": "identity" } })
      expect(plain.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
      expect(plain.headers.get("content-encoding")).toBeNull()
      const original = new Uint8Array(await plain.arrayBuffer())
      // Bun's fetch would decompress for us: ask for the raw bytes with decompress: false.
      const br = await fetch(`${server.url}${path}`, { headers: { "accept-encoding": "gzip, br" }, decompress: false })
      expect(br.headers.get("content-encoding")).toBe("br")
      expect(br.headers.get("vary")).toBe("Accept-Encoding")
      const brBytes = new Uint8Array(await br.arrayBuffer())
      expect(brBytes.byteLength).toBeLessThan(original.byteLength)
      expect(new Uint8Array(brotliDecompressSync(brBytes))).toEqual(original)
      const gzip = await fetch(`${server.url}${path}`, {
        headers: { "accept-encoding": "gzip, br;q=0" },
        decompress: false
      })
      expect(gzip.headers.get("content-encoding")).toBe("gzip")
      expect(new Uint8Array(gunzipSync(new Uint8Array(await gzip.arrayBuffer())))).toEqual(original)
      const etag = plain.headers.get("etag") ?? ""
      const again = await fetch(`${server.url}${path}`, { headers: { "if-none-match": etag } })
      expect(again.status).toBe(304)
    }
    const missing = await fetch(`${server.url}/dashboard/assets/index-00000000.js`)
    expect(missing.status).toBe(404)
  }, 120_000)
})

describe("in the browser", () => {
  test("a person signs in: a wrong password first, then the right one, typed and sent by keyboard", async () => {
    const { page } = session
    await page.goto(`${server.url}/`)
    await page.waitForURL(`${server.url}/dashboard/sign-in`)
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
    await session.shots("01-sign-in")

    await page.getByLabel("Email").fill(ann.email)
    await page.getByLabel("Password").fill("not the password")
    await page.getByRole("button", { name: "Sign in" }).click()
    expect(await page.getByRole("alert").textContent()).toContain("The email or password is wrong")
    await session.shots("02-sign-in-wrong-password")

    // By keyboard only: Tab from the email field to the password, Enter submits.
    await page.getByLabel("Email").focus()
    await page.keyboard.press("Control+A")
    await page.keyboard.type(ann.email)
    await page.keyboard.press("Tab")
    await page.keyboard.type(ann.password)
    await page.keyboard.press("Enter")
    await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor()
    expect(new URL(page.url()).pathname).toBe("/dashboard/projects")
    // The header greets the signed-in user by name.
    await page.getByText("Ann Example").waitFor()
  }, 120_000)

  test("a record that is not there: its page keeps the way back, is titled by its kind and shows the API's answer", async () => {
    const { page } = session
    const missing = [
      ["projects/proj_01jd3xkq8w0000000000000000", "Project", "← Projects"],
      ["teams/team_01jd3xkq8w0000000000000000", "Team", "← Teams"],
      ["webhooks/whk_01jd3xkq8w0000000000000000", "Webhook", "← Webhooks"]
    ] as const
    for (const [path, title, back] of missing) {
      await page.goto(`${server.url}/dashboard/${path}`)
      await page.getByRole("heading", { level: 1, name: title }).waitFor()
      expect(await page.getByRole("alert").textContent()).toContain(`No ${title.toLowerCase()} with id`)
      expect(await page.getByRole("link", { name: back }).count()).toBe(1)
    }
    await session.shots("05c-record-missing")
  }, 120_000)

  test("projects: create (with a field error first), search, archive and unarchive, delete with a confirmation", async () => {
    const { page } = session
    await page.goto(`${server.url}/dashboard/projects`)
    await page.getByText("No projects yet").waitFor()
    await page.getByText("New project").click()
    // An empty name: the API's message for the field appears next to it (only there), and focus goes to the field.
    await page.getByRole("button", { name: "Create project" }).click()
    await page.locator('[data-field="name"] .field-error', { hasText: /\S/ }).waitFor()
    expect(await page.locator(".form-error").count()).toBe(0)
    expect(await page.getByLabel("Name").evaluate((input) => input === document.activeElement)).toBe(true)
    await session.shots("03-project-field-error")

    await page.getByLabel("Name").fill("Apollo")
    await page.getByLabel("Description").fill("The first one")
    await page.getByRole("button", { name: "Create project" }).click()
    await page.getByRole("heading", { level: 1, name: "Apollo" }).waitFor()
    await page.getByText("Project “Apollo” created.").waitFor()
    await page.getByText("No deployments yet.").waitFor()
    await session.shots("04-project")

    for (const name of ["Borealis", "Cassini"]) {
      const created = await page.evaluate(
        async ([name]) => {
          const token = JSON.parse(sessionStorage.getItem("pcs.dashboard.session") ?? "{}").token
          const response = await fetch("/v1/projects", {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify({ name })
          })
          return response.status
        },
        [name]
      )
      expect(created).toBe(201)
    }
    await page.getByRole("link", { name: "Projects", exact: true }).click()
    await page.getByRole("link", { name: "Cassini" }).waitFor()
    await session.shots("05-projects")
    await page.getByLabel("Search").fill("bore")
    await page.getByRole("button", { name: "Apply" }).click()
    await page.waitForURL(/search=bore/)
    await page.getByRole("link", { name: "Borealis" }).waitFor()
    expect(await page.getByRole("link", { name: "Apollo" }).count()).toBe(0)

    await page.getByRole("link", { name: "Borealis" }).click()
    await page.getByRole("button", { name: "Archive" }).click()
    await page.getByText("Project archived.").waitFor()
    await page.locator(".page-head .badge", { hasText: "archived" }).waitFor()
    await page.getByRole("button", { name: "Unarchive" }).click()
    await page.getByText("Project restored to active.").waitFor()

    // Delete: cancelling the confirmation keeps it; confirming deletes it.
    await page.getByRole("button", { name: "Delete project" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click()
    await page.getByRole("heading", { level: 1, name: "Borealis" }).waitFor()
    await page.getByRole("button", { name: "Delete project" }).click()
    await session.shots("06-project-delete-confirm")
    await page.getByRole("dialog").getByRole("button", { name: "Delete project" }).click()
    await page.getByText("Project “Borealis” deleted.").waitFor()
    expect(new URL(page.url()).pathname).toBe("/dashboard/projects")
    expect(await page.getByRole("link", { name: "Borealis" }).count()).toBe(0)

    // Paging: 25 projects make two pages of 20.
    const token = await page.evaluate(() => JSON.parse(sessionStorage.getItem("pcs.dashboard.session") ?? "{}").token)
    await Promise.all(
      Array.from({ length: 23 }, (_, i) =>
        server.request("/v1/projects", {
          method: "POST",
          key: token,
          body: { name: `Bulk ${String(i).padStart(2, "0")}` }
        })
      )
    )
    await page.goto(`${server.url}/dashboard/projects?sort=name&order=asc`)
    await page.getByText("Page 1 of 2 · 25 in all").waitFor()
    await page.getByRole("link", { name: "Next →" }).click()
    await page.getByText("Page 2 of 2 · 25 in all").waitFor()
    expect(await page.locator("tbody tr").count()).toBe(5)
    expect(await page.getByRole("link", { name: "← Previous" }).getAttribute("href")).toBe(
      "/dashboard/projects?sort=name&order=asc&page=1"
    )
    expect(await page.getByRole("link", { name: "Next →" }).count()).toBe(0)

    // A list the API refuses (a search longer than the contract allows): the API's message and details in the
    // list's place. (A filter value the contract does not have, `?status=bogus`, is not sent: the typed client
    // sends only the contract's values.)
    await page.goto(`${server.url}/dashboard/projects?search=${"x".repeat(201)}`)
    const refused = page.locator(".list .form-error[role=alert]")
    await refused.waitFor()
    expect(await refused.locator("p").textContent()).toMatch(/\S/)
    expect(await refused.locator("li").first().textContent()).toContain("search")
    expect(await page.locator(".list table").count()).toBe(0)
    await session.shots("05b-projects-list-error")
  }, 120_000)

  test("API keys: created with name, scopes and expiry, used, not shown again after a reload, revoked", async () => {
    const { page } = session
    await openSettings(page, "API keys")
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor()
    await page.getByText("New API key").click()
    await page.getByLabel("Name").fill("Deploy bot")
    await page.getByLabel("projects:write").check()
    await page.getByLabel("read", { exact: true }).uncheck()
    await page.getByLabel("projects:read").check()
    const inAMonth = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10)
    await page.getByLabel("Expires on (optional)").fill(inAMonth)
    await page.getByRole("button", { name: "Create key" }).click()

    const shown = page.getByLabel("Your new API key")
    await shown.waitFor()
    const key = await shown.inputValue()
    expect(key).toMatch(/^pcs_[A-Za-z0-9]{40}$/)
    await page.getByRole("button", { name: "Copy" }).click()
    await page.getByText("Copied to the clipboard.").waitFor()
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key)
    await session.shots("07-api-key-created")

    // The key works: a /v1 call with it.
    const used = await server.request("/v1/projects", { key })
    expect(used.status).toBe(200)
    expect(used.body.meta.total).toBe(25)
    const created = await server.request("/v1/projects", { method: "POST", key, body: { name: "Made by the key" } })
    expect(created.status).toBe(201)

    // After a reload the value is nowhere: not on the page, not in storage; only its prefix is listed.
    await page.reload()
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor()
    const row = page.locator("tr", { hasText: "Deploy bot" })
    await row.waitFor()
    expect(await page.content()).not.toContain(key)
    expect(
      await page.evaluate(() => JSON.stringify({ ...sessionStorage }) + JSON.stringify({ ...localStorage }))
    ).not.toContain(key)
    expect(await row.textContent()).toContain(key.slice(0, 12))
    expect(await row.textContent()).toContain("projects:read, projects:write")
    expect(await row.locator(".badge").textContent()).toBe("active")
    await session.shots("08-api-keys")

    // Revoke, with a confirmation.
    await row.getByRole("button", { name: "Revoke Deploy bot" }).click()
    await page.getByRole("dialog").getByRole("button", { name: "Revoke key" }).click()
    await row.locator(".badge", { hasText: "revoked" }).waitFor()
    const refused = await server.request("/v1/projects", { key })
    expect(refused.status).toBe(401)

    // The status filter.
    await page.getByLabel("Status").selectOption("revoked")
    await page.getByRole("button", { name: "Apply" }).click()
    await page.waitForURL(/status=revoked/)
    await page.locator("tr", { hasText: "Deploy bot" }).waitFor()
    expect(await page.locator("tbody tr").count()).toBe(1)

    // A scope the session lacks cannot be granted? The session has every scope; an expiry in the past is refused.
    await page.getByText("New API key").click()
    await page.getByLabel("Name").fill("Bad expiry")
    await page.getByLabel("Expires on (optional)").evaluate((element: HTMLInputElement) => {
      element.removeAttribute("min")
    })
    await page.getByLabel("Expires on (optional)").fill("2020-01-01")
    await page.getByRole("button", { name: "Create key" }).click()
    await page.locator('[data-field="expires_at"] .field-error', { hasText: "must be in the future" }).waitFor()
    await session.shots("09-api-key-error")
  }, 120_000)

  test("signing out forgets the session; a deep link asks for sign-in and comes back", async () => {
    const { page } = session
    await page.getByRole("button", { name: "Sign out" }).click()
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor()
    await page.getByText("You are signed out.").waitFor()
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    await page.goto(`${server.url}/dashboard/settings/api-keys?status=revoked`)
    await page.waitForURL(/\/dashboard\/sign-in\?next=/)
    await page.getByLabel("Email").fill(ann.email)
    await page.getByLabel("Password").fill(ann.password)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.waitForURL(`${server.url}/dashboard/settings/api-keys?status=revoked`)
    await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor()
  }, 120_000)

  test("nothing left 127.0.0.1, and no CSP violation or error reached the console", () => {
    expectOnlyLoopback(session)
    expectNoProblems(session)
  }, 10_000)
})
