/**
 * An event as the feed answers it: the envelope every delivery of it sends, `{id, type, created_at, actor, data}`. It is
 * read from the stored payload (`EventFromPayload`) and encoded back with its fields in the payload's order and
 * `data` untouched, so an item's JSON text is the delivered body, byte for byte.
 */
import { ParseResult, Schema } from "effect"
import { Actor } from "./Audit.js"
import { EventType, eventTypes } from "./EventTypes.js"
import { Stored } from "./Ids.js"
import { Timestamp } from "./Time.js"

export const Event = Schema.Struct({
  id: Stored.EventId,
  type: EventType,
  created_at: Timestamp,
  /** Who made the change (absent only from events written before actors were recorded). */
  actor: Schema.optionalWith(Actor, { exact: true }),
  data: Schema.Unknown.annotations({ description: "The resource the event is about, as it was then" })
}).annotations({ identifier: "Event" })
export type Event = typeof Event.Type

/** The stored payload (the envelope's JSON text) as an `Event`. */
export const EventFromPayload = Schema.parseJson(Event)

const isEventType = Schema.is(EventType)

/**
 * The feed's `type` filter: one event type, or several separated by commas (`project.created,project.deleted`);
 * each must be one of the nine types. Decodes to the distinct types asked for.
 */
export const EventTypeFilter = Schema.transformOrFail(Schema.String, Schema.Array(EventType), {
  strict: true,
  decode: (input, _, ast) => {
    const asked = input.split(",").map((name) => name.trim())
    const unknown = asked.filter((name) => !isEventType(name))
    if (unknown.length === 0) return ParseResult.succeed(Array.from(new Set(asked.filter(isEventType))))
    const shown = unknown.map((name) => (name === "" ? "an empty name" : JSON.stringify(name))).join(", ")
    return ParseResult.fail(
      new ParseResult.Type(
        ast,
        input,
        `has ${shown}: must be one or more of ${eventTypes.join(", ")}, separated by commas`
      )
    )
  },
  encode: (types) => ParseResult.succeed(types.join(","))
}).annotations({
  description: `One event type, or several separated by commas (e.g. member.joined,member.removed): ${eventTypes.join(", ")}`
})
