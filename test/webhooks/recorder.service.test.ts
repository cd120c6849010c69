/**
 * The recorder's statements (src/Webhooks/Repo.ts: `settle`, `insertAttempts`, `markWebhooks`), which run as fixed
 * text on the transaction's connection: only claims still held are written, attempts are stored field by field,
 * and "active" changes only failed webhooks. In a transaction (the recorder's way) and outside one (the ordinary
 * `sql` path the same text takes with tracing on).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { DeliveryId } from "../../src/Domain/Ids.ts"
import { Users } from "../../src/Users/Users.ts"
import { WebhooksRepo } from "../../src/Webhooks/Repo.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { webhookRow } from "../support/helpers.ts"
import { inMemory } from "../support/services.ts"

const harness = inMemory(Layer.mergeAll(WebhooksRepo.Default, Users.Default))
const { run } = harness
const T0 = "2026-01-01T00:00:00.000Z"
const T1 = "2026-01-01T00:00:05.000Z"

const sqlRun = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  run(Effect.flatMap(SqlClient.SqlClient, f))

interface DeliveryRow {
  readonly id: string
  readonly status: string
  readonly attempt_count: number
  readonly next_attempt_at: string | null
  readonly last_attempt_at: string | null
  readonly claim_token: string | null
  readonly claimed_until: string | null
}
const delivery = (id: string) =>
  sqlRun((sql) =>
    Effect.map(
      sql<DeliveryRow>`SELECT id, status, attempt_count, next_attempt_at, last_attempt_at, claim_token, claimed_until
        FROM deliveries WHERE id = ${id}`,
      (rows) => rows[0]
    )
  )

const hook = (n: number) => `whk_000000000000000000000000${n.toString().padStart(2, "0")}`
const dlv = (n: number) => DeliveryId.make(`dlv_000000000000000000000000${n.toString().padStart(2, "0")}`)

beforeAll(async () => {
  const user = await run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("rec"), name: "Rec" })))
  await sqlRun((sql) =>
    Effect.gen(function* () {
      yield* sql`INSERT INTO webhooks ${sql.insert(
        [1, 2, 3].map((n) =>
          webhookRow({
            id: hook(n),
            userId: user.id,
            url: `https://hooks.example.com/${n}`,
            secret: `whsec_${n}`,
            at: T0,
            ...(n === 1 ? { failedAt: T0 } : {})
          })
        )
      )}`
      yield* sql`INSERT INTO events ${sql.insert({
        id: "evt_00000000000000000000000001",
        type: "project.created",
        payload: "{}",
        trace_context: null,
        created_at: T0
      })}`
      yield* sql`INSERT INTO deliveries ${sql.insert(
        [1, 2, 3, 4, 5].map((n) => ({
          id: dlv(n),
          webhook_id: hook(1),
          event_id: "evt_00000000000000000000000001",
          event_type: "project.created",
          status: "pending",
          attempt_count: 0,
          manual: 0,
          next_attempt_at: T0,
          last_attempt_at: null,
          claimed_until: T1,
          claim_token: `token-${n}`,
          created_at: T0
        }))
      )}`
    })
  )
})
afterAll(() => harness.dispose())

const settlement = (n: number, token: string, status: "pending" | "delivered" | "failed", next: string | null) => ({
  id: dlv(n),
  claim_token: token,
  status,
  attempt_count: 1,
  next_attempt_at: next,
  last_attempt_at: T1
})

describe.each([
  ["in a transaction with tracing off (the recorder's way: straight to the connection)", true],
  ["outside one (the ordinary `sql` path)", false]
] as const)("the recorder's statements %s", (_, inTransaction) => {
  const first = inTransaction ? 1 : 4
  const within = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    inTransaction
      ? // With tracing off, as the server runs at its defaults: then the statements go straight to the connection.
        Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(effect)).pipe(Effect.withTracerEnabled(false))
      : effect

  test("settle writes only the claims still held, and answers their ids", async () => {
    const held = settlement(first, `token-${first}`, "delivered", null)
    const lapsed = settlement(first + 1, "someone-else", "delivered", null)
    const written = await run(
      Effect.flatMap(WebhooksRepo, (repo) => within(repo.settle(inTransaction ? [held, lapsed] : [held])))
    )
    expect([...written]).toEqual([dlv(first)])
    expect(await delivery(dlv(first))).toEqual({
      id: dlv(first),
      status: "delivered",
      attempt_count: 1,
      next_attempt_at: null,
      last_attempt_at: T1,
      claim_token: null,
      claimed_until: null
    })
    if (inTransaction) {
      // Claimed by another token: left as it was, for its holder to record.
      expect(await delivery(dlv(first + 1))).toMatchObject({
        status: "pending",
        attempt_count: 0,
        claim_token: "token-2"
      })
    }
  })

  test("a retry keeps the delivery pending with its next attempt time; the attempts are stored field by field", async () => {
    const n = first + (inTransaction ? 2 : 1)
    const refused = {
      delivery_id: dlv(n),
      number: 1,
      attempted_at: T1,
      duration_ms: 12,
      status_code: 503,
      error: "HTTP 503",
      response_body: "busy",
      outcome: "failed" as const
    }
    const succeeded = {
      delivery_id: dlv(first),
      number: 1,
      attempted_at: T1,
      duration_ms: 3,
      status_code: null,
      error: null,
      response_body: null,
      outcome: "succeeded" as const
    }
    const written = await run(
      Effect.flatMap(WebhooksRepo, (repo) =>
        within(
          Effect.zipLeft(
            repo.settle([settlement(n, `token-${n}`, "pending", "2026-01-01T00:01:05.000Z")]),
            repo.insertAttempts([refused, succeeded])
          )
        )
      )
    )
    expect([...written]).toEqual([dlv(n)])
    expect(await delivery(dlv(n))).toMatchObject({
      status: "pending",
      attempt_count: 1,
      next_attempt_at: "2026-01-01T00:01:05.000Z",
      claim_token: null
    })
    const attempts = await sqlRun(
      (sql) =>
        sql`SELECT delivery_id, number, attempted_at, duration_ms, status_code, error, response_body, outcome
        FROM delivery_attempts WHERE delivery_id IN (${dlv(n)}, ${dlv(first)}) ORDER BY delivery_id`
    )
    expect(attempts).toEqual([succeeded, refused])
  })

  test('"active" turns failed webhooks active and leaves active ones untouched', async () => {
    const now = inTransaction ? "2026-01-01T00:02:00.000Z" : "2026-01-01T00:03:00.000Z"
    if (!inTransaction) {
      await sqlRun((sql) => sql`UPDATE webhooks SET status = 'failed', failed_at = ${T1} WHERE id = ${hook(1)}`)
    }
    await run(Effect.flatMap(WebhooksRepo, (repo) => within(repo.markWebhooks([hook(1), hook(2)], "active", now))))
    const hooks = await sqlRun(
      (sql) =>
        sql`SELECT id, status, failed_at, updated_at FROM webhooks WHERE id IN (${hook(1)}, ${hook(2)}) ORDER BY id`
    )
    expect(hooks).toEqual([
      { id: hook(1), status: "active", failed_at: null, updated_at: now },
      { id: hook(2), status: "active", failed_at: null, updated_at: T0 }
    ])
  })
})
