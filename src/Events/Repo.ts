/**
 * The events feed's reads: a user's events through the audience stored with each event (migration 0009), newest
 * first. Each page walks `(user_id, created_at, event_id)` backwards, or with a type filter one
 * `(user_id, type, created_at, event_id)` range per type, merged (src/Sql/Lists.ts); the payload is read for the
 * page's rows only. The total is an exact count of the user's audience rows that match, an index-only range count.
 *
 * The cursor (`after`): the caller's audience row of the named event gives the position in the feed's sequence
 * (src/Sql/Sequence.ts); the page is the rows after it that may be shown, oldest first, one walk of `(user_id,
 * <sequence>)`, or with a type filter one `(user_id, type, <sequence>)` walk per type, merged.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Schema } from "effect"
import { EventFromPayload } from "../Domain/Event.js"
import type { EventType } from "../Domain/EventTypes.js"
import { EventId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import { makeListPage } from "../Sql/Lists.js"
import * as Rows from "../Sql/Repository.js"
import * as Sequence from "../Sql/Sequence.js"

/** What the feed's list query carries: the list's own fields and the type filter. */
export interface EventListQuery extends ListQuery<"created_at"> {
  readonly types?: ReadonlyArray<EventType> | undefined
}

/** The events feed's name for retention's mark (src/Sql/Sequence.ts, `markRemoved`). */
export const EVENTS_SEQUENCE = "events"

const Row = Schema.Struct({ payload: EventFromPayload })
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))

/** What a cursor page asks for: the caller's events after `from`, of `types` (all when empty), `limit` of them. */
export interface EventsAfter {
  readonly userId: string
  readonly from: Sequence.Position
  readonly types: ReadonlyArray<EventType>
  readonly limit: number
}

export class EventsRepo extends Effect.Service<EventsRepo>()("EventsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const listRows = makeListPage(Row)
    const payload = sql`(SELECT e.payload FROM events e WHERE e.id = a.event_id) AS payload`

    const list = (userId: string, query: EventListQuery) => {
      const types = query.types ?? []
      const spec = {
        select: sql`a.event_id, a.created_at, ${payload}`,
        from: sql`event_audience a`,
        where: [sql`a.user_id = ${userId}`],
        columns: { created_at: "a.created_at" },
        createdColumn: "a.created_at",
        idColumn: "a.event_id",
        searchColumns: []
      }
      const page =
        types.length <= 1
          ? listRows(
              { ...spec, where: [...spec.where, ...types.map((type) => sql`a.type = ${type}`)] },
              { ...query, search: undefined }
            )
          : listRows(
              { ...spec, branches: types.map((type) => [sql`a.type = ${type}`]) },
              { ...query, search: undefined }
            )
      return Effect.map(page, (rows) => ({ ...rows, items: rows.items.map((row) => row.payload) }))
    }

    const findFor = Rows.findOne({
      Request: Schema.Struct({ userId: Schema.String, id: EventId }),
      Result: Row,
      execute: ({ id, userId }) =>
        sql`SELECT e.payload FROM event_audience a JOIN events e ON e.id = a.event_id
            WHERE a.user_id = ${userId} AND a.event_id = ${id}`
    })

    /** Where the caller's audience row of event `id` stands in their feed's sequence, if they heard of it. */
    const positionOf = Rows.findOne({
      Request: Schema.Struct({ userId: Schema.String, id: EventId }),
      Result: Sequence.Position,
      execute: ({ id, userId }) =>
        sql`SELECT ${Sequence.position(sql, "a")} FROM event_audience a WHERE a.user_id = ${userId} AND a.event_id = ${id}`
    })

    /** Whether event `id` exists (for anyone). */
    const exists = Rows.findOne({
      Request: EventId,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (id) => sql`SELECT id FROM events WHERE id = ${id}`
    })

    const afterBranch = (request: EventsAfter, type: EventType | undefined) =>
      sql`SELECT a.event_id, ${Sequence.order(sql, "a")}, ${payload} FROM event_audience a
        WHERE a.user_id = ${request.userId} ${type === undefined ? sql`` : sql`AND a.type = ${type}`}
          AND ${Sequence.after(sql, "a", request.from)}
        ORDER BY ${Sequence.order(sql, "a")} LIMIT ${request.limit}`

    /** The page after a cursor, oldest first: the payloads. */
    const after = (request: EventsAfter) => {
      const rows =
        request.types.length <= 1
          ? afterBranch(request, request.types[0])
          : sql`SELECT * FROM (${sql.join(
              " UNION ALL ",
              false
            )(
              request.types.map((type, i) => sql`SELECT * FROM (${afterBranch(request, type)}) ${sql.literal(`b${i}`)}`)
            )}) u
            ORDER BY ${Sequence.order(sql, "u")} LIMIT ${request.limit}`
      return Effect.flatMap(rows, (found) =>
        Effect.map(Effect.orDie(decodeRows(found)), (decoded) => decoded.map((row) => row.payload))
      )
    }

    return {
      list,
      findFor: (userId: string, id: EventId) => findFor({ userId, id }),
      positionOf: (userId: string, id: EventId) => positionOf({ userId, id }),
      exists: (id: EventId) => Effect.map(exists(id), Option.isSome),
      after
    } as const
  })
}) {}
