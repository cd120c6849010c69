/**
 * The recorder's write (src/Webhooks/Recorder.ts): a batch of outcomes, given in the order attempted. Only
 * claims still held are written, attempts are stored field by field, each webhook follows the latest decisive
 * outcome of the batch ("active" changes only failed webhooks), and a batch is written whole or not at all. On
 * the engine `DATABASE_URL` selects, for both implementations: the fast one (SQLite: fixed statements on the
 * transaction's connection; PostgreSQL: one statement) and its idiomatic twin (`sql` templates in a transaction);
 * each with tracing off (the server's default) and on (the fast one's statements then take the `sql` path).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Cause, ConfigProvider, Effect } from "effect"
import { DeliveryId } from "../../src/Domain/Ids.ts"
import type { AttemptRecord } from "../../src/Domain/Webhook.ts"
import { Users } from "../../src/Users/Users.ts"
import { RECORD_BATCH } from "../../src/Webhooks/Delivery/Worker.ts"
import { DeliveryRecorder, type Recording } from "../../src/Webhooks/Recorder.ts"
import { FastRecorderLive } from "../../src/Webhooks/RecorderFast.ts"
import { IdiomaticRecorderLive } from "../../src/Webhooks/RecorderIdiomatic.ts"
import { DeliveryRecorderLive } from "../../src/Webhooks/RecorderLive.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { webhookRow } from "../support/helpers.ts"
import { usingPostgres } from "../support/server.ts"
import { onSelectedEngine, type ServiceHarness } from "../support/services.ts"

let harness: ServiceHarness<Users>
const run = <A, E>(effect: Effect.Effect<A, E, Users | SqlClient.SqlClient>) => harness.run(effect)
const T0 = "2026-01-01T00:00:00.000Z"
const T1 = "2026-01-01T00:00:05.000Z"
const NOW = "2026-01-01T00:02:00.000Z"
const EVENT = "evt_00000000000000000000000001"

const sqlRun = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  run(Effect.flatMap(SqlClient.SqlClient, f))

let userId = ""
beforeAll(async () => {
  harness = await onSelectedEngine(Users.Default)
  userId = (await run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("rec"), name: "Rec" })))).id
  await sqlRun(
    (sql) =>
      sql`INSERT INTO events ${sql.insert({ id: EVENT, type: "project.created", payload: "{}", trace_context: null, created_at: T0 })}`
  )
}, 60_000)
afterAll(() => harness.dispose(), 20_000)

/**
 * Ids of one test's rows: `scope` (one character) keeps the tests, the implementations and the two tracing modes
 * apart in the one database.
 */
const ids = (scope: string) => ({
  hook: (n: number) => `whk_0${scope}${String(n).padStart(24, "0")}`,
  dlv: (n: number) => DeliveryId.make(`dlv_0${scope}${String(n).padStart(24, "0")}`)
})

