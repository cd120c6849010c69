/**
 * A real browser for the tests: Debian's Chromium (`/usr/bin/chromium`) driven by playwright-core — never a
 * downloaded browser. Every request the pages make is recorded (so a test can show none left 127.0.0.1), and so
 * is every uncaught error, console error and Content-Security-Policy violation.
 *
 * Chromium missing is a failure, not a skip: `.ci/run` installs Debian's `chromium` package when it is absent.
 */
import { expect } from "bun:test"
import { existsSync, mkdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import type { Fixtures } from "../support/fixtures.ts"

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
export const SHOTS = process.env.DASHBOARD_SHOTS ?? "/tmp/dashboard-shots"

export const DESKTOP = { width: 1280, height: 800 } as const
export const PHONE = { width: 375, height: 740 } as const

export interface Problem {
  readonly kind: "pageerror" | "console" | "csp"
  readonly text: string
  readonly url: string
}

export interface BrowserSession {
  readonly browser: Browser
  readonly context: BrowserContext
  readonly page: Page
  /** Every URL any page of this session requested, in order. */
  readonly requests: Array<string>
  /** Uncaught errors, console errors and CSP violations (see `problems()` for the ones that count). */
  readonly events: Array<Problem>
  /**
   * Screenshots of the current page at desktop and phone width (`<name>-desktop.png`, `<name>-phone.png`), after
   * checking it at each width: axe-core finds no violation, and at 375 px nothing sticks out sideways.
   */
  shots(name: string): Promise<void>
  close(): Promise<void>
}

/**
 * A console error that is the browser reporting an HTTP error status the page asked for on purpose (a wrong
 * password is a 401) — not a fault of the page. Any other console error counts.
 */
const expectedStatusLog =
  /^Failed to load resource: the server responded with a status of (401|403|404|409|412|422|400) /

/** The recorded problems that count: uncaught errors, CSP violations, console errors (but expected HTTP statuses). */
export const problems = (session: BrowserSession): Array<Problem> =>
  session.events.filter((event) => !(event.kind === "console" && expectedStatusLog.test(event.text)))

const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8")

interface Axe {
  run(context: Document): Promise<{
    readonly violations: ReadonlyArray<{
      readonly id: string
      readonly nodes: ReadonlyArray<{ readonly target: ReadonlyArray<unknown> }>
    }>
  }>
}

/**
 * axe-core's violations on the page as it is now, each as `rule: the elements it found` (injected through the
 * DevTools protocol, so the page's Content-Security-Policy stays as it is).
 */
export const violations = async (page: Page): Promise<Array<string>> => {
  if (!(await page.evaluate(() => "axe" in globalThis))) await page.evaluate(axeSource)
  return page.evaluate(async () => {
    // Runs in the page: everything it needs is declared in here.
    const isAxe = (value: unknown): value is Axe =>
      typeof value === "object" && value !== null && "run" in value && typeof value.run === "function"
    const scope: object = globalThis
    const axe = "axe" in scope ? scope.axe : undefined
    if (!isAxe(axe)) throw new Error("axe-core did not load in the page")
    const result = await axe.run(document)
    return result.violations.map(
      (violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`
    )
  })
}

/** axe-core finds no violation on the page as it is now (`name` says which page, in the failure). */
export const expectAccessible = async (page: Page, name: string): Promise<void> => {
  expect({ page: name, violations: await violations(page) }).toEqual({ page: name, violations: [] })
}

export const launch = async (): Promise<Browser> => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM}: the browser tests need Debian's chromium package ` +
        "(apt-get install chromium; .ci/run installs it). No browser is ever downloaded."
    )
  }
  return await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
}

export const openBrowser = async (options: { readonly origin?: string } = {}): Promise<BrowserSession> => {
  const browser = await launch()
  const context = await browser.newContext({ viewport: DESKTOP, locale: "en-GB", timezoneId: "UTC" })
  if (options.origin !== undefined) {
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: options.origin })
  }
  const requests: Array<string> = []
  const events: Array<Problem> = []
  context.on("request", (request) => {
    requests.push(request.url())
  })
  // CSP violations as the page itself sees them (the event fires in the page; this listener is not subject to it).
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      console.error(
        `CSP violation: ${event.violatedDirective} blocked ${event.blockedURI || "inline"} (${event.sourceFile}:${event.lineNumber})`
      )
    })
  })
  const page = await context.newPage()
  page.on("pageerror", (error) => events.push({ kind: "pageerror", text: String(error), url: page.url() }))
  page.on("console", (message) => {
    if (message.type() !== "error") return
    const text = message.text()
    events.push({
      kind: /Content Security Policy|CSP violation/i.test(text) ? "csp" : "console",
      text,
      url: page.url()
    })
  })
  mkdirSync(SHOTS, { recursive: true })
  const shots = async (name: string) => {
    const viewport = page.viewportSize() ?? DESKTOP
    await page.setViewportSize(DESKTOP)
    await expectAccessible(page, `${name} at ${DESKTOP.width} px`)
    await page.screenshot({ path: join(SHOTS, `${name}-desktop.png`), fullPage: true })
    await page.setViewportSize(PHONE)
    await expectAccessible(page, `${name} at ${PHONE.width} px`)
    // At 375 px nothing may stick out sideways (the page must not scroll horizontally).
    const width = await page.evaluate(() => document.documentElement.scrollWidth)
    const sticking =
      width <= PHONE.width
        ? []
        : await page.evaluate(
            (limit) =>
              Array.from(document.querySelectorAll("body *"))
                .filter((element) => element.getBoundingClientRect().right > limit + 1)
                .slice(-5)
                .map(
                  (element) =>
                    `${element.tagName.toLowerCase()}.${element.className}: ${(element.textContent ?? "").slice(0, 40)}`
                ),
            PHONE.width
          )
    expect({ page: name, width, sticking }).toEqual({ page: name, width: PHONE.width, sticking: [] })
    await page.screenshot({ path: join(SHOTS, `${name}-phone.png`), fullPage: true })
    await page.setViewportSize(viewport)
  }
  return {
    browser,
    context,
    page,
    requests,
    events,
    shots,
    close: async () => {
      await context.close()
      await browser.close()
    }
  }
}

