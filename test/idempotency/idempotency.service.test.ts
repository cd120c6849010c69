/**
 * `Idempotency.run` in-process, on the engine `DATABASE_URL` selects: the change and the key's answer commit
 * together; an answer that is not recorded (5xx, 401, 403, 429) or a change that dies rolls the change back and
 * leaves the key free; a recorded one (2xx, 4xx) is replayed without running the change; another request under the
 * key is refused; a key whose request is still running is refused at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { type Answer, Idempotency } from "../../src/Idempotency/Idempotency.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { onSelectedEngine, type ServiceHarness } from "../support/services.ts"

let harness: ServiceHarness<Idempotency | Users>
let userId = ""
beforeAll(async () => {
  harness = await onSelectedEngine(Layer.mergeAll(Idempotency.Default, Users.Default))
  userId = (await harness.run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail(), name: "Key" })))).id
}, 60_000)
afterAll(() => harness.dispose(), 20_000)

let counter = 0
const newKey = () => `service-${++counter}-${crypto.randomUUID()}`

/** A change with a visible effect (a user with this email), answering `status`. */
const makeUser = (email: string, status: number) =>
  Effect.map(
    Effect.orDie(Effect.flatMap(Users, (users) => users.create({ email, name: "Made" }))),
    (user): Answer => ({ status, contentType: "application/json", body: JSON.stringify({ id: user.id }) })
  )

const usersWith = (email: string) =>
  harness.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.map(
        sql<{ readonly n: number }>`SELECT CAST(count(*) AS INTEGER) AS n FROM users WHERE email = ${email}`,
        (rows) => Number(rows[0]?.n)
      )
    )
  )

const run = (key: string, hash: string, change: Effect.Effect<Answer, never, Users>) =>
  harness.run(Effect.flatMap(Idempotency, (idempotency) => idempotency.run(userId, key, hash, change, Effect.succeed)))

describe("Idempotency.run", () => {
  test("records a 2xx with the change, then replays it without running the change", async () => {
    const key = newKey()
    const email = uniqueEmail("made")
    const first = await run(key, "h1", makeUser(email, 201))
    expect(first._tag).toBe("Ran")
    const again = await run(key, "h1", makeUser(uniqueEmail("never"), 201))
    expect(again).toEqual({ _tag: "Replayed", answer: first._tag === "Ran" ? first.value : expect.anything() })
    expect(await usersWith(email)).toBe(1)
  })

  test("records a 4xx as well (400, 404, 409, 422)", async () => {
    for (const status of [400, 404, 409, 422]) {
      const key = newKey()
      const answer: Answer = { status, contentType: "application/json", body: `{"error":${status}}` }
      expect((await run(key, "h", Effect.succeed(answer)))._tag).toBe("Ran")
      expect(await run(key, "h", Effect.succeed({ ...answer, body: "other" }))).toEqual({ _tag: "Replayed", answer })
    }
  })

  test.each([500, 503, 401, 403, 429])("a %i rolls the change back and leaves the key free", async (status) => {
    const key = newKey()
    const email = uniqueEmail("rolled")
    const first = await run(key, "h", makeUser(email, status))
    // The answer is still the request's (it is sent); nothing of it is kept.
    expect(first._tag).toBe("Ran")
    expect(await usersWith(email)).toBe(0)
    const retried = uniqueEmail("retried")
    expect((await run(key, "h", makeUser(retried, 201)))._tag).toBe("Ran")
    expect(await usersWith(retried)).toBe(1)
  })

  test("a change that dies after writing rolls back, and the key stays free", async () => {
    const key = newKey()
    const email = uniqueEmail("died")
    const died = await harness
      .run(
        Effect.flatMap(Idempotency, (idempotency) =>
          idempotency.run(userId, key, "h", Effect.zipRight(makeUser(email, 201), Effect.die("boom")), Effect.succeed)
        )
      )
      .then(
        () => "succeeded",
        () => "died"
      )
    expect(died).toBe("died")
    expect(await usersWith(email)).toBe(0)
    expect((await run(key, "h", makeUser(uniqueEmail("after"), 201)))._tag).toBe("Ran")
  })

  test("another request under a used key is IdempotencyKeyReused, and runs nothing", async () => {
    const key = newKey()
    await run(key, "h1", makeUser(uniqueEmail("first"), 201))
    const email = uniqueEmail("second")
    const error = await harness.fail(
      Effect.flatMap(Idempotency, (idempotency) =>
        idempotency.run(userId, key, "h2", makeUser(email, 201), Effect.succeed)
      )
    )
    expect(error).toMatchObject({ _tag: "IdempotencyKeyReused" })
    expect(await usersWith(email)).toBe(0)
  })

  test("a key whose request is still running is IdempotencyKeyInUse at once; the first then completes", async () => {
    const key = newKey()
    const email = uniqueEmail("slow")
    const outcome = await harness.run(
      Effect.gen(function* () {
        const idempotency = yield* Idempotency
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const slow = Effect.zipRight(
          Effect.zipRight(Deferred.succeed(started, undefined), Deferred.await(release)),
          makeUser(email, 201)
        )
        const first = yield* Effect.fork(idempotency.run(userId, key, "h", slow, Effect.succeed))
        yield* Deferred.await(started)
        const second = yield* Effect.flip(
          idempotency.run(userId, key, "h", makeUser(uniqueEmail("never"), 201), Effect.succeed)
        )
        yield* Deferred.succeed(release, undefined)
        const firstOutcome = yield* Fiber.join(first)
        return { second: second._tag, first: firstOutcome._tag }
      })
    )
    expect(outcome).toEqual({ second: "IdempotencyKeyInUse", first: "Ran" })
    expect(await usersWith(email)).toBe(1)
  })

  test("keys are per user: another user's same key runs", async () => {
    const key = newKey()
    await run(key, "h", makeUser(uniqueEmail("mine"), 201))
    const other = await harness.run(
      Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail(), name: "Other" }))
    )
    const email = uniqueEmail("theirs")
    const theirs = await harness.run(
      Effect.flatMap(Idempotency, (idempotency) =>
        idempotency.run(other.id, key, "h", makeUser(email, 201), Effect.succeed)
      )
    )
    expect(theirs._tag).toBe("Ran")
    expect(await usersWith(email)).toBe(1)
  })
})
