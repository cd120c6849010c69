import type { SqlError } from "@effect/sql/SqlError"

/** A unique-key clash: SQLite `SQLITE_CONSTRAINT_UNIQUE` / `SQLITE_CONSTRAINT_PRIMARYKEY`, PostgreSQL `23505`. */
export const isUniqueViolation = (error: SqlError): boolean => {
  const cause = error.cause
  if (cause === null || typeof cause !== "object" || !("code" in cause)) return false
  return (
    cause.code === "23505" || cause.code === "SQLITE_CONSTRAINT_UNIQUE" || cause.code === "SQLITE_CONSTRAINT_PRIMARYKEY"
  )
}

/** The keys of a partial update that were given (JSON has no `undefined`, but a service caller might pass one). */
export const definedOnly = <A extends object>(patch: A): Partial<A> => {
  const out: Partial<A> = {}
  for (const [key, value] of Object.entries(patch)) {
    if (value !== undefined) Reflect.set(out, key, value)
  }
  return out
}

/** SQLSTATE classes and codes a client may retry: the connection, the server's state, a lost race between transactions. */
const RETRYABLE_SQLSTATE = /^(08|53|57P0[1-4]|40001|40P01)/
/** Socket-level failures reported by Node's `net` (and so by the PostgreSQL client). */
const NETWORK_ERRNO = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN"
])

/**
 * Whether a database failure is the database being out of reach rather than the statement being wrong, so the
 * request may be retried (503) rather than being a defect (500). Decided from the error's structure:
 *
 * - PostgreSQL errors the server reported carry a SQLSTATE: connection exceptions (class 08), insufficient
 *   resources (53), operator intervention (57P01–57P04: the backend was terminated, the server is shutting down
 *   or starting), serialization failures and deadlocks (40001, 40P01);
 * - socket errors carry an errno code (`ECONNRESET`, …);
 * - the PostgreSQL client's own failures on a dead connection ("terminated unexpectedly", "not queryable", a
 *   connect time-out) are plain `Error`s without a code, where a programming error is a `TypeError` or alike;
 * - SQLite: `SQLITE_BUSY` and `SQLITE_LOCKED` (and their extended codes).
 */
export const isUnavailable = (error: SqlError): boolean => {
  const cause: unknown = error.cause
  if (!(cause instanceof Error)) return false
  const code = "code" in cause && typeof cause.code === "string" ? cause.code : undefined
  if (code === undefined) return cause.name === "Error"
  return (
    code.startsWith("SQLITE_BUSY") ||
    code.startsWith("SQLITE_LOCKED") ||
    NETWORK_ERRNO.has(code) ||
    (/^[0-9A-Z]{5}$/.test(code) && RETRYABLE_SQLSTATE.test(code))
  )
}
