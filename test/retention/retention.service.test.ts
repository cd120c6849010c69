/**
 * The retention sweep (src/Retention/) on the engine `DATABASE_URL` selects: what goes (ended deliveries past
 * `DELIVERY_RETENTION` with their attempts, old events with nothing pending, expired idempotency keys, OAuth rows a
 * day past expiry), lapsed pending invitations marked expired (with the team's totals right either way), what stays
 * (pending deliveries and their events, recent rows), list totals that stay exact (the counters of migration 0006
 * against the rows), statements that never delete more than the batch size, and (on PostgreSQL) no sweep while another
 * process holds the retention lock.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import { invitationStatuses } from "../../src/Domain/Invitation.ts"
import { Retention, type SweepReport } from "../../src/Retention/Retention.ts"
import { InvitationsRepo } from "../../src/Teams/Repo.ts"
import { Users } from "../../src/Users/Users.ts"
import { sqlOn } from "../support/databases.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { webhookRow } from "../support/helpers.ts"
import { freshDatabaseUrl, usingPostgres } from "../support/server.ts"
import { onDatabase, type ServiceHarness } from "../support/services.ts"

let harness: ServiceHarness<Users>
let databaseUrl = ""
/** The retention lock's number (src/Sql/Locks.ts). */
const RETENTION_LOCK = 4_242_003
const DAY = 86_400_000
const NOW = Date.now()
const ago = (ms: number) => new Date(NOW - ms).toISOString()
const OLD = ago(40 * DAY)
const RECENT = ago(60_000)

const sqlRun = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  harness.run(Effect.flatMap(SqlClient.SqlClient, f))

/** One sweep with these settings (the rest at their defaults). */
const sweep = (settings: Record<string, string>): Promise<SweepReport> =>
  harness.run(
    Effect.flatMap(Retention, (retention) => retention.sweep({ wait: true })).pipe(
      Effect.map(Option.getOrThrow),
      Effect.provide(
        Retention.Default.pipe(
          Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(settings)))))
        )
      )
    )
  )

let userId = ""
const hooks = ["whk_ret_a", "whk_ret_b"]

interface Seed {
  readonly event: string
  readonly eventAt: string
  readonly deliveries: ReadonlyArray<{
    readonly id: string
    readonly hook: string
    readonly status: "pending" | "delivered" | "failed"
    readonly endedAt: string | null
    readonly attempts: number
  }>
}

const seed = (rows: ReadonlyArray<Seed>) =>
  sqlRun((sql) =>
    Effect.gen(function* () {
      for (const row of rows) {
        yield* sql`INSERT INTO events ${sql.insert({ id: row.event, type: "project.created", payload: "{}", trace_context: null, created_at: row.eventAt })}`
        for (const d of row.deliveries) {
          yield* sql`INSERT INTO deliveries ${sql.insert({
            id: d.id,
            webhook_id: d.hook,
            event_id: row.event,
            event_type: "project.created",
            status: d.status,
            attempt_count: d.attempts,
            manual: 0,
            next_attempt_at: d.status === "pending" ? row.eventAt : null,
            last_attempt_at: d.endedAt,
            claimed_until: null,
            claim_token: null,
            created_at: row.eventAt
          })}`
          for (let number = 1; number <= d.attempts; number++) {
            yield* sql`INSERT INTO delivery_attempts ${sql.insert({
              delivery_id: d.id,
              number,
              attempted_at: d.endedAt ?? row.eventAt,
              duration_ms: 5,
              status_code: 500,
              error: "HTTP 500",
              response_body: null,
              outcome: "failed"
            })}`
          }
        }
      }
    })
  )

const idsOf = (table: string, column = "id") =>
  sqlRun((sql) => sql<{ id: string }>`SELECT ${sql(column)} AS id FROM ${sql(table)} ORDER BY 1`).then((rows) =>
    rows.map((row) => row.id)
  )

/** Each webhook's delivery counts by status from the counters (what list totals read) and from the rows. */
const totals = () =>
  sqlRun((sql) =>
    Effect.all({
      counters: sql<{ webhook_id: string; status: string; n: number }>`
        SELECT webhook_id, status, CAST(sum(n) AS INTEGER) AS n FROM counts_deliveries
        GROUP BY webhook_id, status HAVING sum(n) <> 0 ORDER BY 1, 2`,
      rows: sql<{ webhook_id: string; status: string; n: number }>`
        SELECT webhook_id, status, CAST(count(*) AS INTEGER) AS n FROM deliveries GROUP BY webhook_id, status ORDER BY 1, 2`
    })
  )

