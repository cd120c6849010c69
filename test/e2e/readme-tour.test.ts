/**
 * The README's tour works as written: its `sh` blocks, taken from README.md itself, run in order in one `bash`, as
 * a reader pasting them would, with `set -e -o pipefail` and `curl` failing on an HTTP error, so any command that
 * fails fails the test. The only changes made to the text are the tour's port (4100), its receiver's port (4101)
 * and its data file (`./data/tour.sqlite`), swapped for free ports and a fresh database (SQLite, or a new PostgreSQL
 * database when DATABASE_URL is a postgres URL), so runs never clash.
 *
 * Then it checks what the tour promises a reader: the user with their password, the key, the projects, the
 * receiver printing the delivery with its signature verified, signing in to the dashboard (in Chromium), `/docs`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { expectNoProblems, openBrowser, signIn } from "../browser/browser.ts"
import { eventually, freePort, sleep } from "../support/helpers.ts"
import { freshDatabaseUrl } from "../support/server.ts"
import { tempDir } from "../support/temp.ts"

const ROOT = join(import.meta.dir, "..", "..")
const README = readFileSync(join(ROOT, "README.md"), "utf8")

const TOUR_PORT = "4100"
const TOUR_RECEIVER_PORT = "4101"
const TOUR_DATABASE = "./data/tour.sqlite"
const EMAIL = "ann@example.com"
const PASSWORD = "correct horse battery"

/** The README's tour section: from its heading to the next `## ` heading. */
const tourSection = (markdown: string): string => {
  const start = markdown.search(/^## A ten-minute tour/m)
  if (start < 0) throw new Error("README.md has no '## A ten-minute tour' section")
  const rest = markdown.slice(start + 1)
  const end = rest.search(/^## /m)
  return end < 0 ? rest : rest.slice(0, end)
}

/** The bodies of the fenced `sh` blocks of a piece of Markdown, in order. */
const shellBlocks = (markdown: string): Array<string> =>
  Array.from(markdown.matchAll(/^```(?:sh|bash|shell)\n([\s\S]*?)^```$/gm), (match) => match[1] ?? "")

const section = tourSection(README)
const blocks = shellBlocks(section)

const port = freePort()
let receiverPort = freePort()
while (receiverPort === port) receiverPort = freePort()
const base = `http://127.0.0.1:${port}`

let tour: ChildProcess | undefined
let stdout = ""
let stderr = ""
let exitCode: number | null = null
let key = ""

/** SIGTERM to the tour's process group (bash, the server, the receiver), then SIGKILL to whatever is left. */
const stopTour = async () => {
  const pid = tour?.pid
  if (pid === undefined) return
  const alive = () => {
    try {
      process.kill(-pid, 0)
      return true
    } catch {
      return false
    }
  }
  if (alive()) process.kill(-pid, "SIGTERM")
  for (let waited = 0; waited < 15_000 && alive(); waited += 100) await sleep(100)
  if (alive()) process.kill(-pid, "SIGKILL")
}

const killTourNow = () => {
  if (tour?.pid !== undefined) {
    try {
      process.kill(-tour.pid, "SIGKILL")
    } catch {
      // already gone
    }
  }
}

beforeAll(async () => {
  const databaseUrl = await freshDatabaseUrl()
  const script = [
    "set -e -o pipefail",
    // A reader sees an HTTP error; the test must stop at it.
    'curl() { command curl --fail-with-body "$@"; }',
    ...blocks.map((block) =>
      block
        .replaceAll(TOUR_DATABASE, databaseUrl)
        .replace(new RegExp(`\\b${TOUR_PORT}\\b`, "g"), String(port))
        .replace(new RegExp(`\\b${TOUR_RECEIVER_PORT}\\b`, "g"), String(receiverPort))
    )
  ].join("\n")
  const file = join(tempDir("pcs-tour-"), "tour.sh")
  writeFileSync(file, script)
  const env: Record<string, string | undefined> = { ...process.env }
  for (const name of ["DATABASE_URL", "PORT", "HOST", "BASE_URL", "LOG_LEVEL", "WEBHOOK_ALLOW_PRIVATE_TARGETS"])
    delete env[name]
  // Its own process group, so the server and receiver it leaves running in the background can be stopped with it.
  tour = spawn("bash", [file], { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
  process.once("exit", killTourNow)
  tour.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8")
  })
  tour.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8")
  })
  exitCode = await new Promise<number | null>((resolve) => tour?.once("exit", (code) => resolve(code)))
  key = /\b(pcs_[A-Za-z0-9]{40})\b/.exec(stdout)?.[1] ?? ""
}, 180_000)

afterAll(async () => {
  await stopTour()
  process.off("exit", killTourNow)
})

