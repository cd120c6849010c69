/**
 * The events feed: the events whose audience included the caller when they were written (see migration 0009),
 * newest first, each as it was delivered. An event outside the caller's audience does not exist for them (404).
 */
import { Effect, Option } from "effect"
import { NotFound } from "../Domain/Errors.js"
import type { EventId } from "../Domain/Ids.js"
import type { Principal } from "../Domain/Principal.js"
import { traced } from "../Observability/Traced.js"
import { type EventListQuery, EventsRepo } from "./Repo.js"

export class EventFeed extends Effect.Service<EventFeed>()("EventFeed", {
  dependencies: [EventsRepo.Default],
  effect: Effect.gen(function* () {
    const repo = yield* EventsRepo

    const list = traced("EventFeed.list")(function* (principal: Principal, query: EventListQuery) {
      return yield* Effect.orDie(repo.list(principal.userId, query))
    })

    const get = traced("EventFeed.get")(function* (principal: Principal, id: EventId) {
      const found = yield* Effect.orDie(repo.findFor(principal.userId, id))
      if (Option.isNone(found)) return yield* NotFound.resource("event", id)
      return found.value.payload
    })

    return { list, get } as const
  })
}) {}
