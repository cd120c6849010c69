// engine-independent: the services over SQLite in memory (inMemory), whichever engine the run is on
/**
 * The pace of a webhook with a `rate_limit` (src/Webhooks/Delivery/Pacer.ts over the pace's statement in
 * DeliveryScheduleRepo), in-process: at most `rate_limit` attempts start in any one-second window, even when the
 * process is slow to get from the pace's answer to the attempt, and a process that is slow every time still starts
 * them all.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Deferred, Duration, Effect, Layer } from "effect"
import { makeId } from "../../src/Domain/Ids.ts"
import { Users } from "../../src/Users/Users.ts"
import { makePacer, type PacerOptions } from "../../src/Webhooks/Delivery/Pacer.ts"
import { DeliveryScheduleRepo, type Pace } from "../../src/Webhooks/Delivery/Repo.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { claimedDelivery, webhookRow } from "../support/helpers.ts"
import { mostInWindow } from "../support/rate-window.ts"
import { inMemory } from "../support/services.ts"

const harness = inMemory(Layer.mergeAll(DeliveryScheduleRepo.Default, Users.Default))
const { run } = harness

let userId = ""
beforeAll(async () => {
  userId = (await run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("pacer"), name: "Pacer" }))))
    .id
})
afterAll(() => harness.dispose(), 20_000)

/** A webhook with a `rate_limit` of `limit`, fresh for each test (its pace is its own). */
const limitedWebhook = (limit: number) =>
  run(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const id = makeId("webhook")
      const row = webhookRow({
        id,
        userId,
        url: `https://hooks.example.com/${id}`,
        secret: "whsec_x",
        at: new Date().toISOString()
      })
      yield* sql`INSERT INTO webhooks ${sql.insert({ ...row, rate_limit: limit })}`
      return id
    })
  )

/**
 * Paces `count` deliveries of webhook `id`; answers when each started (`Date.now()` as the attempt began) and how many
 * starts were let lapse. Each answer of the pace reaches the pacer `lateBy(pace)` ms after its statement ran: a busy
 * process getting to it late.
 */
const startsOf = (id: string, count: number, lateBy: (pace: Pace) => number) =>
  run(
    Effect.scoped(
      Effect.gen(function* () {
        const schedule = yield* DeliveryScheduleRepo
        const starts: Array<{ readonly at: number }> = []
        let lapsed = 0
        const allStarted = yield* Deferred.make<void>()
        const options: PacerOptions = {
          takeStart: (webhookId, now, cold) =>
            Effect.tap(schedule.takeStart(webhookId, now, cold), (pace) => Effect.sleep(Duration.millis(lateBy(pace)))),
          start: () =>
            Effect.suspend(() => {
              starts.push({ at: Date.now() })
              return starts.length === count ? Deferred.succeed(allStarted, undefined) : Effect.void
            }),
          giveBack: () => Effect.die("no delivery should wait this long"),
          lapsed: Effect.sync(() => {
            lapsed += 1
          }),
          wake: Effect.void,
          maxWait: Duration.minutes(1),
          scope: yield* Effect.scope
        }
        const pacer = makePacer(options)
        for (let i = 0; i < count; i++) yield* pacer.add(claimedDelivery({ webhook_id: id, rate_limit: 2 }))
        yield* Deferred.await(allStarted).pipe(
          Effect.timeoutFail({
            duration: Duration.seconds(20),
            onTimeout: () => new Error(`only ${starts.length} of ${count} deliveries started within 20 s`)
          })
        )
        return { starts, lapsed }
      })
    )
  )

describe("the pace of a webhook with rate_limit 2", () => {
  test("a start the process gets to 400 ms after its grant does not crowd the next: no second holds 3 starts", async () => {
    const id = await limitedWebhook(2)
    let starts = 0
    // The second start granted reaches the pacer 400 ms late; every other answer at once.
    const { lapsed, starts: at } = await startsOf(id, 6, (pace) => (pace._tag === "Start" && ++starts === 2 ? 400 : 0))
    expect(at).toHaveLength(6)
    expect(mostInWindow(at, 1000)).toBeLessThanOrEqual(2)
    // That start was let go (a busy machine may let another go too, never crowding one).
    expect(lapsed).toBeGreaterThanOrEqual(1)
  }, 30_000)

  test("a process whose every answer comes 80 ms late still starts them all, 2 a second at most", async () => {
    const id = await limitedWebhook(2)
    const { starts: at } = await startsOf(id, 6, () => 80)
    expect(at).toHaveLength(6)
    expect(mostInWindow(at, 1000)).toBeLessThanOrEqual(2)
  }, 30_000)
})