/** Webhooks (`failed` ones with a `failed_at`), and a pending delivery claimed with `token-<n>` for each `[n, hook]`. */
const seed = (
  scope: string,
  hooks: ReadonlyArray<readonly [number, "active" | "failed"]>,
  deliveries: ReadonlyArray<readonly [number, number]>
) => {
  const { hook, dlv } = ids(scope)
  return sqlRun((sql) =>
    Effect.gen(function* () {
      yield* sql`INSERT INTO webhooks ${sql.insert(
        hooks.map(([n, status]) =>
          webhookRow({
            id: hook(n),
            userId,
            url: `https://hooks.example.com/${hook(n)}`,
            secret: `whsec_${n}`,
            at: T0,
            ...(status === "failed" ? { failedAt: T0 } : {})
          })
        )
      )}`
      yield* sql`INSERT INTO deliveries ${sql.insert(
        deliveries.map(([n, h]) => ({
          id: dlv(n),
          webhook_id: hook(h),
          event_id: EVENT,
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
}

/** An outcome of attempt 1 of delivery `n` (to webhook `h`), attempted `second` seconds past T0. */
const outcome = (
  scope: string,
  n: number,
  h: number,
  kind: "delivered" | "retry" | "gave up",
  options: { readonly second?: number; readonly token?: string } = {}
): Recording => {
  const { hook, dlv } = ids(scope)
  const at = `2026-01-01T00:00:${String(options.second ?? 5).padStart(2, "0")}.000Z`
  const succeeded = kind === "delivered"
  const attempt: AttemptRecord = {
    delivery_id: dlv(n),
    number: 1,
    attempted_at: at,
    duration_ms: 10 + n,
    status_code: succeeded ? 204 : 503,
    error: succeeded ? null : "HTTP 503",
    response_body: succeeded ? null : `busy ${n}`,
    request_headers: JSON.stringify({ "webhook-id": `evt_${n}` }),
    response_headers: null,
    outcome: succeeded ? "succeeded" : "failed",
    trigger: "schedule"
  }
  return {
    settlement: {
      id: dlv(n),
      claim_token: options.token ?? `token-${n}`,
      status: kind === "delivered" ? "delivered" : kind === "retry" ? "pending" : "failed",
      attempt_count: 1,
      next_attempt_at: kind === "retry" ? "2026-01-01T00:01:05.000Z" : null,
      last_attempt_at: at,
      trigger: "schedule"
    },
    attempt,
    webhook_id: hook(h),
    decisive: kind !== "retry"
  }
}

const deliveriesOf = (scope: string) =>
  sqlRun(
    (sql) =>
      sql`SELECT id, status, attempt_count, next_attempt_at, last_attempt_at, claim_token, claimed_until
        FROM deliveries WHERE id LIKE ${`dlv_0${scope}%`} ORDER BY id`
  )
const attemptsOf = (scope: string) =>
  sqlRun(
    (sql) =>
      sql`SELECT delivery_id, number, attempted_at, duration_ms, status_code, error, response_body, outcome,
        "trigger", request_headers, response_headers
        FROM delivery_attempts WHERE delivery_id LIKE ${`dlv_0${scope}%`} ORDER BY delivery_id`
  )
const webhooksOf = (scope: string) =>
  sqlRun(
    (sql) =>
      sql`SELECT id, status, failed_at, updated_at FROM webhooks
        WHERE id LIKE ${`whk_0${scope}%`} ORDER BY id`
  )

// The fast recorder is PostgreSQL's (src/Webhooks/RecorderLive.ts); on SQLite it refuses to start (tested below).
describe.each([
  ...(usingPostgres()
    ? ([
        ["fast", "with tracing off (the server's default)", FastRecorderLive, false, "12345"],
        ["fast", "with tracing on (the `sql` path, with spans)", FastRecorderLive, true, "6789a"]
      ] as const)
    : []),
  ["idiomatic", "with tracing off (the server's default)", IdiomaticRecorderLive, false, "bcdef"],
  ["idiomatic", "with tracing on", IdiomaticRecorderLive, true, "ghjkm"]
] as const)("the %s recorder's write %s", (kind, _, recorder, traced, scopes) => {
  /** The recorder's `record`, run as the worker runs it. */
  const recording = (recordings: ReadonlyArray<Recording>) =>
    Effect.flatMap(DeliveryRecorder, (it) =>
      it.kind === kind ? it.record(recordings, NOW) : Effect.die(new Error(`the ${it.kind} recorder, not ${kind}`))
    ).pipe(Effect.provide(recorder), Effect.withTracerEnabled(traced))
  const record = (recordings: ReadonlyArray<Recording>) =>
    run(recording(recordings)).then(({ kept, failedBy }) => ({
      kept: [...kept].sort(),
      failedBy: [...failedBy].sort()
    }))

  test("writes only the claims still held: the delivery's next state and its attempt, field by field", async () => {
    const scope = scopes[0]!
    const { dlv } = ids(scope)
    await seed(
      scope,
      [[1, "active"]],
      [
        [1, 1],
        [2, 1],
        [3, 1]
      ]
    )
    const held = outcome(scope, 1, 1, "delivered")
    const lapsed = outcome(scope, 2, 1, "delivered", { token: "someone-else" })
    const retry = outcome(scope, 3, 1, "retry", { second: 6 })
    expect(await record([held, lapsed, retry])).toEqual({ kept: [dlv(1), dlv(3)], failedBy: [] })
    expect(await deliveriesOf(scope)).toEqual([
      {
        id: dlv(1),
        status: "delivered",
        attempt_count: 1,
        next_attempt_at: null,
        last_attempt_at: T1,
        claim_token: null,
        claimed_until: null
      },
      // Claimed by another token: left as it was, for its holder to record, with no attempt of ours.
      {
        id: dlv(2),
        status: "pending",
        attempt_count: 0,
        next_attempt_at: T0,
        last_attempt_at: null,
        claim_token: "token-2",
        claimed_until: T1
      },
      {
        id: dlv(3),
        status: "pending",
        attempt_count: 1,
        next_attempt_at: "2026-01-01T00:01:05.000Z",
        last_attempt_at: "2026-01-01T00:00:06.000Z",
        claim_token: null,
        claimed_until: null
      }
    ])
    expect(await attemptsOf(scope)).toEqual([held.attempt, retry.attempt])
  })

  test("each webhook follows the latest decisive outcome it holds; `failedBy` names only webhooks it turned failed", async () => {
    const scope = scopes[1]!
    const { dlv, hook } = ids(scope)
    await seed(
      scope,
      [
        [1, "failed"],
        [2, "active"],
        [3, "failed"],
        [4, "active"],
        [5, "failed"]
      ],
      [
        [1, 1],
        [2, 1],
        [3, 2],
        [4, 2],
        [5, 3],
        [6, 4],
        [7, 5]
      ]
    )
    // Given out of order on purpose where it does not matter, in order where it does (the caller sorts by time).
    const batch = [
      outcome(scope, 1, 1, "gave up", { second: 1 }), // webhook 1: a last failure, then a success: active again
      outcome(scope, 2, 1, "delivered", { second: 2 }),
      outcome(scope, 3, 2, "delivered", { second: 1 }), // webhook 2: a success, then a last failure: failed
      outcome(scope, 4, 2, "gave up", { second: 3 }),
      outcome(scope, 5, 3, "gave up", { second: 4 }), // webhook 3: failed already: stays failed, not "turned"
      outcome(scope, 6, 4, "retry", { second: 5 }), // webhook 4: only a retry, which decides nothing
      outcome(scope, 7, 5, "delivered", { second: 6, token: "lapsed" }) // webhook 5: a success not ours to write
    ]
    expect(await record(batch)).toEqual({
      kept: [1, 2, 3, 4, 5, 6].map(dlv),
      failedBy: [dlv(4)]
    })
    expect(await webhooksOf(scope)).toEqual([
      { id: hook(1), status: "active", failed_at: null, updated_at: NOW },
      { id: hook(2), status: "failed", failed_at: NOW, updated_at: NOW },
      { id: hook(3), status: "failed", failed_at: NOW, updated_at: NOW },
      { id: hook(4), status: "active", failed_at: null, updated_at: T0 },
      { id: hook(5), status: "failed", failed_at: T0, updated_at: T0 }
    ])
  })

  test("a success leaves an active webhook untouched", async () => {
    const scope = scopes[2]!
    const { hook } = ids(scope)
    await seed(scope, [[1, "active"]], [[1, 1]])
    await record([outcome(scope, 1, 1, "delivered")])
    expect(await webhooksOf(scope)).toEqual([{ id: hook(1), status: "active", failed_at: null, updated_at: T0 }])
  })

  test("a batch is written whole or not at all", async () => {
    const scope = scopes[3]!
    const { dlv, hook } = ids(scope)
    await seed(
      scope,
      [[1, "active"]],
      [
        [1, 1],
        [2, 1]
      ]
    )
    // Attempt 1 of delivery 2 is on record already: the batch's attempt collides with it (the primary key).
    await sqlRun(
      (sql) =>
        sql`INSERT INTO delivery_attempts ${sql.insert({ ...outcome(scope, 2, 1, "retry").attempt, response_body: "before" })}`
    )
    const failed = await run(
      Effect.flip(recording([outcome(scope, 1, 1, "gave up"), outcome(scope, 2, 1, "delivered")]))
    )
    expect(failed._tag).toBe("SqlError")
    expect((await deliveriesOf(scope)).map((row) => [row.id, row.status, row.claim_token])).toEqual([
      [dlv(1), "pending", "token-1"],
      [dlv(2), "pending", "token-2"]
    ])
    expect((await attemptsOf(scope)).map((row) => row.response_body)).toEqual(["before"])
    expect(await webhooksOf(scope)).toEqual([{ id: hook(1), status: "active", failed_at: null, updated_at: T0 }])
  })

  test("a batch as large as the worker writes at once: each held claim settled with its attempt, each webhook decided", async () => {
    const scope = scopes[4]!
    const { dlv, hook } = ids(scope)
    const hooks = Array.from({ length: 10 }, (_, i) => [i + 1, i % 2 === 0 ? "active" : "failed"] as const)
    const deliveries = Array.from({ length: RECORD_BATCH }, (_, i) => [i + 1, (i % 10) + 1] as const)
    await seed(scope, hooks, deliveries)
    const kinds = ["retry", "delivered", "gave up"] as const
    const batch = deliveries.map(([n, h]) =>
      outcome(scope, n, h, kinds[n % 3]!, { second: Math.floor(n / 10), ...(n % 7 === 0 ? { token: "lapsed" } : {}) })
    )
    const held = batch.filter((r) => r.settlement.claim_token !== "lapsed")
    // Each webhook's last decisive outcome among the held ones (the batch is in the order attempted).
    const last = new Map<string, Recording>()
    for (const r of held) if (r.decisive) last.set(r.webhook_id, r)
    const wasActive = new Set(hooks.filter(([, status]) => status === "active").map(([h]) => hook(h)))
    const turnedFailed = [...last.values()].filter((r) => r.attempt.outcome === "failed" && wasActive.has(r.webhook_id))

    expect(await record(batch)).toEqual({
      kept: held.map((r) => r.settlement.id).sort(),
      failedBy: turnedFailed.map((r) => r.settlement.id).sort()
    })
    expect(turnedFailed.length).toBeGreaterThan(0)
    const rows = await deliveriesOf(scope)
    expect(rows).toHaveLength(RECORD_BATCH)
    for (const [i, row] of rows.entries()) {
      const r = batch[i]!
      expect(row.id).toBe(dlv(i + 1))
      if (r.settlement.claim_token === "lapsed") {
        expect(row).toMatchObject({ status: "pending", attempt_count: 0, claim_token: `token-${i + 1}` })
      } else {
        const { claim_token: _, id: __, trigger: ___, ...settled } = r.settlement
        expect(row).toEqual({ id: dlv(i + 1), ...settled, claim_token: null, claimed_until: null })
      }
    }
    expect(await attemptsOf(scope)).toEqual(held.map((r) => r.attempt))
    expect(await webhooksOf(scope)).toEqual(
      hooks.map(([h, before]) => {
        const decided = last.get(hook(h))
        if (decided === undefined) throw new Error(`webhook ${h} has no decisive outcome in the batch`)
        if (decided.attempt.outcome === "failed")
          return { id: hook(h), status: "failed", failed_at: NOW, updated_at: NOW }
        return before === "active"
          ? { id: hook(h), status: "active", failed_at: null, updated_at: T0 }
          : { id: hook(h), status: "active", failed_at: null, updated_at: NOW }
      })
    )
  })
})

describe("the recorder the worker runs (src/Webhooks/RecorderLive.ts)", () => {
  const kindWith = (fastPaths: string) =>
    run(
      Effect.map(DeliveryRecorder, (it) => it.kind).pipe(
        Effect.provide(DeliveryRecorderLive),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["FAST_PATHS", fastPaths]])))
      )
    )

  test("is the fast one on PostgreSQL when FAST_PATHS names it, and the twin on SQLite whatever FAST_PATHS says", async () => {
    expect(await kindWith("all")).toBe(usingPostgres() ? "fast" : "idiomatic")
    expect(await kindWith("none")).toBe("idiomatic")
  })

  test.if(!usingPostgres())("the fast recorder refuses SQLite: it cannot be run there by mistake", async () => {
    const exit = await run(Effect.exit(Effect.provide(DeliveryRecorder, FastRecorderLive)))
    expect(exit._tag).toBe("Failure")
    expect(String(exit._tag === "Failure" ? Cause.pretty(exit.cause) : "")).toContain("PostgreSQL's")
  })
})
