/**
 * The event catalogue: for each type an event can have (the nine subscribable ones and `webhook.test`), the schema
 * its data is encoded with when the event is written (`Events.emit`, `Events.emitTest`), a one-line description
 * and an example. `GET /v1/event-types` publishes it, the JSON Schema of each data made from that same schema, so
 * what a receiver is told and what it is sent cannot drift apart.
 */
import { type Effect, JSONSchema, type ParseResult, Schema } from "effect"
import type { Actor } from "./Audit.js"
import { Deployment } from "./Deployment.js"
import { type EventType, eventTypes } from "./EventTypes.js"
import { Stored } from "./Ids.js"
import { Project } from "./Project.js"
import { MemberEvent } from "./Team.js"
import { TEST_EVENT } from "./Webhook.js"

/** Every type an event can have: the subscribable ones and the test event. */
export type CatalogueType = EventType | typeof TEST_EVENT
export const catalogueTypes: ReadonlyArray<CatalogueType> = [...eventTypes, TEST_EVENT]

/** The data of a `webhook.test` event: the webhook it was sent to. */
export const TestEventData = Schema.Struct({ webhook_id: Stored.WebhookId }).annotations({
  identifier: "TestEventData"
})

export interface CatalogueEntry {
  readonly type: CatalogueType
  readonly description: string
  /** The event's data as written: encoded by its schema (a defect if it does not match it). */
  readonly encode: (data: unknown) => Effect.Effect<unknown, ParseResult.ParseError>
  /** The JSON Schema of data, made from the same schema. */
  readonly schema: JSONSchema.JsonSchema7Root
  /** A delivery body as a receiver gets it: `{id, type, created_at, actor, data}`. */
  readonly example: {
    readonly id: string
    readonly type: CatalogueType
    readonly created_at: string
    readonly actor: Actor
    readonly data: unknown
  }
}

const EXAMPLE_TIME = "2026-01-31T12:00:00.000Z"
const EXAMPLE_EVENT_ID = "evt_01kg7xq2m0a7vd3k9x4t8e5hbn"
/** Who the examples' changes are by: a user through the API (the CLI's are `{type: "operator"}`). */
const EXAMPLE_ACTOR: Actor = { type: "user", id: "usr_01kg7xnv8h2k4m6p8r0t2v4x6z", name: "Grace Hopper" }

const entry = <A, I>(
  type: CatalogueType,
  description: string,
  data: Schema.Schema<A, I>,
  example: NoInfer<A>
): CatalogueEntry => {
  const encode = Schema.encodeUnknown(data)
  return {
    type,
    description,
    encode: (value) => encode(value),
    schema: JSONSchema.make(data),
    example: {
      id: EXAMPLE_EVENT_ID,
      type,
      created_at: EXAMPLE_TIME,
      actor: EXAMPLE_ACTOR,
      data: Schema.encodeSync(data)(example)
    }
  }
}

const project: Project = {
  id: Stored.ProjectId.make("proj_01kg7xpz3c5m2q8r4w6y9b1dfe"),
  name: "Website redesign",
  description: "The new marketing site",
  visibility: "team",
  status: "active",
  owner_id: "usr_01kg7xnv8h2k4m6p8r0t2v4x6z",
  team_id: "team_01kg7xp4b6d8f0h2j4k6m8n0pq",
  created_at: EXAMPLE_TIME,
  updated_at: EXAMPLE_TIME
}

const member: MemberEvent = {
  team_id: "team_01kg7xp4b6d8f0h2j4k6m8n0pq",
  user_id: "usr_01kg7xr1s3t5v7w9x1y3z5a7b9",
  email: "ada@example.com",
  role: "member"
}

const deployment: Deployment = {
  id: Stored.DeploymentId.make("dpl_01kg7xs5c7d9e1f3g5h7j9k1m3"),
  project_id: project.id,
  environment: "production",
  ref: "v1.4.2",
  description: "",
  status: "running",
  created_by: project.owner_id,
  created_at: EXAMPLE_TIME,
  updated_at: EXAMPLE_TIME,
  finished_at: null
}
const finished = (status: "succeeded" | "failed"): Deployment => ({
  ...deployment,
  status,
  updated_at: "2026-01-31T12:03:00.000Z",
  finished_at: "2026-01-31T12:03:00.000Z"
})

/** Each type's entry; the type says every one has one. */
const catalogue: { readonly [T in CatalogueType]: CatalogueEntry } = {
  "project.created": entry("project.created", "A project was created; data is the project.", Project, project),
  "project.updated": entry("project.updated", "A project was changed; data is the project as it is now.", Project, {
    ...project,
    name: "Website relaunch",
    updated_at: "2026-01-31T12:05:00.000Z"
  }),
  "project.deleted": entry(
    "project.deleted",
    "A project was deleted; data is the project as it was.",
    Project,
    project
  ),
  "member.invited": entry(
    "member.invited",
    "Someone was invited to a team; data.user_id is null unless they already have an account.",
    MemberEvent,
    { ...member, user_id: null }
  ),
  "member.joined": entry(
    "member.joined",
    "A user joined a team (accepted an invitation or was added).",
    MemberEvent,
    member
  ),
  "member.removed": entry("member.removed", "A member left a team or was removed from it.", MemberEvent, member),
  "deployment.started": entry(
    "deployment.started",
    "A deployment of a project started; data is the deployment.",
    Deployment,
    deployment
  ),
  "deployment.completed": entry(
    "deployment.completed",
    "A deployment finished with success; data is the deployment.",
    Deployment,
    finished("succeeded")
  ),
  "deployment.failed": entry(
    "deployment.failed",
    "A deployment finished with a failure; data is the deployment.",
    Deployment,
    finished("failed")
  ),
  [TEST_EVENT]: entry(
    TEST_EVENT,
    "Sent to one webhook by POST /v1/webhooks/{id}/test; it cannot be subscribed to.",
    TestEventData,
    { webhook_id: Stored.WebhookId.make("whk_01kg7xt9e1f3g5h7j9k1m3n5p7") }
  )
}

/** The catalogue, in the order of `catalogueTypes`. */
export const eventCatalogue: ReadonlyArray<CatalogueEntry> = catalogueTypes.map((type) => catalogue[type])

/** The catalogue's entry for `type`. */
export const catalogueEntry = (type: CatalogueType): CatalogueEntry => catalogue[type]
