/**
 * The events feed's cursor (`after`, src/Sql/Sequence.ts) against the numbered listing, through the feed service on
 * a user whose feed holds `--events` events (default 100,000) among another user's as many:
 *
 * - idle: a poll that finds nothing (`after` = the newest event), the poll a client makes most often; beside it the
 *   numbered listing's first page (newest first, with its total), what a `created_after` poller read each time;
 * - catch-up: pages of 100 after an event 1,000 back;
 * - busy: a writer emits events for the user in transactions of one event through the outbox, back to back, for
 *   `--seconds` (default 5) each: alone, then with a reader polling `after` every millisecond (following full pages),
 *   then with a reader polling the numbered page 1. Prints the writer's events a second, the polls' median and p99,
 *   and whether the cursor reader saw every event once.
 *
 * Medians of `--repeat` (default 200) calls, in ms.
 *
 *   taskset -c 0 bun bench/feed-cursor.ts [--events 100000] [--repeat 200] [--seconds 5]   (SQLite, a temp file)
 *   DATABASE_URL=postgres://… taskset -c 0 bun bench/feed-cursor.ts                         (PostgreSQL: a fresh, empty database)
 */

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Fiber, Layer, Ref } from "effect"
import { EventId, Stored } from "../src/Domain/Ids.js"
import type { Principal } from "../src/Domain/Principal.js"
import type { Project } from "../src/Domain/Project.js"
import { Events } from "../src/Events/Events.js"
import { EventFeed } from "../src/Events/Feed.js"
import { SqlLive } from "../src/Sql/Client.js"
import { insertAll, insertOrgUsers } from "../test/support/seed.ts"
import { arg } from "./args.ts"

const EVENTS = arg("events", 100_000)
const REPEAT = arg("repeat", 200)
const SECONDS = arg("seconds", 5)
const dir = mkdtempSync(join(tmpdir(), "feed-cursor-"))
process.env.DATABASE_URL ??= `sqlite:${join(dir, "feed.sqlite")}`
const engine = process.env.DATABASE_URL.startsWith("postgres") ? "PostgreSQL" : "SQLite"

const iso = (n: number) => new Date(Date.UTC(2025, 0, 1) + n).toISOString()
const id = (prefix: string, n: number) => `${prefix}_${String(n).padStart(26, "0")}`
const reader = id("usr", 1)
const other = id("usr", 2)
const principal: Principal = {
  userId: reader,
  orgId: "org_bench",
  scopes: ["read"],
  credential: { kind: "api_key", id: "key_01jd3xkq8w0000000000000000" }
}

const percentile = (samples: ReadonlyArray<number>, p: number) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length - 1) * p))] ?? Number.NaN
}

/** `effect` run `REPEAT` times (after a few to warm up): the median and p99 of one run, in ms. */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 10; i++) yield* effect
    const samples: Array<number> = []
    for (let i = 0; i < REPEAT; i++) {
      const start = performance.now()
      yield* effect
      samples.push(performance.now() - start)
    }
    return { median: percentile(samples, 0.5), p99: percentile(samples, 0.99) }
  })

