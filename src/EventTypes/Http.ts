import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Api } from "../Api.js"
import { eventCatalogue } from "../Domain/EventCatalogue.js"

const items = eventCatalogue.map(({ description, example, schema, type }) => ({ type, description, schema, example }))
const page = { items, total: items.length, page: 1, per_page: items.length }

export const EventTypesHttp = HttpApiBuilder.group(Api, "eventTypes", (handlers) =>
  handlers.handle("list", () => Effect.succeed(page))
)
