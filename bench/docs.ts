/**
 * What `/docs` costs a browser: bytes transferred (compressed, as sent, headers included), the time until the page
 * is interactive (`domInteractive` and the `load` event, from Navigation Timing), until the operations are on screen
 * ("Create a project" visible) and until the network is quiet
 * (Playwright's `networkidle`: 500 ms without a request, so it includes those 500 ms), the page's width at 375 px
 * against the viewport, for a cold load (empty cache) and a warm one (same browser context).
 *
 *   bun bench/docs.ts [--repeat 5] [--url http://127.0.0.1:3000]
 *
 * Without `--url` it starts the service in-process (SQLite, a temp database) and measures this checkout's `/docs`.
 * Debian's Chromium (`/usr/bin/chromium`, or `CHROMIUM_PATH`) through playwright-core.
 */
import { chromium } from "playwright-core"
import { CHROMIUM } from "../test/browser/browser.ts"
import { startInProcess } from "../test/support/in-process.ts"
import { median } from "./stats.ts"

const option = (name: string) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? undefined : process.argv[at + 1]
}
const repeat = Number(option("repeat") ?? "5")
const given = option("url")
const server = given === undefined ? await startInProcess() : undefined
const base = given ?? server?.url ?? ""

const browser = await chromium.launch({ executablePath: CHROMIUM })
const runs: Array<{ bytes: number; requests: number; interactive: number; load: number; shown: number; idle: number }> =
  []
let widthAt375 = 0
try {
  for (let run = 0; run < repeat; run++) {
    const context = await browser.newContext({ viewport: { width: 375, height: 740 } })
    const page = await context.newPage()
    const cdp = await context.newCDPSession(page)
    await cdp.send("Network.enable")
    let bytes = 0
    let requests = 0
    cdp.on("Network.loadingFinished", (event) => {
      bytes += event.encodedDataLength
      requests += 1
    })
    const started = performance.now()
    const loaded = page.goto(`${base}/docs`, { waitUntil: "networkidle" })
    await page.getByText("Create a project").first().waitFor({ timeout: 60_000 })
    const shown = performance.now() - started
    await loaded
    const idle = performance.now() - started
    const timing = await page.evaluate(() => {
      const { navigationStart, domInteractive, loadEventEnd } = performance.timing
      return { interactive: domInteractive - navigationStart, load: loadEventEnd - navigationStart }
    })
    widthAt375 = await page.evaluate(() => document.documentElement.scrollWidth)
    runs.push({ bytes, requests, interactive: timing.interactive, load: timing.load, shown, idle })
    await context.close()
  }
} finally {
  await browser.close()
  await server?.stop()
}

const row = (label: string, pick: (run: (typeof runs)[number]) => number, unit: string) =>
  console.log(`${label.padEnd(34)} ${median(runs.map(pick)).toFixed(0).padStart(10)} ${unit}`)
console.log(`/docs at ${base}, cold loads, median of ${runs.length}`)
row("bytes transferred", (run) => run.bytes, "B")
row("requests", (run) => run.requests, "")
row("DOM interactive", (run) => run.interactive, "ms")
row("load event end", (run) => run.load, "ms")
row("operations shown (text visible)", (run) => run.shown, "ms")
row("network idle (incl. 500 ms quiet)", (run) => run.idle, "ms")
console.log(`${"page width at 375 px".padEnd(34)} ${String(widthAt375).padStart(10)} px`)
