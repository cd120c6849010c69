/**
 * Not a test of its own (its name is not `*.test.ts`): what test/e2e/request-trip-coverage.test.ts runs under
 * `bun test --coverage`, in a process of its own, to see which files of src/ a keyed create runs. The server in this
 * process on a fresh database, a user with an API key, then `TRIP_CREATES` keyed creates one after another. The
 * delivery worker's poll is set an hour apart, so that nothing that repeats beside the creates runs more often in a
 * longer run (what runs once a process, the test tells apart).
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { stopWithin } from "./helpers.ts"
import { startInProcess } from "./in-process.ts"
import type { Server } from "./server.ts"

let server: Server
beforeAll(async () => {
  server = await startInProcess({ env: { WEBHOOK_POLL_INTERVAL: "1h" } })
}, 60_000)
afterAll(async () => {
  await stopWithin(server)
}, 30_000)

test("keyed creates, one after another", async () => {
  const user = await server.user()
  for (let i = 0; i < Number(process.env.TRIP_CREATES ?? 1); i++) {
    const created = await server.request("/v1/projects", {
      method: "POST",
      key: user.key,
      body: { name: `Trip ${i}` },
      headers: { "idempotency-key": crypto.randomUUID() }
    })
    expect(created.status).toBe(201)
  }
}, 60_000)
