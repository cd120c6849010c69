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
