/**
 * The OAuth 2.0 authorization server and JWT sessions: clients, pending authorizations (the sign-in and consent
 * forms), authorization codes, access and refresh tokens, and the JWT signing keys. Secrets, codes and tokens are
 * stored only as SHA-256 (hex).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE oauth_clients (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      secret_hash TEXT,
      redirect_uris TEXT NOT NULL,
      is_public INTEGER NOT NULL,
      created_at TEXT NOT NULL
    )`
  yield* sql`
    CREATE TABLE oauth_authorizations (
      id TEXT PRIMARY KEY,
      client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
      redirect_uri TEXT NOT NULL,
      scope TEXT NOT NULL,
      state TEXT,
      code_challenge TEXT,
      user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
      stage TEXT NOT NULL CHECK (stage IN ('sign_in', 'consent')),
      csrf_hash TEXT NOT NULL,
      created_at TEXT NOT NULL,
      expires_at TEXT NOT NULL
    )`
  yield* sql`
    CREATE TABLE oauth_codes (
      id TEXT PRIMARY KEY,
      code_hash TEXT NOT NULL UNIQUE,
      client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      redirect_uri TEXT NOT NULL,
      scope TEXT NOT NULL,
      code_challenge TEXT,
      created_at TEXT NOT NULL,
      expires_at TEXT NOT NULL,
      used_at TEXT
    )`
  yield* sql`
    CREATE TABLE oauth_tokens (
      id TEXT PRIMARY KEY,
      token_hash TEXT NOT NULL UNIQUE,
      kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
      client_id TEXT NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      scope TEXT NOT NULL,
      family_id TEXT NOT NULL,
      created_at TEXT NOT NULL,
      expires_at TEXT NOT NULL,
      used_at TEXT,
      revoked_at TEXT
    )`
  yield* sql`CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id)`
  yield* sql`
    CREATE TABLE jwt_signing_keys (
      kid TEXT PRIMARY KEY,
      private_jwk TEXT NOT NULL,
      public_jwk TEXT NOT NULL,
      created_at TEXT NOT NULL,
      retired_at TEXT
    )`
})
