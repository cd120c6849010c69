import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { CursorList, List, Success } from "../Contract/Envelope.js"
import { withParamErrors } from "../Contract/Errors.js"
import { PageNumber, PerPage } from "../Contract/ListParams.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { ApiErrors } from "../Domain/Errors.js"
import { Event, EventTypeFilter } from "../Domain/Event.js"
import { EventId } from "../Domain/Ids.js"
import { optional } from "../Domain/Payload.js"
import { InstantCeilFromString, InstantFromString } from "../Domain/Time.js"

/**
 * The feed's query: newest first always, so no `sort`/`order`; no `search` (events have no text to search). With
 * `after` (a cursor: the events after that one, oldest first) only `per_page` and `type` apply.
 */
export const EventListParams = Schema.Struct({
  after: optional(
    EventId.annotations({
      description:
        "An event id: the events that follow it in the feed's sequence (the order in which they became visible), " +
        "oldest first; pass the last id of each page to the next. Not with page, created_after or created_before. " +
        "404 when it is not one of your events, 410 cursor_expired when retention has removed it"
    })
  ),
  page: optional(PageNumber),
  per_page: Schema.optionalWith(PerPage, { default: () => 20, exact: true }),
  type: optional(EventTypeFilter),
  created_after: optional(InstantFromString),
  created_before: optional(InstantCeilFromString)
})

const id = HttpApiSchema.param("id", EventId)

/** The events feed: what the caller's webhooks were (or would have been) sent, to catch up after missed deliveries. */
export class EventsApi extends HttpApiGroup.make("events")
  .add(
    HttpApiEndpoint.get("list")`/events`
      .setUrlParams(EventListParams)
      .addSuccess(Schema.Union(List(Event), CursorList(Event)))
      .pipe(withParamErrors)
      .addError(ApiErrors.CursorExpired)
      .annotate(RequiredScopes, ["read"])
      .annotate(
        OpenApi.Summary,
        "List the events whose audience includes you, newest first (filters: type, created_after, created_before); " +
          "or, with after, the events that follow that one, oldest first, to catch up without skipping; " +
          "each item is the event exactly as delivered"
      )
  )
  .add(
    HttpApiEndpoint.get("get")`/events/${id}`
      .addSuccess(Success(Event))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "Read an event exactly as delivered; 404 unless you are in its audience")
  )
  .middleware(Authentication) {}
