/**
 * A delivery read with its attempts (`Webhooks.delivery`, `GET /v1/webhooks/:id/deliveries/:delivery_id`) is one
 * state of the delivery: its row and its attempts are two statements, and the recorder may commit an attempt with
 * the delivery's new state between them. Here the repository's attempts read commits such an attempt first (as the
 * recorder would, in one transaction), once: the answer must show the attempt and the status it left together,
 * never attempt 2 succeeded beside a delivery still `failed` (what the dashboard's Redeliver showed on PostgreSQL).
 * On the engine `DATABASE_URL` selects.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { DeliveryId, WebhookId } from "../../src/Domain/Ids.ts"
import { Events } from "../../src/Events/Events.ts"
import { EventsRepo } from "../../src/Events/Repo.ts"
import { Users } from "../../src/Users/Users.ts"
import { WebhooksRepo } from "../../src/Webhooks/Repo.ts"
import { Webhooks } from "../../src/Webhooks/Webhooks.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { webhookRow } from "../support/helpers.ts"
import { onSelectedEngine, principalOf, type ServiceHarness } from "../support/services.ts"

const T0 = "2026-01-01T00:00:00.000Z"
const T1 = "2026-01-01T00:00:05.000Z"
const T2 = "2026-01-01T00:03:00.000Z"
/** An id of `prefix` (26 characters after it, as the ids' pattern asks). */
const idOf = (prefix: string) => `${prefix}_0race${"0".repeat(20)}1`
const EVENT = idOf("evt")
const HOOK = WebhookId.make(idOf("whk"))
const DELIVERY = DeliveryId.make(idOf("dlv"))

const attemptRow = (number: number, at: string, succeeded: boolean) => ({
  delivery_id: DELIVERY,
  number,
  attempted_at: at,
  duration_ms: 12,
  status_code: succeeded ? 200 : 500,
  error: succeeded ? null : "HTTP 500",
  response_body: null,
  outcome: succeeded ? "succeeded" : "failed",
  trigger: succeeded ? "manual" : "schedule",
  request_headers: null,
  response_headers: null
})

/** What the recorder commits for a successful manual attempt 2: the attempt and the delivery's new state, together. */
const recordManualSuccess = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.zipRight(
    sql`INSERT INTO delivery_attempts ${sql.insert(attemptRow(2, T2, true))}`,
    sql`UPDATE deliveries SET status = 'delivered', last_attempt_at = ${T2}, next_attempt_at = NULL
        WHERE id = ${DELIVERY}`
  ).pipe(sql.withTransaction)
)

/** The repository, but its first read of the attempts lets the recorder commit just before it. */
const RacingRepo = Layer.effect(
  WebhooksRepo,
  Effect.gen(function* () {
    const real = yield* WebhooksRepo
    const sql = yield* SqlClient.SqlClient
    let raced = false
    return WebhooksRepo.make({
      ...real,
      attemptsOf: (id: DeliveryId) =>
        Effect.suspend(() => {
          if (raced || id !== DELIVERY) return real.attemptsOf(id)
          raced = true
          return Effect.zipRight(
            Effect.orDie(Effect.provideService(recordManualSuccess, SqlClient.SqlClient, sql)),
            real.attemptsOf(id)
          )
        })
    })
  })
).pipe(Layer.provide(WebhooksRepo.Default))

let harness: ServiceHarness<Webhooks | Users>
let user: { readonly id: string; readonly org_id: string }

beforeAll(async () => {
  harness = await onSelectedEngine(
    Layer.mergeAll(
      Webhooks.DefaultWithoutDependencies.pipe(
        Layer.provide(Layer.mergeAll(RacingRepo, EventsRepo.Default, Events.Default))
      ),
      Users.Default
    )
  )
  user = await harness.run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("race"), name: "Race" })))
  await harness.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.gen(function* () {
        yield* sql`INSERT INTO events ${sql.insert({ id: EVENT, type: "project.created", payload: "{}", trace_context: null, created_at: T0 })}`
        yield* sql`INSERT INTO webhooks ${sql.insert(
          webhookRow({ id: HOOK, userId: user.id, url: "https://hooks.example.com/race", secret: "whsec_race", at: T0 })
        )}`
        yield* sql`INSERT INTO deliveries ${sql.insert({
          id: DELIVERY,
          webhook_id: HOOK,
          event_id: EVENT,
          event_type: "project.created",
          status: "failed",
          attempt_count: 1,
          manual: 0,
          next_attempt_at: null,
          last_attempt_at: T1,
          claimed_until: null,
          claim_token: null,
          created_at: T0
        })}`
        yield* sql`INSERT INTO delivery_attempts ${sql.insert(attemptRow(1, T1, false))}`
      })
    )
  )
}, 60_000)
afterAll(() => harness.dispose(), 20_000)

test("an attempt committed between the delivery's two reads: the answer shows it with the status it left", async () => {
  const read = await harness.run(
    Effect.flatMap(Webhooks, (webhooks) => webhooks.delivery(principalOf(user), HOOK, DELIVERY))
  )
  expect(read.attempts.map((a) => [a.number, a.outcome])).toEqual([
    [1, "failed"],
    [2, "succeeded"]
  ])
  expect(read.status).toBe("delivered")
  expect(read.last_attempt_at).toBe(T2)
}, 30_000)
