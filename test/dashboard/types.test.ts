/**
 * The dashboard is bundled for the browser without the service's schemas (they would bring Effect into the page),
 * so it spells out the event types and scopes it offers as checkboxes. They must stay the service's own lists:
 * a new event type or scope the dashboard did not offer would be one a person could not choose.
 */
import { expect, test } from "bun:test"
import * as Dashboard from "../../dashboard/types.ts"
import { eventTypes } from "../../src/Domain/EventTypes.ts"
import { scopeNames } from "../../src/Domain/Scopes.ts"

test("the dashboard offers exactly the service's event types and scopes, in its order", () => {
  expect([...Dashboard.eventTypes]).toEqual([...eventTypes])
  expect([...Dashboard.scopes]).toEqual([...scopeNames])
})
