import type { SqlError } from "@effect/sql/SqlError"

/** A unique-key clash: SQLite `SQLITE_CONSTRAINT_UNIQUE` / `SQLITE_CONSTRAINT_PRIMARYKEY`, PostgreSQL `23505`. */
export const isUniqueViolation = (error: SqlError): boolean => {
  const cause = error.cause
  if (cause === null || typeof cause !== "object" || !("code" in cause)) return false
  return cause.code === "23505" || cause.code === "SQLITE_CONSTRAINT_UNIQUE" ||
    cause.code === "SQLITE_CONSTRAINT_PRIMARYKEY"
}

/** The keys of a partial update that were given (JSON has no `undefined`, but a service caller might pass one). */
export const definedOnly = <A extends object>(patch: A): Partial<A> => {
  const out: Partial<A> = {}
  for (const [key, value] of Object.entries(patch)) {
    if (value !== undefined) Reflect.set(out, key, value)
  }
  return out
}
