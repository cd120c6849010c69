// engine-independent: what a person sees in the dashboard; the API beneath it runs on both engines in test/e2e
/**
 * The dashboard by keyboard (issue 44): focus comes back where it came from after each confirmation dialog
 * (Escape, Cancel, confirm), stays on an action button while it works (busy, not disabled), lands on a record
 * page's heading after in-app navigation and on a secret shown once; the focus ring has 3:1 contrast against the
 * page; axe-core finds no violation on the pages visited.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import type { Page } from "playwright-core"
import { type Server, startServer } from "../support/server.ts"
import {
  type BrowserSession,
  expectAccessible,
  expectNoProblems,
  openBrowser,
  openSettings,
  signIn,
  userWithPassword
} from "./browser.ts"

let server: Server
let session: BrowserSession
let ann: Awaited<ReturnType<typeof userWithPassword>>
let key: string

beforeAll(async () => {
  server = await startServer({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  ann = await userWithPassword(server, "Ann Focus")
  key = (await server.fixtures.apiKey(ann.id, { name: "setup", scopes: "read,write" })).key
  session = await openBrowser({ origin: server.url })
  await signIn(session.page, server.url, ann)
}, 120_000)

afterAll(async () => {
  await session?.close()
  await server?.stop()
}, 20_000)

/** What has focus: its tag and accessible text. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const active = document.activeElement
    return active === null ? "none" : `${active.tagName.toLowerCase()}:${(active.textContent ?? "").trim()}`
  })

/**
 * From now on, the page logs each key pressed, click and focus move, with the script that moved focus (none when
 * the browser did); `explained` adds that log to a step's failure. CI once saw an Enter pressed on a focused Archive
 * button open Delete's confirmation instead: the log is to say what moved focus, if it happens again.
 */
const recordFocus = (page: Page) =>
  page.evaluate(() => {
    const log: Array<string> = []
    Object.assign(window, { focusLog: log })
    const name = (target: EventTarget | null) =>
      target instanceof Element
        ? `${target.tagName.toLowerCase()}:${(target.textContent ?? "").trim().slice(0, 40)}`
        : String(target)
    const at = () => performance.now().toFixed(0)
    document.addEventListener(
      "keydown",
      (event) => log.push(`${at()} keydown ${event.key} on ${name(event.target)}`),
      true
    )
    document.addEventListener("click", (event) => log.push(`${at()} click on ${name(event.target)}`), true)
    document.addEventListener(
      "focusin",
      (event) => {
        const by = (new Error().stack ?? "").split("\n").slice(2, 5).join(" < ")
        log.push(`${at()} focus to ${name(event.target)}${by === "" ? "" : ` by ${by}`}`)
      },
      true
    )
  })

const explained = async <T>(page: Page, step: Promise<T>): Promise<T> => {
  try {
    return await step
  } catch (error) {
    const log = await page
      .evaluate(() => ((window as { focusLog?: Array<string> }).focusLog ?? []).join("\n"))
      .catch(() => "(not readable)")
    const dialogs = await page
      .locator("dialog[open]")
      .allTextContents()
      .catch(() => [])
    throw new Error(`${String(error)}\nopen dialogs: ${JSON.stringify(dialogs)}\nkeys, clicks and focus:\n${log}`)
  }
}

const focusSettled = (page: Page) =>
  page.waitForFunction(() => {
    const active = document.activeElement
    return active !== null && active !== document.body && active.isConnected && active.tagName !== "MAIN"
  })

