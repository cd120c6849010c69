import { Schema } from "effect"

export const eventTypes = [
  "project.created",
  "project.updated",
  "project.deleted",
  "member.invited",
  "member.joined",
  "member.removed",
  "deployment.started",
  "deployment.completed",
  "deployment.failed"
] as const

export const EventType = Schema.Literal(...eventTypes).annotations({
  identifier: "EventType",
  message: () => `must be one of: ${eventTypes.join(", ")}`
})
export type EventType = typeof EventType.Type