beforeAll(async () => {
  databaseUrl = await freshDatabaseUrl()
  harness = onDatabase(Users.Default, databaseUrl)
  userId = (
    await harness.run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("ret"), name: "Ret" })))
  ).id
  await sqlRun(
    (sql) =>
      sql`INSERT INTO webhooks ${sql.insert(
        hooks.map((id) =>
          webhookRow({ id, userId, url: `https://hooks.example.com/${id}`, secret: "whsec_x", at: OLD })
        )
      )}`
  )
}, 60_000)
afterAll(() => harness.dispose(), 20_000)

describe("a sweep", () => {
  test("deletes ended deliveries with their attempts and old events; pending deliveries and their events stay; totals stay exact; no statement deletes more than the batch", async () => {
    const ended = (n: number, hook: string, status: "delivered" | "failed", attempts: number) => ({
      id: `dlv_ret_old_${n}`,
      hook,
      status,
      endedAt: OLD,
      attempts
    })
    await seed([
      // Old events whose deliveries all ended long ago: everything goes.
      ...[1, 2, 3, 4, 5].map((n) => ({
        event: `evt_ret_old_${n}`,
        eventAt: OLD,
        deliveries: [ended(n, hooks[0]!, "delivered", 2), ended(n + 10, hooks[1]!, "failed", 5)]
      })),
      // An old event with a pending delivery (and an ended one, past its retention): the pending one and the event stay.
      {
        event: "evt_ret_pending",
        eventAt: OLD,
        deliveries: [
          { id: "dlv_ret_pending", hook: hooks[0]!, status: "pending", endedAt: null, attempts: 3 },
          ended(99, hooks[1]!, "delivered", 1)
        ]
      },
      // An old event whose delivery ended recently (a late manual retry): the event is past EVENT_RETENTION with
      // nothing pending, so it goes, and its delivery with it.
      {
        event: "evt_ret_late",
        eventAt: OLD,
        deliveries: [{ id: "dlv_ret_late", hook: hooks[0]!, status: "delivered", endedAt: RECENT, attempts: 2 }]
      },
      // Recent: stays.
      ...[1, 2].map((n) => ({
        event: `evt_ret_new_${n}`,
        eventAt: RECENT,
        deliveries: [
          { id: `dlv_ret_new_${n}`, hook: hooks[0]!, status: "delivered" as const, endedAt: RECENT, attempts: 1 },
          { id: `dlv_ret_newp_${n}`, hook: hooks[1]!, status: "pending" as const, endedAt: null, attempts: 0 }
        ]
      }))
    ])
    const before = await totals()
    expect(before.counters).toEqual(before.rows)

    const report = await sweep({ RETENTION_BATCH_SIZE: "3" })
    // 10 ended (5 events × 2) + 1 ended beside the pending one + the late one.
    expect(report.counts).toEqual({
      deliveries: 12,
      events: 6,
      idempotency_keys: 0,
      oauth: 0,
      invitations_expired: 0,
      audit: 0
    })

    expect(await idsOf("events")).toEqual(["evt_ret_new_1", "evt_ret_new_2", "evt_ret_pending"])
    expect(await idsOf("deliveries")).toEqual([
      "dlv_ret_new_1",
      "dlv_ret_new_2",
      "dlv_ret_newp_1",
      "dlv_ret_newp_2",
      "dlv_ret_pending"
    ])
    expect(await idsOf("delivery_attempts", "delivery_id")).toEqual([
      "dlv_ret_new_1",
      "dlv_ret_new_2",
      "dlv_ret_pending",
      "dlv_ret_pending",
      "dlv_ret_pending"
    ])
    const after = await totals()
    expect(after.counters).toEqual(after.rows)
    expect(after.rows).toEqual([
      { webhook_id: hooks[0]!, status: "delivered", n: 2 },
      { webhook_id: hooks[0]!, status: "pending", n: 1 },
      { webhook_id: hooks[1]!, status: "pending", n: 2 }
    ])

    // Bounded: no statement deleted more than 3 rows, and what they deleted adds up to the rows that went.
    expect(report.statements.length).toBeGreaterThan(0)
    for (const statement of report.statements) expect(statement.rows).toBeLessThanOrEqual(3)
    const sum = (table: string) =>
      report.statements.filter((s) => s.table === table).reduce((total, s) => total + s.rows, 0)
    expect(sum("deliveries")).toBe(12)
    expect(sum("events")).toBe(6)
    // 5 × (2 + 5) + 1 + 2 attempts.
    expect(sum("delivery_attempts")).toBe(38)
    expect(report.statements.filter((s) => s.table === "delivery_attempts").length).toBeGreaterThanOrEqual(13)

    // Nothing is left for a second sweep.
    expect((await sweep({ RETENTION_BATCH_SIZE: "3" })).counts).toEqual({
      deliveries: 0,
      events: 0,
      idempotency_keys: 0,
      oauth: 0,
      invitations_expired: 0,
      audit: 0
    })
  }, 60_000)

  test("with short retention settings, recent ended deliveries go too; pending ones and their events stay", async () => {
    const report = await sweep({ DELIVERY_RETENTION: "1ms", EVENT_RETENTION: "1ms" })
    expect(report.counts.deliveries).toBe(2)
    expect(report.counts.events).toBe(0)
    expect(await idsOf("deliveries")).toEqual(["dlv_ret_newp_1", "dlv_ret_newp_2", "dlv_ret_pending"])
    expect(await idsOf("events")).toEqual(["evt_ret_new_1", "evt_ret_new_2", "evt_ret_pending"])
    const after = await totals()
    expect(after.counters).toEqual(after.rows)
  }, 30_000)

  test("idempotency keys go once expired; OAuth authorization requests, codes and tokens a day after they expire, not before", async () => {
    await sqlRun((sql) =>
      Effect.gen(function* () {
        for (const [key, expires] of [
          ["idem-gone-1", ago(60_000)],
          ["idem-gone-2", ago(DAY)],
          ["idem-kept", ago(-60_000)]
        ] as const) {
          yield* sql`INSERT INTO idempotency_keys ${sql.insert({ user_id: userId, idempotency_key: key, request_hash: "h", status: 201, content_type: "application/json", body: "{}", created_at: OLD, expires_at: expires })}`
        }
        yield* sql`INSERT INTO oauth_clients ${sql.insert({ id: "cli_ret", name: "Ret", secret_hash: null, redirect_uris: "[]", is_public: 1, created_at: OLD })}`
        for (const [suffix, expires] of [
          ["gone", ago(DAY + 60_000)],
          ["kept", ago(DAY - 60_000)]
        ] as const) {
          yield* sql`INSERT INTO oauth_authorizations ${sql.insert({ id: `oar_${suffix}`, client_id: "cli_ret", redirect_uri: "http://127.0.0.1:9/cb", scope: "read", state: null, code_challenge: null, user_id: userId, stage: "consent", csrf_hash: "x", created_at: OLD, expires_at: expires })}`
          yield* sql`INSERT INTO oauth_codes ${sql.insert({ id: `ocd_${suffix}`, code_hash: `hash_${suffix}`, client_id: "cli_ret", user_id: userId, redirect_uri: "http://127.0.0.1:9/cb", scope: "read", code_challenge: null, created_at: OLD, expires_at: expires, used_at: null })}`
          for (const kind of ["access", "refresh"]) {
            yield* sql`INSERT INTO oauth_tokens ${sql.insert({ id: `otk_${kind}_${suffix}`, token_hash: `hash_${kind}_${suffix}`, kind, client_id: "cli_ret", user_id: userId, scope: "read", family_id: "fam", created_at: OLD, expires_at: expires, used_at: null, revoked_at: null })}`
          }
        }
      })
    )
    const report = await sweep({ RETENTION_BATCH_SIZE: "1" })
    expect(report.counts.oauth).toBe(4)
    expect(report.counts.idempotency_keys).toBe(2)
    expect(await idsOf("idempotency_keys", "idempotency_key")).toEqual(["idem-kept"])
    expect(await idsOf("oauth_authorizations")).toEqual(["oar_kept"])
    expect(await idsOf("oauth_codes")).toEqual(["ocd_kept"])
    expect(await idsOf("oauth_tokens")).toEqual(["otk_access_kept", "otk_refresh_kept"])
    for (const statement of report.statements) expect(statement.rows).toBeLessThanOrEqual(1)
  }, 30_000)

  test("pending invitations past their expiry are marked expired; open and answered ones keep their status; the team's totals stay right before and after", async () => {
    const team = `team_${"0".repeat(23)}ret`
    const idOf = (n: number) => `inv_${String(n).padStart(26, "0")}`
    // id, status, expiry; the first three lapsed while pending.
    const invitations: ReadonlyArray<readonly [string, string, string]> = [
      [idOf(1), "pending", ago(DAY)],
      [idOf(2), "pending", ago(60_000)],
      [idOf(3), "pending", ago(2 * DAY)],
      [idOf(4), "pending", ago(-DAY)],
      [idOf(5), "accepted", ago(DAY)],
      [idOf(6), "expired", ago(3 * DAY)]
    ]
    await sqlRun((sql) =>
      Effect.gen(function* () {
        const [org] = yield* sql<{ org_id: string }>`SELECT org_id FROM users WHERE id = ${userId}`
        yield* sql`INSERT INTO teams ${sql.insert({ id: team, org_id: org!.org_id, name: "Ret", created_at: OLD, updated_at: OLD })}`
        yield* sql`INSERT INTO invitations ${sql.insert(
          invitations.map(([id, status, expires], i) => ({
            id,
            team_id: team,
            email: `ret${i}@example.com`,
            role: "member",
            status,
            invited_by: userId,
            created_at: OLD,
            expires_at: expires,
            answered_at: status === "accepted" ? OLD : null
          }))
        )}`
      })
    )
    const totals = () =>
      harness.run(
        Effect.flatMap(InvitationsRepo, (repo) =>
          Effect.forEach([undefined, ...invitationStatuses], (status) =>
            Effect.map(
              repo.listForTeam(team, { page: 1, per_page: 20, sort: "created_at", order: "desc", status }, ago(0)),
              (page): ReadonlyArray<string | number> => [status ?? "all", page.total, page.items.length]
            )
          )
        ).pipe(Effect.provide(InvitationsRepo.Default))
      )
    // The total from the counters (corrected by the lapsed ones) is the count of the rows the list reads.
    const expected = [
      ["all", 6, 6],
      ["pending", 1, 1],
      ["accepted", 1, 1],
      ["declined", 0, 0],
      ["revoked", 0, 0],
      ["expired", 4, 4]
    ]
    expect(await totals()).toEqual(expected)

    const report = await sweep({ RETENTION_BATCH_SIZE: "2" })
    expect(report.counts.invitations_expired).toBe(3)
    for (const statement of report.statements) expect(statement.rows).toBeLessThanOrEqual(2)
    expect(
      await sqlRun(
        (sql) =>
          sql<{ id: string; status: string }>`SELECT id, status FROM invitations WHERE team_id = ${team} ORDER BY id`
      )
    ).toEqual([
      { id: idOf(1), status: "expired" },
      { id: idOf(2), status: "expired" },
      { id: idOf(3), status: "expired" },
      { id: idOf(4), status: "pending" },
      { id: idOf(5), status: "accepted" },
      { id: idOf(6), status: "expired" }
    ])
    expect(await totals()).toEqual(expected)
    expect((await sweep({})).counts.invitations_expired).toBe(0)
  }, 30_000)

  test.skipIf(!usingPostgres())(
    "while another process sweeps (holds the retention lock), a replica's sweep skips its turn",
    async () => {
      const other = sqlOn(databaseUrl)
      try {
        // The lock as another replica's sweep holds it: a session-level advisory lock.
        await other.begin(async (session) => {
          await session`SELECT pg_advisory_lock(${RETENTION_LOCK})`
          const skipped = await harness.run(
            Effect.flatMap(Retention, (retention) => retention.sweep({ wait: false })).pipe(
              Effect.provide(Retention.Default)
            )
          )
          expect(Option.isNone(skipped)).toBe(true)
          await session`SELECT pg_advisory_unlock(${RETENTION_LOCK})`
        })
        const ran = await harness.run(
          Effect.flatMap(Retention, (retention) => retention.sweep({ wait: false })).pipe(
            Effect.provide(Retention.Default)
          )
        )
        expect(Option.isSome(ran)).toBe(true)
      } finally {
        await other.close()
      }
    },
    30_000
  )

  test("at the default batch size, a statement deletes 1,000 rows at most", async () => {
    const rows: Array<Seed> = []
    for (let n = 0; n < 2_300; n++) {
      rows.push({
        event: `evt_ret_bulk_${String(n).padStart(5, "0")}`,
        eventAt: RECENT,
        deliveries: [
          {
            id: `dlv_ret_bulk_${String(n).padStart(5, "0")}`,
            hook: hooks[n % 2]!,
            status: "delivered",
            endedAt: OLD,
            attempts: 1
          }
        ]
      })
    }
    await seed(rows)
    const report = await sweep({})
    expect(report.counts.deliveries).toBe(2_300)
    const deliveries = report.statements.filter((s) => s.table === "deliveries").map((s) => s.rows)
    expect(deliveries).toEqual([1_000, 1_000, 300])
    for (const statement of report.statements) expect(statement.rows).toBeLessThanOrEqual(1_000)
    const after = await totals()
    expect(after.counters).toEqual(after.rows)
  }, 120_000)
})
