/**
 * The dashboard is bundled for the browser without the service's schemas (they would bring Effect into the page),
 * so it spells out the event types and scopes it offers as checkboxes. They must stay the service's own lists:
 * a new event type or scope the dashboard did not offer would be one a person could not choose.
 */
import { expect, test } from "bun:test"
import * as Dashboard from "../../dashboard/types.ts"
import { AuditRecord, auditActions } from "../../src/Domain/Audit.ts"
import { eventTypes } from "../../src/Domain/EventTypes.ts"
import { scopeNames } from "../../src/Domain/Scopes.ts"
import { Session } from "../../src/Domain/Session.ts"
import { EventDelivery, WebhookHealth, WebhookWithHealth } from "../../src/Domain/Webhook.ts"

test("the dashboard offers exactly the service's event types and scopes, in its order", () => {
  expect([...Dashboard.eventTypes]).toEqual([...eventTypes])
  expect([...Dashboard.scopes]).toEqual([...scopeNames])
})

test("the dashboard's Session is the contract's: the same fields, and a record of the contract is one", () => {
  // Checked by the type checker: what the service encodes is what the dashboard reads.
  const asDashboard = (session: typeof Session.Type): Dashboard.Session => session
  const sample: typeof Session.Type = {
    id: "ses_01jd3xkq8w0000000000000000",
    created_at: "2026-11-28T00:00:00.000Z",
    last_used_at: null,
    ip: "127.0.0.1",
    user_agent: null,
    current: true
  }
  expect(Object.keys(asDashboard(sample)).sort()).toEqual(Object.keys(Session.fields).sort())
})

test("the dashboard's audit actions and AuditRecord are the contract's", () => {
  expect([...Dashboard.auditActions]).toEqual([...auditActions])
  // Checked by the type checker: a record the service encodes is one the dashboard reads.
  const asDashboard = (record: typeof AuditRecord.Encoded): Dashboard.AuditRecord => record
  const sample: typeof AuditRecord.Encoded = {
    id: "aud_01jd3xkq8w0000000000000000",
    action: "project.updated",
    actor: { type: "user", id: "usr_01jd3xkq8w0000000000000000", name: "Ann" },
    credential: { type: "session", id: "ses_01jd3xkq8w0000000000000000" },
    target: { type: "project", id: "prj_01jd3xkq8w0000000000000000" },
    target_name: "Apollo",
    team_id: null,
    ip: "127.0.0.1",
    user_agent: null,
    request_id: null,
    created_at: "2026-11-28T00:00:00.000Z",
    changes: { name: ["Old", "Apollo"] }
  }
  expect(Object.keys(asDashboard(sample)).sort()).toEqual(Object.keys(AuditRecord.fields).sort())
})

test("the dashboard's webhook list item (with health) and an event's delivery are the contract's", () => {
  // Checked by the type checker: what the service encodes is what the dashboard reads.
  const asListed = (hook: typeof WebhookWithHealth.Encoded): Dashboard.WebhookWithHealth => hook
  const asEventDelivery = (delivery: typeof EventDelivery.Encoded): Dashboard.EventDelivery => delivery
  const hook: typeof WebhookWithHealth.Encoded = {
    id: "whk_01jd3xkq8w0000000000000000",
    url: "https://example.com/hooks",
    events: ["project.created"],
    status: "active",
    signature: "hmac",
    public_key: null,
    previous_public_key: null,
    created_at: "2026-11-28T00:00:00.000Z",
    updated_at: "2026-11-28T00:00:00.000Z",
    failed_at: null,
    disabled_at: null,
    health: {
      last_attempt_at: "2026-11-28T00:00:01.000Z",
      last_status_code: 200,
      last_outcome: "succeeded",
      attempts_24h: 3,
      success_rate_24h: 0.6667
    }
  }
  const listed = asListed(hook)
  expect(Object.keys(listed).sort()).toEqual(Object.keys(WebhookWithHealth.fields).sort())
  expect(Object.keys(listed.health ?? {}).sort()).toEqual(Object.keys(WebhookHealth.fields).sort())
  const delivery: typeof EventDelivery.Encoded = {
    id: "dlv_01jd3xkq8w0000000000000000",
    webhook_id: "whk_01jd3xkq8w0000000000000000",
    event_id: "evt_01jd3xkq8w0000000000000000",
    event_type: "project.created",
    status: "delivered",
    attempt_count: 1,
    next_attempt_at: null,
    last_attempt_at: "2026-11-28T00:00:01.000Z",
    last_status_code: 200,
    resource_name: "Apollo",
    created_at: "2026-11-28T00:00:00.000Z",
    webhook_url: "https://example.com/hooks"
  }
  expect(Object.keys(asEventDelivery(delivery)).sort()).toEqual(Object.keys(EventDelivery.fields).sort())
})
