/**
 * The audience of each event: the users whose webhooks its deliveries were chosen from (the resource's owner; for
 * a team resource the team's owners and admins; for `member.joined`/`member.removed` also the member), written by
 * `Events.emit` in the event's own transaction, whether or not they have a webhook. It is what the events feed
 * (`GET /v1/events`) reads, so the feed shows who heard about an event then, never who would hear about it today.
 *
 * Each row copies its event's `type` and `created_at`, so the feed is an index walk: "this user's events, newest
 * first" reads `(user_id, created_at, event_id)` backwards and stops after a page, and a type filter reads
 * `(user_id, type, created_at, event_id)` one range per type. The primary key answers "is this user in that
 * event's audience" (`GET /v1/events/:id`); `event_id` is indexed for the cascade when retention deletes events.
 * Events written before this migration have no audience (it cannot be known now) and are not in the feed.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE event_audience (
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      event_id TEXT NOT NULL REFERENCES events (id) ON DELETE CASCADE,
      type TEXT NOT NULL,
      created_at TEXT NOT NULL,
      PRIMARY KEY (user_id, event_id)
    )`
  yield* sql`CREATE INDEX event_audience_user_created ON event_audience (user_id, created_at, event_id)`
  yield* sql`CREATE INDEX event_audience_user_type_created ON event_audience (user_id, type, created_at, event_id)`
  yield* sql`CREATE INDEX event_audience_event ON event_audience (event_id)`
})
