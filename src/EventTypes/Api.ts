import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { List } from "../Contract/Envelope.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { Actor } from "../Domain/Audit.js"
import { scopeNames } from "../Domain/Scopes.js"
import { Timestamp } from "../Domain/Time.js"
import { DeliveryEventType } from "../Domain/Webhook.js"

/** One entry of the event catalogue (src/Domain/EventCatalogue.ts) as `GET /v1/event-types` answers it. */
export const EventTypeInfo = Schema.Struct({
  type: DeliveryEventType,
  description: Schema.String.annotations({ description: "What happened, in one line" }),
  schema: Schema.Object.annotations({
    jsonSchema: { type: "object" },
    description:
      "The JSON Schema (draft-07) of the event's `data`, made from the schema the service encodes `data` with"
  }),
  example: Schema.Struct({
    id: Schema.String,
    type: DeliveryEventType,
    created_at: Timestamp,
    actor: Actor,
    data: Schema.Unknown.annotations({ description: "An example of `data`; it validates against `schema`" })
  }).annotations({ description: "A delivery body as a receiver gets it", identifier: "EventTypeExample" })
}).annotations({ identifier: "EventTypeInfo" })

/** The event catalogue: what each event a webhook can receive means and what its `data` looks like. */
export class EventTypesApi extends HttpApiGroup.make("eventTypes")
  .add(
    HttpApiEndpoint.get("list", "/event-types")
      .addSuccess(List(EventTypeInfo))
      // Any authenticated caller: a credential holds at least one scope, and any one will do.
      .annotate(RequiredScopes, scopeNames)
      .annotate(
        OpenApi.Summary,
        "List the event types, each with a description, the JSON Schema of its data and an example"
      )
      .annotate(
        OpenApi.Description,
        "The nine types a webhook can subscribe to and `webhook.test`, in one page. Each `schema` is the JSON " +
          "Schema of that type's `data`, derived from the schema the service encodes the data with, so it holds " +
          "for every delivery of that type; `example` is a whole delivery body. Any valid credential may read it."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Description, "The event catalogue: the types a webhook receives and the shape of their data") {}