describe("the README's tour, run from README.md", () => {
  test("the tour section has the blocks a reader runs, on its own port, data file and receiver", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4)
    const text = blocks.join("\n")
    for (const needed of [TOUR_PORT, TOUR_RECEIVER_PORT, TOUR_DATABASE, "WEBHOOK_ALLOW_PRIVATE_TARGETS=true"])
      expect({ needed, inTour: text.includes(needed) }).toEqual({ needed, inTour: true })
    // As written for a machine without them: no jq, no macOS open, nothing from the network.
    expect(text).not.toMatch(/\bjq\b|\bopen\s+["']?http|example\.com\/|https:\/\//)
    // The repository's documentation stands alone: nothing points outside it.
    const docs = join(ROOT, "docs")
    for (const name of ["README.md", ...Array.from(new Bun.Glob("*.md").scanSync(docs), (file) => `docs/${file}`)])
      expect({ name, outside: readFileSync(join(ROOT, name), "utf8").includes("../shared/") }).toEqual({
        name,
        outside: false
      })
  })

  test("every command of the tour succeeds", () => {
    expect({ exitCode, stderr, stdout }).toMatchObject({ exitCode: 0 })
  })

  test("the user exists, and the key the tour printed is theirs", async () => {
    expect(stdout).toMatch(/"email": ?"ann@example\.com"/)
    expect(key).toMatch(/^pcs_/)
    const me = await fetch(`${base}/v1/users/me`, { headers: { authorization: `Bearer ${key}` } })
    expect(me.status).toBe(200)
    expect(((await me.json()) as { data: { email: string; name: string } }).data).toMatchObject({
      email: EMAIL,
      name: "Ann"
    })
  })

  test("the user signs in with the password the tour gave (and not with another)", async () => {
    const login = (password: string) =>
      fetch(`${base}/oauth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: EMAIL, password })
      })
    const right = await login(PASSWORD)
    expect(right.status).toBe(200)
    expect(((await right.json()) as { access_token: string }).access_token).toMatch(/^eyJ/)
    expect((await login("not the password")).status).toBe(401)
  })

  test("the projects the tour made are there", async () => {
    const list = await fetch(`${base}/v1/projects?sort=name&order=asc`, { headers: { authorization: `Bearer ${key}` } })
    expect(list.status).toBe(200)
    const body = (await list.json()) as { data: Array<{ name: string }>; meta: { total: number } }
    expect(body.data.map((project) => project.name)).toEqual(["Apollo", "Hooked"])
  })

  test("the receiver printed the delivery, with its signature verified, and the service recorded it", async () => {
    const hooks = await fetch(`${base}/v1/webhooks`, { headers: { authorization: `Bearer ${key}` } })
    const webhooks = ((await hooks.json()) as { data: Array<{ id: string; url: string }> }).data
    expect(webhooks.map((webhook) => webhook.url)).toEqual([`http://127.0.0.1:${receiverPort}/hooks`])
    const printed = await eventually(
      () => /project\.created (dlv_\w+): signature verified[^\n]*\n {2}(\{[^\n]*\})/.exec(stdout) ?? undefined,
      { timeoutMs: 30_000, what: "the receiver's line for the delivery" }
    )
    expect(JSON.parse(printed[2] ?? "")).toMatchObject({ type: "project.created", data: { name: "Hooked" } })
    expect(stdout).not.toMatch(/dlv_\w+: signature NOT verified/)
    const delivered = await eventually(
      async () => {
        const answer = await fetch(`${base}/v1/webhooks/${webhooks[0]?.id}/deliveries?status=delivered`, {
          headers: { authorization: `Bearer ${key}` }
        })
        const body = (await answer.json()) as { data: Array<{ id: string }> }
        return body.data.length > 0 ? body.data : undefined
      },
      { timeoutMs: 30_000, what: "the delivery recorded as delivered" }
    )
    expect(delivered.map((delivery) => delivery.id)).toEqual([printed[1] ?? "(no delivery id printed)"])
  })

  test("the receiver refuses a delivery whose signature does not verify", async () => {
    const refused = await fetch(`http://127.0.0.1:${receiverPort}/hooks`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-signature": `sha256=${"0".repeat(64)}` },
      body: JSON.stringify({ id: "evt_forged", type: "project.created" })
    })
    expect(refused.status).toBe(401)
  })

  test("the dashboard: a person signs in with the tour's email and password, and sees the projects", async () => {
    const session = await openBrowser()
    try {
      await signIn(session.page, base, { email: EMAIL, password: PASSWORD })
      await session.page.getByRole("link", { name: "Apollo" }).first().waitFor()
      await session.page.getByRole("link", { name: "Hooked" }).first().waitFor()
      expectNoProblems(session)
    } finally {
      await session.close()
    }
  }, 60_000)

  test("/docs and the OpenAPI document answer", async () => {
    const docs = await fetch(`${base}/docs`)
    expect(docs.status).toBe(200)
    expect(docs.headers.get("content-type")).toContain("text/html")
    const openapi = await fetch(`${base}/v1/openapi.json`)
    expect(openapi.status).toBe(200)
    expect(((await openapi.json()) as { openapi: string }).openapi).toMatch(/^3\.1/)
  })
})