/** Every request the session made went to 127.0.0.1 (or stayed inside the page: `data:`). */
export const expectOnlyLoopback = (session: BrowserSession): void => {
  expect(session.requests.length).toBeGreaterThan(0)
  const elsewhere = session.requests.filter((url) => {
    const parsed = new URL(url)
    return parsed.protocol !== "data:" && parsed.hostname !== "127.0.0.1"
  })
  expect(elsewhere).toEqual([])
}

/** No uncaught error, no CSP violation, no unexpected console error. */
export const expectNoProblems = (session: BrowserSession): void => {
  expect(problems(session)).toEqual([])
}

/**
 * A user who can sign in with a password, made by the service's own `Users.create` (the code behind the
 * operator's `cli users create --password`, which test/e2e/cli.test.ts runs as a process).
 */
export const userWithPassword = async (
  server: { readonly fixtures: Pick<Fixtures, "account"> },
  name: string
): Promise<{ readonly id: string; readonly email: string; readonly password: string; readonly name: string }> => {
  const email = `${name.toLowerCase().replace(/[^a-z]+/g, ".")}.${Math.random().toString(36).slice(2, 8)}@example.com`
  const password = `pw-${Math.random().toString(36).slice(2)}-Secret!`
  const user = await server.fixtures.account({ email, name, password })
  return { id: user.id, email, password, name }
}

/** Signs in to the dashboard through its sign-in page, by keyboard. */
/** Settings → `tab`: the main navigation's Settings, then that tab of Settings' own, as a person goes there. */
export const openSettings = async (page: Page, tab: string): Promise<void> => {
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Settings", exact: true }).click()
  const link = page.getByRole("navigation", { name: "Settings" }).getByRole("link", { name: tab, exact: true })
  await link.waitFor()
  await link.click()
}

export const signIn = async (page: Page, base: string, user: { readonly email: string; readonly password: string }) => {
  await page.goto(`${base}/dashboard/sign-in`)
  await page.getByLabel("Email").fill(user.email)
  await page.getByLabel("Password").fill(user.password)
  await page.getByLabel("Password").press("Enter")
  await page.getByRole("heading", { level: 1, name: "Projects" }).waitFor()
}
