import { Schema } from "effect"
import { scopeNames } from "./Vocabulary.js"

export { scopeNames }
export const Scope = Schema.Literal(...scopeNames).annotations({
  identifier: "Scope",
  message: () => `must be one of: ${scopeNames.join(", ")}`
})
export type Scope = typeof Scope.Type

/**
 * Whether a set of granted scopes includes `needed`: exactly, or through the broad `read` / `write`
 * (which stand for every `*:read` / `*:write` scope). `team:manage` is only ever granted by name.
 */
export const grants = (granted: ReadonlyArray<Scope>, needed: Scope): boolean =>
  granted.includes(needed) ||
  (needed.endsWith(":read") && granted.includes("read")) ||
  (needed.endsWith(":write") && granted.includes("write"))

/** True when the credential holds at least one of `anyOf` (the table in decisions.md, taken literally). */
export const hasAnyScope = (granted: ReadonlyArray<Scope>, anyOf: ReadonlyArray<Scope>): boolean =>
  anyOf.some((scope) => granted.includes(scope))