test("record pages focus their heading; dialogs give focus back; busy buttons keep it", async () => {
  const { page } = session
  const created = await server.request("/v1/projects", { method: "POST", key, body: { name: "Focus project" } })
  expect(created.status).toBe(201)

  // In-app navigation to a page of one record: its h1 gets focus once the record is read.
  await page.getByRole("link", { name: "Projects", exact: true }).first().click()
  await page.getByRole("link", { name: "Focus project" }).click()
  await page.getByRole("heading", { level: 1, name: /Focus project/ }).waitFor()
  await page.waitForFunction(() => document.activeElement?.tagName === "H1")
  expect(await focused(page)).toContain("h1:Focus project")
  await session.shots("focus-01-project")
  await recordFocus(page)

  // The confirmation dialog, closed by Escape, then by Cancel: focus is back on the button that opened it.
  const remove = page.getByRole("button", { name: "Delete project" })
  await remove.focus()
  await page.keyboard.press("Enter")
  await page.getByRole("dialog").waitFor()
  await page.keyboard.press("Escape")
  await page.getByRole("dialog").waitFor({ state: "detached" })
  expect(await focused(page)).toBe("button:Delete project")
  // Again by keyboard, once the button is no longer busy with the first time (CI once saw the Enter go nowhere on
  // a loaded machine): the button as the page has it now, which the focus check above found focused.
  await page.waitForSelector('button:has-text("Delete project"):not([aria-busy="true"])')
  await remove.press("Enter")
  await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).press("Enter")
  await page.getByRole("dialog").waitFor({ state: "detached" })
  expect(await focused(page)).toBe("button:Delete project")

  // Archive, held at the network: while it works the button keeps focus and says it is busy.
  let release: () => void = () => {}
  const held = new Promise<void>((resolve) => (release = resolve))
  await page.route("**/v1/projects/*", async (route) => {
    if (route.request().method() === "PUT") await held
    await route.continue()
  })
  const archive = page.getByRole("button", { name: "Archive" })
  await archive.focus()
  await page.keyboard.press("Enter")
  await explained(
    page,
    page.waitForFunction(() => document.activeElement?.getAttribute("aria-busy") === "true")
  )
  expect(await focused(page)).toBe("button:Archive")
  release()
  await page.getByText("Project archived.").waitFor()
  await focusSettled(page)
  expect(await focused(page)).not.toMatch(/^(body|none)/)
  await page.unroute("**/v1/projects/*")
}, 90_000)

test("revoking a key: focus stays on the page, never on <body>; the focus ring has 3:1 contrast", async () => {
  const { page } = session
  await server.fixtures.apiKey(ann.id, { name: "Revoke me", scopes: "read" })
  await openSettings(page, "API keys")
  await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor()
  const row = page.locator("tr", { hasText: "Revoke me" })
  await row.getByRole("button", { name: /Revoke/ }).focus()
  await page.keyboard.press("Enter")
  await page.getByRole("dialog").getByRole("button", { name: "Revoke key" }).press("Enter")
  await row.locator(".badge", { hasText: "revoked" }).waitFor()
  await focusSettled(page)
  expect(await focused(page)).not.toMatch(/^(body|none)/)
  await expectAccessible(page, "API keys after a revoke")

  // The ring of a control focused by keyboard, against the page behind it.
  await page.getByRole("link", { name: "API keys" }).first().focus()
  await page.keyboard.press("Shift+Tab")
  await page.keyboard.press("Tab")
  const contrast = await page.evaluate(() => {
    const parse = (color: string) => (color.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number)
    const luminance = (rgb: Array<number>) => {
      const [r = 0, g = 0, b = 0] = rgb.map((c) => {
        const v = c / 255
        return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4
      })
      return 0.2126 * r + 0.7152 * g + 0.0722 * b
    }
    const active = document.activeElement
    if (active === null) return 0
    const ring = luminance(parse(getComputedStyle(active).outlineColor))
    let behind = active.parentElement
    while (behind !== null && getComputedStyle(behind).backgroundColor.endsWith(", 0)")) behind = behind.parentElement
    const background = luminance(parse(getComputedStyle(behind ?? document.body).backgroundColor))
    return (Math.max(ring, background) + 0.05) / (Math.min(ring, background) + 0.05)
  })
  expect(contrast).toBeGreaterThanOrEqual(3)
}, 120_000)

test("a webhook's rotated secret, shown once, has focus: its Copy is the next Tab", async () => {
  const { page } = session
  const hook = await server.request("/v1/webhooks", {
    method: "POST",
    key,
    body: { url: "http://127.0.0.1:9/hook", events: ["project.created"] }
  })
  expect(hook.status).toBe(201)
  await page.goto(`${server.url}/dashboard/webhooks/${hook.body.data.id}`)
  await page.getByRole("button", { name: "Rotate secret" }).click()
  await page.getByRole("dialog").getByRole("button", { name: "Rotate secret" }).click()
  await page.waitForFunction(() => document.activeElement?.classList.contains("secret-value") === true)
  await page.keyboard.press("Tab")
  expect(await focused(page)).toBe("button:Copy")
  await session.shots("focus-03-webhook-secret")
  expectNoProblems(session)
}, 120_000)
