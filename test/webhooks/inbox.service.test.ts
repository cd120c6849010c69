// engine-independent: the services over SQLite in memory (inMemory), whichever engine the run is on
/**
 * The outbox's hand-over to the delivery worker, in-process over SQLite in memory: a committed change hands the
 * deliveries it claimed to the inbox and leaves the rest unclaimed for the worker's claim; a change that fails hands
 * nothing over, writes nothing and gives its room back.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Fiber, Layer, Option } from "effect"
import { Events } from "../../src/Events/Events.ts"
import { DeliveryInbox } from "../../src/Events/Inbox.ts"
import { Users } from "../../src/Users/Users.ts"
import { projectData } from "../support/eventData.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { claimedDelivery, webhookRow } from "../support/helpers.ts"
import { inMemory } from "../support/services.ts"

const harness = inMemory(Layer.mergeAll(Events.Default, DeliveryInbox.Default, Users.Default))
const { run } = harness

interface Row {
  readonly webhook_id: string
  readonly claim_token: string | null
  readonly claimed_until: string | null
  readonly created_at: string
}
const deliveries = () =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<Row>`SELECT webhook_id, claim_token, claimed_until, created_at FROM deliveries ORDER BY webhook_id`
    )
  )

let userId = ""
beforeAll(async () => {
  const user = await run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("inbox"), name: "Inbox" })))
  userId = user.id
  const now = new Date().toISOString()
  await run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql`INSERT INTO webhooks ${sql.insert(
          [1, 2, 3, 4].map((n) =>
            webhookRow({
              id: `whk_0000000000000000000000000${n}`,
              userId: user.id,
              url: `https://hooks.example.com/${n}`,
              secret: `whsec_${n}`,
              at: now
            })
          )
        )}`
    )
  )
  // Room for three, a lease of a minute.
  await run(Effect.flatMap(DeliveryInbox, (inbox) => inbox.open(3, Duration.minutes(1), 1)))
})
afterAll(() => harness.dispose(), 20_000)

describe("the outbox and the inbox", () => {
  test("a change that fails after emitting hands nothing over, leaves no row and gives its room back", async () => {
    const failed = await run(
      Effect.flip(
        Effect.flatMap(Events, (events) =>
          events.transaction(
            Effect.zipRight(events.emit("project.created", [userId], projectData("n0")), Effect.fail("refused"))
          )
        )
      )
    )
    expect(failed).toBe("refused")
    expect(await deliveries()).toHaveLength(0)
    const room = await run(
      Effect.flatMap(DeliveryInbox, (inbox) => Effect.tap(inbox.reserveAll, (granted) => inbox.release(granted)))
    )
    expect(room).toBe(3)
    const waiting = await run(Effect.flatMap(DeliveryInbox, (inbox) => inbox.takeUnstarted))
    expect(waiting).toHaveLength(0)
  })

  test("a committed change hands over what there is room for, claimed for the lease; the rest waits unclaimed", async () => {
    const event = await run(
      Effect.flatMap(Events, (events) =>
        events.transaction(
          // A change records itself as it announces itself (the outbox refuses one without the other).
          Effect.tap(events.emit("project.created", [userId], projectData("n1")), () =>
            events.record("project.created", { type: "project", id: "n1" })
          )
        )
      )
    )
    const rows = await deliveries()
    expect(rows).toHaveLength(4)
    const claimed = rows.filter((row) => row.claim_token !== null)
    expect(claimed).toHaveLength(3)
    for (const row of claimed) {
      expect(Date.parse(row.claimed_until!) - Date.parse(row.created_at)).toBe(60_000)
    }
    expect(rows.filter((row) => row.claim_token === null && row.claimed_until === null)).toHaveLength(1)

    const handed = await run(Effect.flatMap(DeliveryInbox, (inbox) => inbox.takeUnstarted))
    expect(handed.map((d): string => d.webhook_id).sort()).toEqual(claimed.map((row) => row.webhook_id).sort())
    for (const delivery of handed) {
      expect(delivery.event_id as string).toBe(event.id)
      expect(delivery.attempt_count).toBe(0)
      expect(JSON.parse(delivery.payload)).toEqual(event)
      expect(delivery.claim_token).toBe(claimed[0]!.claim_token!)
      expect(delivery.secret).toMatch(/^whsec_[1-4]$/)
    }
    // The inbox is full until attempts end: nothing more is claimed.
    expect(await run(Effect.flatMap(DeliveryInbox, (inbox) => inbox.reserveAll))).toBe(0)
  })

  test("room comes back when the release runs, not when it is built (the worker builds it as an attempt starts)", async () => {
    const room = await run(
      Effect.flatMap(DeliveryInbox, (inbox) =>
        Effect.gen(function* () {
          const releaseTwo = inbox.release(2)
          const before = yield* Effect.tap(inbox.reserveAll, (granted) => inbox.release(granted))
          yield* releaseTwo
          const after = yield* Effect.tap(inbox.reserveAll, (granted) => inbox.release(granted))
          return { before, after }
        })
      )
    )
    expect(room).toEqual({ before: 0, after: 2 })
    // Full again, as the test above left it.
    await run(Effect.flatMap(DeliveryInbox, (inbox) => Effect.sync(() => inbox.reserve(2))))
  })

  test("the worker's claim waits until half the room is free, and is woken then (each claim is a statement and a commit)", async () => {
    const seen = await run(
      Effect.flatMap(DeliveryInbox, (inbox) =>
        Effect.gen(function* () {
          // Any ring left by the tests above.
          yield* Effect.timeoutOption(inbox.wait, Duration.millis(5))
          const full = yield* inbox.reserveAll
          // One attempt of three ends: two rooms of three are still taken, over half.
          yield* inbox.release(1)
          const rungAfterOne = Option.isSome(yield* Effect.timeoutOption(inbox.wait, Duration.millis(5)))
          const afterOne = yield* inbox.reserveAll
          // A second ends: half is free; the claimer is woken and takes all the room.
          yield* inbox.release(1)
          const rungAfterTwo = Option.isSome(yield* Effect.timeoutOption(inbox.wait, Duration.millis(5)))
          const afterTwo = yield* inbox.reserveAll
          return { full, rungAfterOne, afterOne, rungAfterTwo, afterTwo }
        })
      )
    )
    // The last claim took the room: full again, as the first tests left it.
    expect(seen).toEqual({ full: 0, rungAfterOne: false, afterOne: 0, rungAfterTwo: true, afterTwo: 2 })
  })
})

test("with as many runners as rooms, the claim is woken as soon as one runner has nothing to take", async () => {
  // Three runners and room for three (a lease of one attempt's time-out): waiting for half the room would leave a
  // runner idle until a second attempt ended, and the runners would go on two at a time.
  const seen = await run(
    Effect.flatMap(DeliveryInbox, (inbox) =>
      Effect.gen(function* () {
        yield* inbox.open(3, Duration.seconds(20), 3)
        const claimed = yield* inbox.reserveAll
        // The claimer's next pass finds no room and waits to be woken.
        const none = yield* inbox.reserveAll
        yield* inbox.release(1)
        const rung = Option.isSome(yield* Effect.timeoutOption(inbox.wait, Duration.millis(5)))
        const room = yield* inbox.reserveAll
        return { claimed, none, rung, room }
      })
    ).pipe(Effect.provide(DeliveryInbox.Default))
  )
  expect(seen).toEqual({ claimed: 3, none: 0, rung: true, room: 1 })
})

describe("inside another transaction", () => {
  test("nothing is claimed (its commit is only a savepoint's): every delivery is written unclaimed", async () => {
    // Room again: the three handed over above have "ended".
    await run(Effect.flatMap(DeliveryInbox, (inbox) => inbox.release(3)))
    const event = await run(
      Effect.flatMap(Events, (events) =>
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql.withTransaction(events.transaction(events.emit("project.created", [userId], projectData("n2"))))
        )
      )
    )
    const rows = await run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql<{ readonly claim_token: string | null }>`SELECT claim_token FROM deliveries WHERE event_id = ${event.id}`
      )
    )
    expect(rows).toHaveLength(4)
    expect(rows.every((row) => row.claim_token === null)).toBe(true)
    expect(await run(Effect.flatMap(DeliveryInbox, (inbox) => inbox.takeUnstarted))).toHaveLength(0)
  })
})

describe("shutdown gives back what no attempt started", () => {
  test("a delivery handed to a taker interrupted at that moment (the worker stopping) is still given back", async () => {
    const delivery = claimedDelivery()
    const left = await run(
      Effect.flatMap(DeliveryInbox, (inbox) =>
        Effect.gen(function* () {
          // A runner waiting for work, as the worker's are; the hand-over and the shutdown's interrupt meet.
          const taker = yield* Effect.fork(inbox.take)
          yield* Effect.yieldNow()
          yield* inbox.hand([delivery])
          yield* Fiber.interrupt(taker)
          return yield* inbox.takeUnstarted
        })
      )
    )
    expect(left.map((d) => d.id)).toEqual([delivery.id])
  })

  test("a delivery whose attempt started is not given back; one still queued is", async () => {
    const [first, second] = [claimedDelivery(), claimedDelivery()]
    const left = await run(
      Effect.flatMap(DeliveryInbox, (inbox) =>
        Effect.gen(function* () {
          yield* inbox.hand([first, second])
          inbox.started(yield* inbox.take)
          return yield* inbox.takeUnstarted
        })
      )
    )
    expect(left.map((d) => d.id)).toEqual([second.id])
  })
})
