/**
 * Each scope in one line, for a person choosing the scopes of a credential (the dashboard's new-key form);
 * docs/scopes.md has the endpoints each one opens. Plain data with no import but a type, so the dashboard's bundle
 * takes it without Effect.
 */
import type { Scope } from "./Scopes.js"

export const scopeDescriptions: Readonly<Record<Scope, string>> = {
  read: "Read everything you can see",
  write: "Change what you can: projects, deployments, your profile, API keys, webhooks, OAuth apps",
  "projects:read": "Read projects and their deployments only",
  "projects:write": "Change projects and their deployments only",
  "team:manage": "Manage teams: members, roles and invitations (and read them)",
  "billing:read": "A valid scope that no endpoint uses yet"
}
