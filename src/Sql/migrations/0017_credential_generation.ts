/**
 * A number that changes whenever an API key's credential may have changed, so the `credential-cache` fast path
 * (src/ApiKeys/Credentials.ts) can tell, with one read, that what it learnt about a key still holds. Kept by
 * triggers in the writing transaction, whoever writes (the HTTP API, the CLI in another process, a foreign-key
 * cascade when a user is deleted): any update of a key's columns but `last_used_at` and `name`, any deletion of a
 * key, any update of a user's id or organisation, any deletion of a user. Making a key moves nothing: a request
 * whose key is not among those kept looks it up.
 *
 * SQLite only: there the number is read on a connection of the cache's own, with no statement through `@effect/sql`.
 * On PostgreSQL reading it would be a round trip, as the lookup it would save is, so the twin runs there.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

const bump = "UPDATE credential_generation SET n = n + 1 WHERE id = 1;"

const sqlite: ReadonlyArray<string> = [
  `CREATE TABLE credential_generation (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL)`,
  `INSERT INTO credential_generation (id, n) VALUES (1, 0)`,
  `CREATE TRIGGER credential_generation_key_update
    AFTER UPDATE OF id, user_id, scopes, prefix, key_hash, created_at, expires_at, revoked_at ON api_keys
    BEGIN ${bump} END`,
  `CREATE TRIGGER credential_generation_key_delete AFTER DELETE ON api_keys BEGIN ${bump} END`,
  `CREATE TRIGGER credential_generation_user_update AFTER UPDATE OF id, org_id ON users BEGIN ${bump} END`,
  // Its keys go with it (a cascade, counted above); this counts a deletion made with foreign keys off as well.
  `CREATE TRIGGER credential_generation_user_delete AFTER DELETE ON users BEGIN ${bump} END`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const statement of sql.onDialectOrElse({ pg: () => [], orElse: () => sqlite })) yield* sql.unsafe(statement)
})
