/**
 * The events feed under concurrent writers, read by a client polling every few milliseconds (test/support/
 * feedReaders.ts): with the cursor (`after`) it sees every event exactly once, on both engines, and across two
 * replicas on one PostgreSQL. The same load read with the old `created_after` procedure misses events (issue 42):
 * that reproduction runs with `FEED_LOSS_REPRO=1` (it counts, and fails if it missed none; how many it misses
 * depends on timing, so it is not part of the suite). The suite reproduces the skip without timing, on PostgreSQL:
 * test/events/feed-sequence.service.test.ts holds a writer's transaction open while a later one commits.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import {
  afterPolls,
  createdAfterReader,
  cursorReader,
  type FeedReader,
  runLoad,
  untilAllSeen
} from "../support/feedReaders.ts"
import { stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { migratedDatabaseUrl, type Server, startServer, type TestUser, usingPostgres } from "../support/server.ts"

const POSTGRES = usingPostgres()
const REPRO = process.env.FEED_LOSS_REPRO === "1"
const WRITERS = 12
const PER_WRITER = 16

const ENV = {
  RATE_LIMIT_PER_MINUTE: "1000000",
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "1000000",
  AUTH_IP_LIMIT_PER_MINUTE: "1000000"
}

/** A first event, written before the load: where each reader starts. */
const seed = async (server: Server, user: TestUser) => {
  const made = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name: "seed" } })
  expect(made.status).toBe(201)
  const newest = await server.request("/v1/events?per_page=1", { key: user.key })
  return newest.body.data[0] as { id: string; created_at: string }
}

const loadWith = async (
  servers: ReadonlyArray<Server>,
  makeReader: (server: Server, user: TestUser, start: { id: string; created_at: string }) => FeedReader,
  settled: Parameters<typeof runLoad>[0]["settled"]
) => {
  const user = await servers[0]!.user({ name: "Reader" })
  const start = await seed(servers[0]!, user)
  return runLoad({
    servers,
    key: user.key,
    writers: WRITERS,
    perWriter: PER_WRITER,
    reader: makeReader(servers[0]!, user, start),
    settled
  })
}

const cursor = (server: Server, user: TestUser, start: { id: string; created_at: string }) =>
  cursorReader(server.request, user.key, start)
const createdAfter = (server: Server, user: TestUser, start: { id: string; created_at: string }) =>
  createdAfterReader(server.request, user.key, start)

describe("concurrent writers through one server", () => {
  let server: Server
  beforeAll(async () => {
    server = await startInProcess({ env: ENV })
  }, 60_000)
  afterAll(() => server?.stop(), 20_000)

  test("the cursor reader sees every event exactly once", async () => {
    const result = await loadWith([server], cursor, untilAllSeen(30_000))
    expect(result.written.size).toBe(WRITERS * PER_WRITER + 1)
    expect({ missed: result.missed, duplicates: result.duplicates }).toEqual({ missed: 0, duplicates: 0 })
  }, 180_000)
})

describe.skipIf(!POSTGRES)("concurrent writers through two replicas on one PostgreSQL", () => {
  let replicas: Array<Server> = []
  beforeAll(async () => {
    const databaseUrl = await migratedDatabaseUrl()
    replicas = await Promise.all([0, 1].map(() => startServer({ databaseUrl, env: ENV })))
  }, 60_000)
  afterAll(async () => {
    await Promise.all(replicas.map((server) => stopWithin(server)))
  }, 30_000)

  test.skipIf(!REPRO)(
    "reproduction: the created_after reader misses events",
    async () => {
      const result = await loadWith(replicas, createdAfter, afterPolls(5))
      console.log(
        `created_after reader: missed ${result.missed} of ${result.written.size} events, ${result.duplicates} duplicates`
      )
      expect(result.missed).toBeGreaterThan(0)
    },
    180_000
  )

  test("the cursor reader sees every event exactly once", async () => {
    const result = await loadWith(replicas, cursor, untilAllSeen(30_000))
    if (REPRO) {
      console.log(
        `cursor reader: missed ${result.missed} of ${result.written.size} events, ${result.duplicates} duplicates`
      )
    }
    expect(result.written.size).toBe(WRITERS * PER_WRITER + 1)
    expect({ missed: result.missed, duplicates: result.duplicates }).toEqual({ missed: 0, duplicates: 0 })
  }, 180_000)
})
