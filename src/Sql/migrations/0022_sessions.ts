/**
 * Sessions that end, and users who can be stopped (decisions.md "Sessions that end, and users who can be stopped").
 *
 * - `sessions`: one row per sign-in (`POST {auth_url}/login`); the session JWT names it in its `sid` claim. Revoked
 *   (`revoked_at`) by logout or by its user; gone with its user (`ON DELETE CASCADE`), so a deleted user's JWT
 *   finds no session. `last_used_at` is written at most once a minute, as an API key's is.
 * - `users.suspended_at`: set by `cli users suspend`, cleared by `users reactivate`. Every credential of a suspended
 *   user is refused while it is set; nothing is deleted.
 * - SQLite: the credential cache's generation (migration 0017) now fails closed. Its triggers fire on every update and
 *   deletion of the tables the cache reads (`api_keys`, `users`, `sessions`), whatever column changes, except an
 *   update that changes a row's `last_used_at` and none of the columns listed in `CACHE_READS` (the touch the cache
 *   makes itself, at most once a minute a credential). A column added later moves the number whenever it alone
 *   changes; test/apikeys/credential-generation.test.ts compares each table's columns with `CACHE_READS`, so a new
 *   one forces a decision here.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/** Every column of the tables the credential cache reads, as this migration leaves them. */
export const CACHE_READS = {
  api_keys: [
    "id",
    "user_id",
    "name",
    "scopes",
    "prefix",
    "key_hash",
    "created_at",
    "expires_at",
    "last_used_at",
    "revoked_at"
  ],
  users: ["id", "org_id", "email", "name", "avatar_url", "password_hash", "created_at", "updated_at", "suspended_at"],
  sessions: ["id", "user_id", "created_at", "last_used_at", "ip", "user_agent", "revoked_at", "expires_at"]
} as const

const bump = "UPDATE credential_generation SET n = n + 1 WHERE id = 1;"

/** An update that moved `last_used_at` and nothing else of `columns`: the touch, which the cache learns of itself. */
const touchOnly = (columns: ReadonlyArray<string>) =>
  [
    "OLD.last_used_at IS NOT NEW.last_used_at",
    ...columns.filter((column) => column !== "last_used_at").map((column) => `OLD.${column} IS NEW.${column}`)
  ].join(" AND ")

const sqlite: ReadonlyArray<string> = [
  `DROP TRIGGER IF EXISTS credential_generation_key_update`,
  `DROP TRIGGER IF EXISTS credential_generation_key_delete`,
  `DROP TRIGGER IF EXISTS credential_generation_user_update`,
  `DROP TRIGGER IF EXISTS credential_generation_user_delete`,
  `CREATE TRIGGER credential_generation_key_update AFTER UPDATE ON api_keys
    WHEN NOT (${touchOnly(CACHE_READS.api_keys)}) BEGIN ${bump} END`,
  `CREATE TRIGGER credential_generation_key_delete AFTER DELETE ON api_keys BEGIN ${bump} END`,
  `CREATE TRIGGER credential_generation_user_update AFTER UPDATE ON users BEGIN ${bump} END`,
  `CREATE TRIGGER credential_generation_user_delete AFTER DELETE ON users BEGIN ${bump} END`,
  `CREATE TRIGGER credential_generation_session_update AFTER UPDATE ON sessions
    WHEN NOT (${touchOnly(CACHE_READS.sessions)}) BEGIN ${bump} END`,
  `CREATE TRIGGER credential_generation_session_delete AFTER DELETE ON sessions BEGIN ${bump} END`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE sessions (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at TEXT NOT NULL,
      last_used_at TEXT,
      ip TEXT,
      user_agent TEXT,
      revoked_at TEXT,
      expires_at TEXT NOT NULL
    )`
  yield* sql`CREATE INDEX sessions_user_created ON sessions (user_id, created_at, id)`
  yield* sql`ALTER TABLE users ADD COLUMN suspended_at TEXT`
  for (const statement of sql.onDialectOrElse({ pg: () => [], orElse: () => sqlite })) yield* sql.unsafe(statement)
})
