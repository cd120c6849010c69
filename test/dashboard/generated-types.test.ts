// engine-independent: the dashboard's types against the contract; no database
/**
 * The dashboard's types are generated from the service's OpenAPI document (scripts/generate-dashboard-types.ts)
 * into dashboard/generated/api.ts, which is checked in: it must be what the contract generates now, so a change of
 * the contract that is not regenerated fails here (and in CI's `bun run check:dashboard-types`). The lists the
 * dashboard offers as checkboxes (event types, scopes, audit actions) are values, not types: the service's own
 * (src/Domain/Vocabulary.ts), which the contract's enumerations must list in the same order.
 */
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import * as Dashboard from "../../dashboard/types.ts"
import { currentDocument, GENERATED, generate } from "../../scripts/generate-dashboard-types.ts"

test("dashboard/generated/api.ts is what the contract generates (bun run generate:dashboard-types)", async () => {
  expect(readFileSync(GENERATED, "utf8")).toBe(await generate())
}, 60_000)

test("a contract changed without regenerating is told apart", async () => {
  const document: any = structuredClone(currentDocument())
  document.components.schemas.Project.properties.name.description = "changed by the test"
  const changed = document
  const regenerated = await generate(changed)
  expect(regenerated).toContain("changed by the test")
  expect(regenerated).not.toBe(readFileSync(GENERATED, "utf8"))
}, 60_000)

test("the dashboard offers exactly the contract's event types, scopes and audit actions, in its order", () => {
  const document: any = currentDocument()
  const schemas = document.components.schemas
  expect([...Dashboard.eventTypes]).toEqual(schemas.EventType.enum)
  expect([...Dashboard.scopes]).toEqual(schemas.Scope.enum)
  expect([...Dashboard.auditActions]).toEqual(schemas.AuditRecord.properties.action.enum)
})
