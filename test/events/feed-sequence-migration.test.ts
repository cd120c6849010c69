/**
 * Migration 0018 on audience rows already there, on the engine `DATABASE_URL` selects: they are numbered in their
 * old order (`created_at`, then `event_id`), so a cursor from one of them reads the rest in that order, and events
 * written afterwards follow them.
 */
import { expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import { EventId } from "../../src/Domain/Ids.ts"
import { Events } from "../../src/Events/Events.ts"
import { EventFeed } from "../../src/Events/Feed.ts"
import { SqlClientLive, SqlLive } from "../../src/Sql/Client.ts"
import { runMigrationsBefore } from "../../src/Sql/Migrations.ts"
import { projectData } from "../support/eventData.ts"
import { withDatabaseUrl } from "../support/fixtures.ts"
import { eventually } from "../support/helpers.ts"
import { freshDatabaseUrl } from "../support/server.ts"
import { principalOf } from "../support/services.ts"

const USER = "usr_01jd3xkq8w0000000000000001"
const ORG = "org_01jd3xkq8w0000000000000001"
const at = (second: number) => new Date(Date.UTC(2026, 10, 1, 0, 0, second)).toISOString()
/** Written in this order, with these times: the old order is by time, then id (the last two share a time). */
const OLD = [
  { id: "evt_01jd3xkq8w0000000000000003", at: at(1) },
  { id: "evt_01jd3xkq8w0000000000000001", at: at(2) },
  { id: "evt_01jd3xkq8w0000000000000005", at: at(3) },
  { id: "evt_01jd3xkq8w0000000000000004", at: at(3) }
]

test("0018 numbers the audience rows already there in their old order; new events follow them", async () => {
  const databaseUrl = await freshDatabaseUrl()
  const old = ManagedRuntime.make(SqlClientLive.pipe(Layer.provide(withDatabaseUrl(databaseUrl))))
  await old.runPromise(
    Effect.gen(function* () {
      yield* runMigrationsBefore("0018_feed_sequence")
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO orgs ${sql.insert({ id: ORG, name: "Org", created_at: at(0) })}`
      yield* sql`INSERT INTO users ${sql.insert({ id: USER, org_id: ORG, email: "old@example.com", name: "Old", password_hash: null, created_at: at(0), updated_at: at(0) })}`
      for (const event of OLD) {
        const payload = JSON.stringify({ id: event.id, type: "project.created", created_at: event.at, data: {} })
        yield* sql`INSERT INTO events ${sql.insert({ id: event.id, type: "project.created", payload, trace_context: null, created_at: event.at })}`
        yield* sql`INSERT INTO event_audience ${sql.insert({ user_id: USER, event_id: event.id, type: "project.created", created_at: event.at })}`
      }
    })
  )
  await old.dispose()

  const migrated = ManagedRuntime.make(
    Layer.mergeAll(EventFeed.Default, Events.Default).pipe(
      Layer.provideMerge(SqlLive),
      Layer.provide(withDatabaseUrl(databaseUrl))
    )
  )
  const me = principalOf({ id: USER, org_id: ORG })
  const after = (id: string) =>
    migrated.runPromise(
      Effect.flatMap(EventFeed, (feed) =>
        Effect.map(feed.after(me, { after: EventId.make(id), per_page: 100, types: [] }), (page) =>
          page.items.map((event): string => event.id)
        )
      )
    )
  try {
    expect(await after(OLD[0]!.id)).toEqual([OLD[1]!.id, OLD[3]!.id, OLD[2]!.id])
    const added = await migrated.runPromise(
      Effect.flatMap(Events, (events) =>
        events.transaction(
          Effect.map(events.emit("project.created", [USER], projectData("new")), (event): string => event.id).pipe(
            Effect.tap(() => events.record("project.created", { type: "project", id: "new" }))
          )
        )
      )
    )
    const found = await eventually(async () => {
      const ids = await after(OLD[2]!.id)
      return ids.includes(added) ? ids : undefined
    })
    expect(found).toEqual([added])
  } finally {
    await migrated.dispose()
  }
}, 60_000)
