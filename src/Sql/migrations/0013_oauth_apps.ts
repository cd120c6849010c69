/**
 * Self-service OAuth: clients get an owner (the user who registered them through `/v1/oauth-clients`; NULL for the
 * operator's CLI clients, which no user lists) and an `updated_at`; a user's consent to a client becomes a grant
 * (`oauth_grants`, one per user and client), and every code and token points at the grant it was issued under, so
 * deleting the grant (`DELETE /v1/authorizations/:id`) or the client deletes its codes and tokens by cascade.
 *
 * Tokens and codes already there are given grants: one per user and client that still has a live token or an
 * unspent, unexpired code, its scopes the union of theirs. Rows of a user and client with nothing live keep a NULL
 * grant (nothing to list or revoke).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { makeId } from "../../Domain/Ids.js"
import { scopeText, storedScopes } from "../../Domain/OAuth.js"
import type { Scope } from "../../Domain/Scopes.js"

interface IssuedRow {
  readonly user_id: string
  readonly client_id: string
  readonly scope: string
  readonly created_at: string
}

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE oauth_clients ADD COLUMN owner_id TEXT REFERENCES users (id) ON DELETE CASCADE`
  yield* sql`ALTER TABLE oauth_clients ADD COLUMN updated_at TEXT`
  yield* sql`UPDATE oauth_clients SET updated_at = created_at`
  yield* sql`CREATE INDEX oauth_clients_owner ON oauth_clients (owner_id, created_at, id)`
  yield* sql`
    CREATE TABLE oauth_grants (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
      scope TEXT NOT NULL,
      created_at TEXT NOT NULL,
      last_used_at TEXT,
      UNIQUE (user_id, client_id)
    )`
  yield* sql`CREATE INDEX oauth_grants_user ON oauth_grants (user_id, created_at, id)`
  yield* sql`CREATE INDEX oauth_grants_client ON oauth_grants (client_id)`
  yield* sql`ALTER TABLE oauth_codes ADD COLUMN grant_id TEXT REFERENCES oauth_grants (id) ON DELETE CASCADE`
  yield* sql`ALTER TABLE oauth_tokens ADD COLUMN grant_id TEXT REFERENCES oauth_grants (id) ON DELETE CASCADE`
  yield* sql`CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id)`
  yield* sql`CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id)`

  const now = new Date().toISOString()
  const live = yield* sql<IssuedRow>`
    SELECT user_id, client_id, scope, created_at FROM oauth_tokens WHERE revoked_at IS NULL AND expires_at > ${now}
    UNION ALL
    SELECT user_id, client_id, scope, created_at FROM oauth_codes WHERE used_at IS NULL AND expires_at > ${now}`
  const grants = new Map<string, { userId: string; clientId: string; scopes: Set<Scope>; createdAt: string }>()
  for (const row of live) {
    const key = `${row.user_id} ${row.client_id}`
    const grant = grants.get(key) ?? {
      userId: row.user_id,
      clientId: row.client_id,
      scopes: new Set<Scope>(),
      createdAt: row.created_at
    }
    for (const scope of storedScopes(row.scope)) grant.scopes.add(scope)
    if (row.created_at < grant.createdAt) grant.createdAt = row.created_at
    grants.set(key, grant)
  }
  for (const grant of grants.values()) {
    const id = makeId("grant")
    yield* sql`INSERT INTO oauth_grants ${sql.insert({
      id,
      user_id: grant.userId,
      client_id: grant.clientId,
      scope: scopeText(storedScopes(Array.from(grant.scopes).join(" "))),
      created_at: grant.createdAt,
      last_used_at: null
    })}`
    yield* sql`UPDATE oauth_codes SET grant_id = ${id} WHERE user_id = ${grant.userId} AND client_id = ${grant.clientId}`
    yield* sql`UPDATE oauth_tokens SET grant_id = ${id} WHERE user_id = ${grant.userId} AND client_id = ${grant.clientId}`
  }
})
