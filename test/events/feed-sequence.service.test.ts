/**
 * The feed's sequence when a transaction stays open (src/Sql/Sequence.ts), with the real outbox and feed: on
 * PostgreSQL an event committed while an earlier writer's transaction is still open is held back from the cursor
 * (though the numbered listing already shows it, which is how `created_after` readers skipped events: the second test
 * reproduces that skip, as the old procedure polls, without depending on timing), and both appear, the earlier first,
 * once that transaction ends. On SQLite a writer's transaction holds the one write lock,
 * so no later one can commit meanwhile: the concurrent-writer test (test/e2e/events-cursor-load.test.ts) covers it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Deferred, Effect, Fiber, Layer } from "effect"
import { EventId } from "../../src/Domain/Ids.ts"
import type { Principal } from "../../src/Domain/Principal.ts"
import { Events } from "../../src/Events/Events.ts"
import { EventFeed } from "../../src/Events/Feed.ts"
import { Users } from "../../src/Users/Users.ts"
import { projectData } from "../support/eventData.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { eventually } from "../support/helpers.ts"
import { usingPostgres } from "../support/server.ts"
import { onSelectedEngine, principalOf, type ServiceHarness } from "../support/services.ts"

type Services = Events | EventFeed | Users
let harness: ServiceHarness<Services>
let ann: Principal

beforeAll(async () => {
  harness = await onSelectedEngine(Layer.mergeAll(Events.Default, EventFeed.Default, Users.Default))
  ann = principalOf(
    await harness.run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("ann"), name: "Ann" })))
  )
}, 60_000)
afterAll(() => harness.dispose(), 20_000)

/** An event about `name` for Ann, in a transaction of its own that first does `before` and then `after`. */
const emitFor = (name: string, around: { before?: Effect.Effect<void>; after?: Effect.Effect<void> } = {}) =>
  Effect.flatMap(Events, (events) =>
    events.transaction(
      Effect.gen(function* () {
        if (around.before !== undefined) yield* around.before
        const event = yield* events.emit("project.created", [ann.userId], projectData(name))
        yield* events.record("project.created", { type: "project", id: name })
        if (around.after !== undefined) yield* around.after
        return event.id
      })
    )
  )

const afterIds = (from: string) =>
  Effect.flatMap(EventFeed, (feed) =>
    Effect.map(feed.after(ann, { after: EventId.make(from), per_page: 100, types: [] }), (page) =>
      page.items.map((event): string => event.id)
    )
  )

describe.skipIf(!usingPostgres())("a transaction that stays open (PostgreSQL)", () => {
  test("an event committed after it is held back from the cursor until it ends, then both come, the earlier first", async () => {
    const { fast, slowId, start } = await harness.run(
      Effect.gen(function* () {
        const start = yield* emitFor("start")
        const emitted = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // The slow one emits (its first write, so it has its transaction id), then stays open until released.
        const slow = yield* Effect.fork(
          emitFor("slow", { after: Effect.zipRight(Deferred.succeed(emitted, undefined), Deferred.await(release)) })
        )
        yield* Deferred.await(emitted)
        const fast = yield* emitFor("fast")
        // Committed and in the numbered listing, but not after the cursor: the slow transaction may still commit.
        const listed = yield* Effect.flatMap(EventFeed, (feed) =>
          feed.list(ann, { page: 1, per_page: 100, sort: "created_at", order: "desc" })
        )
        expect(listed.items.map((event): string => event.id)).toContain(fast)
        expect(yield* afterIds(start)).toEqual([])
        yield* Deferred.succeed(release, undefined)
        return { fast, slowId: yield* Fiber.join(slow), start }
      })
    )
    // Both now, once every transaction that began before theirs has ended (on the whole server: waited for).
    const both = await eventually(async () => {
      const found = await harness.run(afterIds(start))
      return found.length >= 2 ? found : undefined
    })
    expect(both).toEqual([slowId, fast])
  }, 30_000)

  test("reproduced: a reader polling with created_after skips the event of a transaction that commits after a later one; the cursor does not", async () => {
    /** The old procedure's poll: the events created after `since`, oldest first. */
    const createdAfter = (since: string) =>
      Effect.map(
        Effect.flatMap(EventFeed, (feed) =>
          feed.list(ann, { page: 1, per_page: 100, sort: "created_at", order: "asc", created_after: since })
        ),
        (page) => page.items.map((event) => ({ id: String(event.id), created_at: String(event.created_at) }))
      )
    const { fast, polled, slowId, start, startedAt } = await harness.run(
      Effect.gen(function* () {
        const start = yield* emitFor("reader-start")
        const startedAt = (yield* createdAfter("1970-01-01T00:00:00.000Z")).find((event) => event.id === start)
        if (startedAt === undefined) return yield* Effect.dieMessage("the first event is not listed")
        const emitted = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const slow = yield* Effect.fork(
          emitFor("reader-slow", {
            after: Effect.zipRight(Deferred.succeed(emitted, undefined), Deferred.await(release))
          })
        )
        yield* Deferred.await(emitted)
        const fast = yield* emitFor("reader-fast")
        // The reader polls while the slow transaction is open: it sees the later event and moves past its time.
        const first = yield* createdAfter(startedAt.created_at)
        yield* Deferred.succeed(release, undefined)
        const slowId = yield* Fiber.join(slow)
        const last = first[first.length - 1]
        // Its next poll, after the slow one committed, starts after the later event's time.
        const second = last === undefined ? [] : yield* createdAfter(last.created_at)
        return { fast, polled: [...first, ...second].map((event) => event.id), slowId, start, startedAt }
      })
    )
    expect(startedAt.id).toBe(start)
    expect(polled).toEqual([fast])
    expect(polled).not.toContain(slowId)
    // The cursor, read the same way (from the first event on), gets both, the earlier first.
    const both = await eventually(async () => {
      const found = await harness.run(afterIds(start))
      return found.length >= 2 ? found : undefined
    })
    expect(both).toEqual([slowId, fast])
  }, 30_000)
})

test("events of one transaction follow each other in the order they were emitted", async () => {
  const start = await harness.run(emitFor("first"))
  const ids = await harness.run(
    Effect.flatMap(Events, (events) =>
      events.transaction(
        Effect.forEach(["a", "b", "c"], (name) =>
          Effect.map(events.emit("project.created", [ann.userId], projectData(name)), (event): string => event.id)
        ).pipe(Effect.tap(() => events.record("project.created", { type: "project", id: "abc" })))
      )
    )
  )
  const after = await eventually(async () => {
    const found = await harness.run(afterIds(start))
    return found.length >= ids.length ? found : undefined
  })
  expect(after).toEqual(ids)
})
