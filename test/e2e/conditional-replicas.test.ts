/**
 * The `If-Match` race across replicas (docs/api.md "Conditional requests"): two server processes on one PostgreSQL
 * database, writers spread over both at once with the same tag; exactly one write succeeds, the others are 412.
 * The comparison runs in each write's transaction with the row locked, so no replica can apply a write on top of a
 * version it did not compare. Only on PostgreSQL: SQLite is one process's file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { stopWithin } from "../support/helpers.ts"
import {
  migratedDatabaseUrl,
  type ServerProcess,
  startServer,
  type TestUser,
  usingPostgres
} from "../support/server.ts"

const POSTGRES = usingPostgres()
if (!POSTGRES) console.warn("conditional-replicas.test.ts: skipped: DATABASE_URL is not a postgres:// URL")

let replicas: Array<ServerProcess> = []
const at = (i: number): ServerProcess => replicas[i % replicas.length]!

describe.skipIf(!POSTGRES)("two replicas on one PostgreSQL", () => {
  beforeAll(async () => {
    const databaseUrl = await migratedDatabaseUrl()
    // One after the other: each start-up gets the machine to itself.
    replicas = [await startServer({ databaseUrl }), await startServer({ databaseUrl })]
  }, 90_000)

  afterAll(async () => {
    await Promise.all(replicas.map((server) => stopWithin(server)))
  }, 30_000)

  test("PUTs with the same If-Match spread over both replicas at once: exactly one succeeds, the rest 412", async () => {
    const user: TestUser = await at(0).user()
    for (const round of [0, 1, 2]) {
      const created = await at(round).request("/v1/projects", { method: "POST", key: user.key, body: { name: "Race" } })
      const path = `/v1/projects/${created.body.data.id}`
      const etag = (await at(round + 1).request(path, { key: user.key })).headers.get("etag") ?? ""
      expect(etag).not.toBe("")
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          at(i).request(path, {
            method: "PUT",
            key: user.key,
            body: { name: `Writer ${i}` },
            headers: { "if-match": etag }
          })
        )
      )
      const statuses = answers.map((res) => res.status).sort()
      expect(statuses).toEqual([200, 412, 412, 412, 412, 412, 412, 412, 412, 412])
      const winner = answers.find((res) => res.status === 200)?.body.data.name
      // Both replicas read the winner's change, with the tag its answer gave.
      for (const i of [0, 1]) {
        const now = await at(i).request(path, { key: user.key })
        expect(now.body.data.name).toBe(winner)
        expect(now.headers.get("etag")).toBe(answers.find((res) => res.status === 200)?.headers.get("etag") ?? "")
      }
    }
  }, 60_000)
})
