/**
 * The events feed's reads: a user's events through the audience stored with each event (migration 0009), newest
 * first. Each page walks `(user_id, created_at, event_id)` backwards, or with a type filter one
 * `(user_id, type, created_at, event_id)` range per type, merged (src/Sql/Lists.ts); the payload is read for the
 * page's rows only. The total is an exact count of the user's audience rows that match, an index-only range count.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { EventFromPayload } from "../Domain/Event.js"
import type { EventType } from "../Domain/EventTypes.js"
import { EventId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import { makeListPage } from "../Sql/Lists.js"
import * as Rows from "../Sql/Rows.js"

/** What the feed's list query carries: the list's own fields and the type filter. */
export interface EventListQuery extends ListQuery<"created_at"> {
  readonly types?: ReadonlyArray<EventType> | undefined
}

const Row = Schema.Struct({ payload: EventFromPayload })

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

    return {
      list,
      findFor: (userId: string, id: EventId) => findFor({ userId, id })
    } as const
  })
}) {}
