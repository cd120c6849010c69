/**
 * `/docs` works offline: in headless Chromium (Debian's, never a downloaded one) the page renders, every request it
 * makes goes to the service itself, the Content-Security-Policy is not broken, and the request dialog starts with
 * bearer authentication selected (a key typed into it is sent as `Authorization: Bearer`). Plus the caching and
 * compression of the page and its script, checked over HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type { Browser } from "playwright-core"
import { launch } from "../browser/browser.ts"
import { startInProcess as startServer } from "../support/in-process.ts"
import type { Server } from "../support/server.ts"

let server: Server
let browser: Browser | undefined

beforeAll(async () => {
  // Chromium missing is a failure, not a skip (as in test/browser/): `launch` says how to install it.
  browser = await launch()
  server = await startServer()
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
})

describe("/docs in a browser", () => {
  test("renders from this origin alone, without CSP violations, with bearer authentication selected", async () => {
    const user = await server.user()
    const origin = new URL(server.url).origin
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } })
    const requests: Array<string> = []
    const problems: Array<string> = []
    page.on("request", (request) => requests.push(request.url()))
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") problems.push(message.text())
    })
    page.on("pageerror", (error) => problems.push(error.message))
    try {
      await page.goto(`${server.url}/docs`, { waitUntil: "networkidle" })
      // Rendered: the title, the operations, and the authentication box on bearer.
      await page.getByRole("heading", { name: "Project Collaboration Service" }).first().waitFor({ timeout: 30_000 })
      await page.getByText("Bearer Token").first().waitFor({ timeout: 30_000 })
      expect(await page.getByText("List the projects you own and those of your teams").count()).toBeGreaterThan(0)
      expect(await page.getByRole("button", { name: /Selected Auth Type:\s*bearer/ }).count()).toBeGreaterThan(0)

      // The request dialog starts on bearer: a key typed in is sent with the request.
      await page
        .getByRole("button", { name: /Test Request/ })
        .first()
        .click()
      const dialog = page.getByRole("dialog")
      await dialog.getByText("Bearer Token").first().waitFor({ timeout: 30_000 })
      await dialog.getByPlaceholder("Token").first().fill(user.key)
      const sent = page.waitForRequest((request) => new URL(request.url()).pathname === "/v1/projects", {
        timeout: 30_000
      })
      await dialog.getByRole("button", { name: "Send" }).first().click()
      const request = await sent
      expect(request.headers().authorization).toBe(`Bearer ${user.key}`)
      expect((await request.response())?.status()).toBe(200)
      await page.waitForLoadState("networkidle")
    } finally {
      await page.close()
    }
    expect(requests.length).toBeGreaterThan(1)
    const elsewhere = requests.filter(
      (url) => !url.startsWith(`${origin}/`) && !url.startsWith("data:") && !url.startsWith("blob:")
    )
    expect(elsewhere).toEqual([])
    expect(problems).toEqual([])
  }, 120_000)
})

describe("/docs examples", () => {
  test("the List projects request example, run as shown, lists the caller's projects", async () => {
    const user = await server.user()
    const created = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "Shown" } })
    expect(created.status).toBe(201)
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } })
    try {
      await page.goto(`${server.url}/docs`, { waitUntil: "networkidle" })
      await page.getByText("Bearer Token").first().waitFor({ timeout: 30_000 })
      // The example is drawn as its operation scrolls into view.
      const example = async () =>
        /curl '([^']*\/v1\/projects\?[^']*)'/.exec(await page.evaluate(() => document.body.textContent ?? ""))
      for (let i = 0; i < 40 && (await example()) === null; i++) {
        await page.mouse.wheel(0, 600)
        await page.waitForTimeout(100)
      }
      const url = (await example())?.[1]
      expect(url).toBeDefined()
      const shown = new URL(url!)
      expect(shown.pathname).toBe("/v1/projects")
      const response = await fetch(new URL(`${shown.pathname}${shown.search}`, server.url), {
        headers: { authorization: `Bearer ${user.key}` }
      })
      const body = await response.json()
      expect({ url, status: response.status }).toEqual({ url, status: 200 })
      expect(body.data.map((project: { id: string }) => project.id)).toEqual([created.body.data.id])
    } finally {
      await page.close()
    }
  }, 120_000)
})

describe("/docs over HTTP", () => {
  test("the page: compressed, revalidated by ETag, a CSP of this origin only, no third-party URL", async () => {
    const response = await fetch(`${server.url}/docs`, { headers: { "accept-encoding": "br" }, decompress: false })
    expect(response.status).toBe(200)
    expect(response.headers.get("content-encoding")).toBe("br")
    expect(response.headers.get("vary")).toBe("Accept-Encoding")
    expect(response.headers.get("cache-control")).toBe("no-cache")
    const csp = response.headers.get("content-security-policy") ?? ""
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("script-src 'self' 'wasm-unsafe-eval'")
    expect(csp).toContain("connect-src 'self'")
    expect(csp).not.toMatch(/https?:/)
    const etag = response.headers.get("etag")
    expect(etag).toMatch(/^W\/".+"$/)
    await response.arrayBuffer()

    const page = await server.request("/docs")
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
    // The page itself names no other host in what it loads (the document inside may mention URLs as text).
    const loaded = Array.from(page.text.matchAll(/<(?:script|link)[^>]+(?:src|href)="([^"]+)"/g), (match) => match[1]!)
    expect(loaded.length).toBeGreaterThan(0)
    for (const url of loaded) expect(url.startsWith("/") || url.startsWith("data:")).toBe(true)
    expect(page.text).toContain('"preferredSecurityScheme":"bearer"'.replace(/"/g, "&quot;"))
    expect(page.text).toContain('"withDefaultFonts":false'.replace(/"/g, "&quot;"))
    expect(page.text.length).toBeLessThan(500_000)

    const again = await fetch(`${server.url}/docs`, { headers: { "if-none-match": etag! } })
    expect(again.status).toBe(304)
  }, 30_000)

  test("the script: a content-hashed URL cached for a year, brotli or gzip as accepted, 304 on its ETag", async () => {
    const page = await server.request("/docs")
    const script = /<script src="(\/docs\/assets\/scalar\.[0-9a-f]{16}\.js)"/.exec(page.text)?.[1]
    expect(script).toBeDefined()
    const sizes: Record<string, number> = {}
    for (const encoding of ["br", "gzip", "identity"]) {
      const response = await fetch(`${server.url}${script}`, {
        headers: { "accept-encoding": encoding },
        decompress: false
      })
      expect(response.status).toBe(200)
      expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
      expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8")
      expect(response.headers.get("content-encoding")).toBe(encoding === "identity" ? null : encoding)
      sizes[encoding] = (await response.arrayBuffer()).byteLength
    }
    expect(sizes.identity).toBeGreaterThan(1_000_000)
    expect(sizes.br).toBeLessThan(sizes.identity! / 3)
    expect(sizes.gzip).toBeLessThan(sizes.identity! / 3)

    const first = await fetch(`${server.url}${script}`)
    const cached = await fetch(`${server.url}${script}`, { headers: { "if-none-match": first.headers.get("etag")! } })
    expect(cached.status).toBe(304)
    await first.arrayBuffer()

    const other = await fetch(`${server.url}/docs/assets/scalar.0000000000000000.js`)
    expect(other.status).toBe(404)
    await other.arrayBuffer()
  }, 60_000)

  // Scalar's bundle and the document are made on the first request for them, not at start-up: whichever of the
  // three routes a just-started server is asked first must answer as it would later.
  test("a just-started server answers whichever docs route it is asked first", async () => {
    const page = await server.request("/docs")
    const script = /<script src="(\/docs\/assets\/scalar\.[0-9a-f]{16}\.js)"/.exec(page.text)?.[1]
    const document = await server.request("/v1/openapi.json")
    const bundle = new Uint8Array(await (await fetch(`${server.url}${script}`)).arrayBuffer())
    for (const first of ["script", "unknown asset", "document", "page"] as const) {
      const fresh = await startServer()
      try {
        if (first === "script") {
          // A browser's cached page asks for the script by its hashed URL before anything else.
          const response = await fetch(`${fresh.url}${script}`)
          expect(response.status).toBe(200)
          expect(new Uint8Array(await response.arrayBuffer())).toEqual(bundle)
        } else if (first === "unknown asset") {
          const response = await fetch(`${fresh.url}/docs/assets/scalar.0000000000000000.js`)
          expect(response.status).toBe(404)
          await response.arrayBuffer()
        } else if (first === "document") {
          const response = await fresh.request("/v1/openapi.json")
          expect(response.status).toBe(200)
          expect(JSON.stringify(response.body.paths)).toBe(JSON.stringify(document.body.paths))
        } else {
          const response = await fresh.request("/docs")
          expect(response.status).toBe(200)
          expect(response.text).toContain(`<script src="${script}">`)
        }
      } finally {
        await fresh.stop()
      }
    }
  }, 60_000)

  // Without BASE_URL the document names the address the client used (its Host header), and each address's bytes
  // are compressed and kept. A client sending a new Host each time must not have the server compress per request.
  test("past eight addresses, the docs are built per request and sent uncompressed; the first eight stay kept", async () => {
    const fresh = await startServer()
    try {
      const ask = async (host: string, path: string) => {
        const response = await fetch(`${fresh.url}${path}`, {
          headers: { host, "accept-encoding": "br" },
          decompress: false
        })
        const bytes = new Uint8Array(await response.arrayBuffer())
        return { status: response.status, encoding: response.headers.get("content-encoding"), bytes }
      }
      for (let i = 0; i < 8; i++) {
        const kept = await ask(`docs-${i}.example`, "/v1/openapi.json")
        expect(kept.status).toBe(200)
        expect(kept.encoding).toBe("br")
      }
      for (const path of ["/v1/openapi.json", "/docs"]) {
        const extra = await ask("docs-8.example", path)
        expect(extra.status).toBe(200)
        expect(extra.encoding).toBeNull()
        expect(new TextDecoder().decode(extra.bytes)).toContain("http://docs-8.example")
      }
      const document = JSON.parse(new TextDecoder().decode((await ask("docs-9.example", "/v1/openapi.json")).bytes))
      expect(document.servers[0].url).toBe("http://docs-9.example")
      expect(Object.keys(document.paths).length).toBeGreaterThan(20)
      // The first eight are still kept, compressed.
      expect((await ask("docs-0.example", "/v1/openapi.json")).encoding).toBe("br")
    } finally {
      await fresh.stop()
    }
  }, 60_000)
})
