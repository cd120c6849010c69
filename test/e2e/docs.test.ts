// engine-independent: the published documents and assets, the same whatever the engine
/**
 * `/docs` works offline and is light: in headless Chromium (Debian's, never a downloaded one) the page is rendered
 * HTML from the service alone, with no script, no request after the page, no CSP violation, readable section names
 * and no horizontal scroll at 375 px. Every request body example it shows, sent as shown, succeeds. Plus the
 * caching and compression of the page, checked over HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Layer } from "effect"
import type { Browser } from "playwright-core"
import { escapeHtml, examplesOf } from "../../src/Http/DocsPage.ts"
import { type Resolver, TargetResolver } from "../../src/Webhooks/Delivery/Targets.ts"
import { launch } from "../browser/browser.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Server } from "../support/server.ts"

// This machine may be offline, and a test sends nothing beyond loopback: the examples' host (example.com) resolves,
// through the webhook targets' resolver, to 127.0.0.1 (private targets allowed), where nothing answers on 443.
const loopbackResolver: Resolver = { lookup: async () => ["127.0.0.1"] }

let server: Server
let browser: Browser | undefined

beforeAll(async () => {
  // Chromium missing is a failure, not a skip (as in test/browser/): `launch` says how to install it.
  browser = await launch()
  server = await startInProcess({
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" },
    around: Layer.succeed(TargetResolver, loopbackResolver)
  })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await server?.stop()
}, 20_000)

describe("/docs in a browser", () => {
  for (const width of [1280, 375]) {
    test(`at ${width} px: this origin alone, no script, readable sections, no horizontal scroll`, async () => {
      const origin = new URL(server.url).origin
      const page = await browser!.newPage({ viewport: { width, height: 900 } })
      const requests: Array<string> = []
      const problems: Array<string> = []
      page.on("request", (request) => requests.push(request.url()))
      page.on("console", (message) => {
        if (message.type() === "error" || message.type() === "warning") problems.push(message.text())
      })
      page.on("pageerror", (error) => problems.push(error.message))
      try {
        await page.goto(`${server.url}/docs`, { waitUntil: "networkidle" })
        await page.getByRole("heading", { level: 1, name: "Project Collaboration Service" }).waitFor()
        expect(await page.getByText("List the projects you own and those of your teams").count()).toBeGreaterThan(0)
        const sections = await page.locator("h2").allTextContents()
        expect(sections).toContain("API keys")
        expect(sections).toContain("OAuth clients")
        for (const identifier of ["apiKeys", "oauthClients", "authorizations", "Models"]) {
          expect(sections).not.toContain(identifier)
        }
        expect(await page.locator("script").count()).toBe(0)
        const widths = await page.evaluate(() => ({
          scroll: document.documentElement.scrollWidth,
          client: document.documentElement.clientWidth
        }))
        expect(widths.scroll).toBeLessThanOrEqual(widths.client)
        await page.screenshot({ path: `/tmp/dashboard-shots/docs-${width}.png`, fullPage: false })
      } finally {
        await page.close()
      }
      expect(requests).toEqual([`${origin}/docs`])
      expect(problems).toEqual([])
    }, 60_000)
  }
})

describe("/docs examples", () => {
  // Each request body example on the page, sent as shown (the curl line's method, path and body) with the ids of
  // the caller's own resources in the path: every one succeeds. The OAuth endpoints take a code, a token or a
  // password that no example can hold, and are left out.
  test("every /v1 request body example, sent as shown, succeeds", async () => {
    const owner = await server.user({ name: "Owner", scopes: "read,write,team:manage" })
    const member = await server.user({ name: "Member" })
    const post = async (path: string, body: unknown, key = owner.key) => {
      const response = await server.request(path, { method: "POST", key, body })
      expect({ path, status: response.status }).toEqual({ path, status: 201 })
      return response.body.data.id as string
    }
    const project = await post("/v1/projects", { name: "Docs" })
    const team = await server.fixtures.team("Docs team", owner.id)
    await server.fixtures.addMember(team.id, member.id, "member")
    const deployment = await post(`/v1/projects/${project}/deployments`, { ref: "main" })
    const webhook = await post("/v1/webhooks", { url: "https://example.com/docs", events: ["project.created"] })
    const client = await post("/v1/oauth-clients", { name: "Docs", redirect_uris: ["https://example.com/cb"] })
    const ids: Record<string, Record<string, string>> = {
      "/v1/projects/{id}": { id: project, deployment_id: deployment },
      "/v1/teams/{team_id}": { team_id: team.id, user_id: member.id },
      "/v1/webhooks/{id}": { id: webhook },
      "/v1/oauth-clients/{id}": { id: client }
    }

    const document = (await server.request("/v1/openapi.json")).body
    const page = (await server.request("/docs")).text
    const examples = examplesOf(document).filter((example) => example.path.startsWith("/v1/"))
    expect(examples.length).toBeGreaterThan(15)
    expect(examples.find((example) => example.method === "POST" && example.path === "/v1/projects")).toBeDefined()
    const results: Array<{ example: string; status: number; body: unknown }> = []
    for (const example of examples) {
      // Shown on the page as sent.
      expect(page).toContain(escapeHtml(example.body))
      const params = Object.entries(ids).find(([prefix]) => example.path.startsWith(prefix))?.[1] ?? {}
      const path = example.path.replace(/\{([a-z_]+)\}/g, (_, name: string) => params[name] ?? `{${name}}`)
      // Recovery reaches back 14 days at most, so no fixed date stays valid: its example is sent with today's date.
      const body = example.path.endsWith("/recover")
        ? example.body.replace(/\d{4}-\d{2}-\d{2}T[0-9:.]+Z/, new Date().toISOString())
        : example.body
      const response = await server.request(path, {
        method: example.method,
        key: owner.key,
        rawBody: body,
        headers: { "content-type": example.contentType }
      })
      results.push({ example: `${example.method} ${example.path}`, status: response.status, body: response.body })
    }
    expect(results.filter((result) => result.status < 200 || result.status > 299)).toEqual([])
  }, 60_000)
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
    expect(csp).toContain("script-src 'none'")
    expect(csp).not.toMatch(/https?:/)
    const etag = response.headers.get("etag")
    expect(etag).toMatch(/^".+"$/)
    await response.arrayBuffer()

    const page = await server.request("/docs")
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8")
    // The page loads nothing: no script, no style sheet or font from anywhere.
    expect(page.text).not.toMatch(/<script|<link[^>]+rel="(?:stylesheet|preload)"|@font-face/)
    expect(page.text.length).toBeLessThan(500_000)

    const again = await fetch(`${server.url}/docs`, { headers: { "if-none-match": etag! } })
    expect(again.status).toBe(304)
  }, 30_000)

  // The document and the page are made on the first request for them, not at start-up: whichever of the two
  // routes a just-started server is asked first must answer as it would later.
  test("a just-started server answers whichever docs route it is asked first", async () => {
    const page = await server.request("/docs")
    const document = await server.request("/v1/openapi.json")
    for (const first of ["document", "page"] as const) {
      const fresh = await startInProcess()
      try {
        if (first === "document") {
          const response = await fresh.request("/v1/openapi.json")
          expect(response.status).toBe(200)
          expect(JSON.stringify(response.body.paths)).toBe(JSON.stringify(document.body.paths))
        } else {
          const response = await fresh.request("/docs")
          expect(response.status).toBe(200)
          expect(response.text.replaceAll(fresh.url, server.url)).toBe(page.text)
        }
      } finally {
        await fresh.stop()
      }
    }
  }, 60_000)

  // Without BASE_URL the document names the address the client used (its Host header), and each address's bytes
  // are compressed and kept. A client sending a new Host each time must not have the server compress per request.
  test("past eight addresses, the docs are built per request and sent uncompressed; the first eight stay kept", async () => {
    const fresh = await startInProcess()
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
