import { Schema } from "effect"
import { eventTypes } from "./Vocabulary.js"

export { eventTypes }

export const EventType = Schema.Literal(...eventTypes).annotations({
  identifier: "EventType",
  message: () => `must be one of: ${eventTypes.join(", ")}`
})
export type EventType = typeof EventType.Type
