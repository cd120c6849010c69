/**
 * Retention from the outside: `bun run cli prune` runs one sweep and prints its counts, and a server sweeps by
 * itself (its first sweep at start-up). The rules themselves are tested in test/retention/.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { fixtures as fixturesOn, storedSecret } from "../support/fixtures.ts"
import { eventually, stopWithin, webhookRow } from "../support/helpers.ts"
import { freshDatabaseUrl, runCli, type Server, startServer } from "../support/server.ts"

const OLD = new Date(Date.now() - 40 * 86_400_000).toISOString()
const servers: Array<Server> = []
afterAll(async () => {
  await Promise.all(servers.map((server) => stopWithin(server)))
}, 20_000)

/** On a migrated database: a webhook with `n` old events, each delivered long ago after two attempts, and an OAuth code long expired. */
const seedOld = async (databaseUrl: string, tag: string, n: number) => {
  const fixtures = fixturesOn(databaseUrl)
  const user = await fixtures.account()
  // Stored as a server stores a secret (encrypted), as the start-up check expects.
  const secret = await storedSecret(databaseUrl, "whsec_x", `whk_${tag}`)
  await fixtures.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.gen(function* () {
        const hook = `whk_${tag}`
        yield* sql`INSERT INTO webhooks ${sql.insert(webhookRow({ id: hook, userId: user.id, url: "https://hooks.example.com/x", secret, at: OLD }))}`
        for (let i = 0; i < n; i++) {
          yield* sql`INSERT INTO events ${sql.insert({ id: `evt_${tag}_${i}`, type: "project.created", payload: "{}", trace_context: null, created_at: OLD })}`
          yield* sql`INSERT INTO deliveries ${sql.insert({ id: `dlv_${tag}_${i}`, webhook_id: hook, event_id: `evt_${tag}_${i}`, event_type: "project.created", status: "delivered", attempt_count: 2, manual: 0, next_attempt_at: null, last_attempt_at: OLD, claimed_until: null, claim_token: null, created_at: OLD })}`
          for (const number of [1, 2]) {
            yield* sql`INSERT INTO delivery_attempts ${sql.insert({ delivery_id: `dlv_${tag}_${i}`, number, attempted_at: OLD, duration_ms: 3, status_code: number === 2 ? 200 : 500, error: null, response_body: null, outcome: number === 2 ? "succeeded" : "failed" })}`
          }
        }
        yield* sql`INSERT INTO oauth_clients ${sql.insert({ id: `cli_${tag}`, name: "Old", secret_hash: null, redirect_uris: "[]", is_public: 1, created_at: OLD })}`
        yield* sql`INSERT INTO oauth_codes ${sql.insert({ id: `ocd_${tag}`, code_hash: `hash_${tag}`, client_id: `cli_${tag}`, user_id: user.id, redirect_uri: "http://127.0.0.1:9/cb", scope: "read", code_challenge: null, created_at: OLD, expires_at: OLD, used_at: null })}`
      })
    )
  )
  const count = (table: string) =>
    fixtures.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.map(sql<{ n: number }>`SELECT CAST(count(*) AS INTEGER) AS n FROM ${sql(table)}`, (rows) =>
          Number(rows[0]?.n)
        )
      )
    )
  return { fixtures, count }
}

describe("bun run cli prune", () => {
  test("runs one sweep and prints what it deleted", async () => {
    const databaseUrl = await freshDatabaseUrl()
    expect((await runCli(databaseUrl, ["migrate"])).code).toBe(0)
    const { fixtures } = await seedOld(databaseUrl, "cli", 4)
    await fixtures.dispose()

    const first = await runCli(databaseUrl, ["prune"])
    expect(first.code).toBe(0)
    expect(first.stderr).toBe("")
    expect(JSON.parse(first.stdout)).toEqual({
      data: { deliveries: 4, events: 4, idempotency_keys: 0, oauth: 1, invitations_expired: 0, audit: 0 }
    })
    const second = await runCli(databaseUrl, ["prune"])
    expect(JSON.parse(second.stdout)).toEqual({
      data: { deliveries: 0, events: 0, idempotency_keys: 0, oauth: 0, invitations_expired: 0, audit: 0 }
    })
  }, 60_000)
})

describe("a server", () => {
  test("sweeps by itself, the first time at start-up", async () => {
    const databaseUrl = await freshDatabaseUrl()
    expect((await runCli(databaseUrl, ["migrate"])).code).toBe(0)
    const { fixtures, count } = await seedOld(databaseUrl, "srv", 3)
    expect(await count("deliveries")).toBe(3)
    servers.push(await startServer({ databaseUrl }))
    await eventually(
      async () =>
        (await count("deliveries")) === 0 && (await count("events")) === 0 && (await count("oauth_codes")) === 0
          ? true
          : undefined,
      { timeoutMs: 20_000, intervalMs: 200, what: "the server's sweep to delete the old rows" }
    )
    expect(await count("delivery_attempts")).toBe(0)
    await fixtures.dispose()
  }, 60_000)
})
