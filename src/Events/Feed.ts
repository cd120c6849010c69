/**
 * The events feed: the events whose audience included the caller when they were written (see migration 0009),
 * newest first, each as it was delivered. An event outside the caller's audience does not exist for them (404).
 *
 * `after`: the caller's events that follow a given one in the feed's sequence, oldest first (src/Sql/Sequence.ts:
 * the order in which they became visible, so a reader that keeps passing the last id it got never skips one that
 * commits late). The named event must be one of the caller's (else 404), unless retention removed it (410).
 */
import { Effect, Option } from "effect"
import { CursorExpired, NotFound } from "../Domain/Errors.js"
import type { Event } from "../Domain/Event.js"
import type { EventType } from "../Domain/EventTypes.js"
import type { EventId } from "../Domain/Ids.js"
import type { CursorPage } from "../Domain/Lists.js"
import type { Principal } from "../Domain/Principal.js"
import { traced } from "../Observability/Traced.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { locate } from "../Sql/Sequence.js"
import { EVENTS_SEQUENCE, type EventListQuery, EventsRepo } from "./Repo.js"

export class EventFeed extends Effect.Service<EventFeed>()("EventFeed", {
  dependencies: [EventsRepo.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* EventsRepo)

    const list = traced("EventFeed.list")(function* (principal: Principal, query: EventListQuery) {
      return yield* repo.list(principal.userId, query)
    })

    const get = traced("EventFeed.get")(function* (principal: Principal, id: EventId) {
      const found = yield* repo.findFor(principal.userId, id)
      if (Option.isNone(found)) return yield* NotFound.resource("event", id)
      return found.value.payload
    })

    const after = traced("EventFeed.after")(function* (
      principal: Principal,
      query: { readonly after: EventId; readonly per_page: number; readonly types: ReadonlyArray<EventType> }
    ) {
      const from = yield* dieOnSqlError(
        locate(EVENTS_SEQUENCE, query.after, repo.positionOf(principal.userId, query.after), repo.exists(query.after))
      )
      if (from === "removed") {
        return yield* new CursorExpired({
          message: `The event ${query.after} has been removed by retention; start again from created_after`
        })
      }
      if (from === "unknown") return yield* NotFound.resource("event", query.after)
      const items: ReadonlyArray<Event> = yield* repo.after({
        userId: principal.userId,
        from,
        types: query.types,
        limit: query.per_page
      })
      return { items, per_page: query.per_page } satisfies CursorPage<Event>
    })

    return { list, get, after } as const
  })
}) {}