const program = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const feed = yield* EventFeed
  const events = yield* Events

  yield* insertOrgUsers(sql, "org_bench", [reader, other])
  // The two users' events interleaved, oldest first (each audience row takes the next number of the sequence).
  const seeded = Array.from({ length: EVENTS * 2 }, (_, n) => ({
    id: id("evt", n + 1),
    user: n % 2 === 0 ? reader : other,
    type: n % 10 === 0 ? "project.deleted" : "project.created",
    created_at: iso(n)
  }))
  yield* insertAll(
    sql,
    "events",
    seeded.map((event) => ({
      id: event.id,
      type: event.type,
      payload: JSON.stringify({ id: event.id, type: event.type, created_at: event.created_at, data: {} }),
      trace_context: null,
      created_at: event.created_at
    }))
  )
  yield* insertAll(
    sql,
    "event_audience",
    seeded.map((event) => ({ user_id: event.user, event_id: event.id, type: event.type, created_at: event.created_at }))
  )
  if (engine === "PostgreSQL") yield* sql`ANALYZE`
  const mine = seeded.filter((event) => event.user === reader)
  const newest = EventId.make(mine[mine.length - 1]!.id)
  const back = EventId.make(mine[mine.length - 1001]!.id)

  console.log(`${engine}, ${EVENTS} events in the user's feed among ${EVENTS * 2}; median (p99) of ${REPEAT}, ms`)
  console.log("| read | median | p99 |")
  console.log("|---|---|---|")
  const row = (label: string, figures: { median: number; p99: number }) =>
    console.log(`| ${label} | ${figures.median.toFixed(3)} | ${figures.p99.toFixed(3)} |`)
  row(
    "idle: after the newest (empty page)",
    yield* timed(feed.after(principal, { after: newest, per_page: 100, types: [] }))
  )
  row(
    "idle: after the newest, type=project.deleted,member.joined",
    yield* timed(feed.after(principal, { after: newest, per_page: 100, types: ["project.deleted", "member.joined"] }))
  )
  row(
    "idle: an unknown id (404)",
    yield* timed(Effect.either(feed.after(principal, { after: EventId.make(id("evt", 0)), per_page: 100, types: [] })))
  )
  row(
    "numbered page 1 of 100 with its total",
    yield* timed(feed.list(principal, { page: 1, per_page: 100, sort: "created_at", order: "desc" }))
  )
  row(
    "catch-up: 100 after one 1,000 back",
    yield* timed(feed.after(principal, { after: back, per_page: 100, types: [] }))
  )

  // Busy: a writer emitting for the user, alone and beside each reader.
  // A project's create as the service writes it: the event (its data encoded by the catalogue's schema) and the
  // audit record every change carries.
  const project: Project = {
    id: Stored.ProjectId.make(id("proj", 1)),
    name: "bench",
    description: "",
    visibility: "private",
    status: "active",
    owner_id: reader,
    team_id: null,
    created_at: iso(0),
    updated_at: iso(0)
  }
  const emitOne = events.transaction(
    Effect.zipRight(
      events.emit("project.created", [reader], project),
      events.record("project.created", { type: "project", id: project.id }, { user: reader, name: project.name })
    )
  )
  const writeFor = Effect.gen(function* () {
    const until = (yield* Clock.currentTimeMillis) + SECONDS * 1000
    let written = 0
    while ((yield* Clock.currentTimeMillis) < until) {
      yield* emitOne
      written++
      // As requests do between their transactions: without it, one fiber's transactions one after another keep
      // SQLite's one connection, and a read outside them would wait for the writer to stop.
      yield* Effect.sleep("0 millis")
    }
    return written / SECONDS
  })
  /** Polls with `poll` every millisecond while `writer` runs; answers the writer's rate and the polls' times. */
  const busy = <E, R>(poll: Effect.Effect<unknown, E, R>) =>
    Effect.gen(function* () {
      const samples: Array<number> = []
      const writing = yield* Ref.make(true)
      const reading = yield* Effect.fork(
        Effect.gen(function* () {
          while (yield* Ref.get(writing)) {
            const start = performance.now()
            yield* poll
            samples.push(performance.now() - start)
            yield* Effect.sleep("1 millis")
          }
        })
      )
      const rate = yield* Effect.ensuring(writeFor, Ref.set(writing, false))
      yield* Fiber.join(reading)
      return { rate, median: percentile(samples, 0.5), p99: percentile(samples, 0.99), polls: samples.length }
    })

  console.log(`\nbusy: one writer, one event a transaction, ${SECONDS} s each`)
  console.log("| reader | writer events/s | poll median | poll p99 | polls |")
  console.log("|---|---|---|---|---|")
  const alone = yield* writeFor
  console.log(`| none | ${alone.toFixed(0)} | | | |`)
  let cursor = newest
  const seen = new Map<string, number>()
  const cursorPoll = Effect.gen(function* () {
    for (;;) {
      const page = yield* feed.after(principal, { after: cursor, per_page: 100, types: [] })
      for (const event of page.items) seen.set(event.id, (seen.get(event.id) ?? 0) + 1)
      const last = page.items[page.items.length - 1]
      if (last !== undefined) cursor = last.id
      if (page.items.length < 100) return
    }
  })
  const withCursor = yield* busy(cursorPoll)
  console.log(
    `| after=<last id> | ${withCursor.rate.toFixed(0)} | ${withCursor.median.toFixed(3)} | ${withCursor.p99.toFixed(3)} | ${withCursor.polls} |`
  )
  const numbered = yield* busy(feed.list(principal, { page: 1, per_page: 100, sort: "created_at", order: "desc" }))
  console.log(
    `| numbered page 1 | ${numbered.rate.toFixed(0)} | ${numbered.median.toFixed(3)} | ${numbered.p99.toFixed(3)} | ${numbered.polls} |`
  )
  // What the cursor reader saw of the events written while it read (and those written after, as it catches up).
  yield* cursorPoll
  const counted = yield* sql<{ n: number | string }>`SELECT count(*) AS n FROM event_audience WHERE user_id = ${reader}`
  const n = counted[0]?.n ?? 0
  const twice = [...seen.values()].filter((count) => count > 1).length
  console.log(
    `\ncursor reader: ${seen.size} events seen after the seeded ones, ${twice} twice; the feed holds ${Number(n) - EVENTS} more`
  )
})

const layer = Layer.mergeAll(EventFeed.Default, Events.Default).pipe(Layer.provideMerge(SqlLive))
await Effect.runPromise(Effect.provide(program, layer)).finally(() =>
  process.env.BENCH_KEEP ? undefined : rmSync(dir, { recursive: true, force: true })
)
