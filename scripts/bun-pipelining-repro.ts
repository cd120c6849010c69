/**
 * Bun's HTTP/1.1 pipelining defect, without the service (issue 13): two requests written back to back on one
 * connection, the first answered after an `await`. Bun 1.4.5's `Bun.serve` answers neither and closes the
 * connection; with the first answered at once both come back in order. The service no longer depends on this: it
 * is served by Bun's `node:http` (src/Http.ts), which answers pipelined requests in order, and
 * test/e2e/hostile.test.ts ("HTTP/1.1 pipelining") holds it to that. Kept to tell when a Bun release fixes
 * `Bun.serve` (it then prints `/slow → responses: 2`), should the service want `Bun.serve` back.
 * Usage: bun scripts/bun-pipelining-repro.ts
 */
import { connect } from "node:net"

const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    if (new URL(req.url).pathname === "/slow") await Bun.sleep(50)
    return new Response(new URL(req.url).pathname)
  }
})
const run = (first: string) =>
  new Promise<string>((resolve) => {
    const s = connect(server.port, "127.0.0.1", () =>
      s.write(`GET ${first} HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n`)
    )
    let out = ""
    s.on("data", (d) => (out += d))
    s.on("close", () => resolve(out))
    setTimeout(() => {
      s.destroy()
      resolve(out)
    }, 1000)
  })
for (const first of ["/fast", "/slow"]) {
  const out = await run(first)
  console.log(first, "→ responses:", (out.match(/HTTP\/1.1 200/g) ?? []).length, JSON.stringify(out.slice(-40)))
}
server.stop(true)
