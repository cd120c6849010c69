/**
 * Users, organisations, teams, projects and API keys. Ids and timestamps are TEXT on both engines: ids are
 * prefixed strings, timestamps ISO 8601 UTC with milliseconds (fixed width, so they sort and compare as text).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE orgs (
      id TEXT PRIMARY KEY,
      name TEXT NOT NULL,
      created_at TEXT NOT NULL
    )`
  yield* sql`
    CREATE TABLE users (
      id TEXT PRIMARY KEY,
      org_id TEXT NOT NULL REFERENCES orgs (id),
      email TEXT NOT NULL UNIQUE,
      name TEXT NOT NULL,
      avatar_url TEXT,
      password_hash TEXT,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`
  yield* sql`
    CREATE TABLE teams (
      id TEXT PRIMARY KEY,
      org_id TEXT NOT NULL REFERENCES orgs (id),
      name TEXT NOT NULL,
      created_at TEXT NOT NULL
    )`
  yield* sql`
    CREATE TABLE team_members (
      team_id TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
      joined_at TEXT NOT NULL,
      PRIMARY KEY (team_id, user_id)
    )`
  yield* sql`CREATE INDEX team_members_user ON team_members (user_id)`
  yield* sql`
    CREATE TABLE projects (
      id TEXT PRIMARY KEY,
      owner_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      team_id TEXT REFERENCES teams (id) ON DELETE SET NULL,
      name TEXT NOT NULL,
      description TEXT NOT NULL DEFAULT '',
      visibility TEXT NOT NULL CHECK (visibility IN ('private', 'team', 'public')),
      status TEXT NOT NULL CHECK (status IN ('active', 'archived')),
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`
  yield* sql`CREATE INDEX projects_owner_created ON projects (owner_id, created_at, id)`
  yield* sql`CREATE INDEX projects_team ON projects (team_id) WHERE team_id IS NOT NULL`
  yield* sql`
    CREATE TABLE api_keys (
      id TEXT PRIMARY KEY,
      user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      scopes TEXT NOT NULL,
      prefix TEXT NOT NULL,
      key_hash TEXT NOT NULL UNIQUE,
      created_at TEXT NOT NULL,
      expires_at TEXT,
      last_used_at TEXT,
      revoked_at TEXT
    )`
  yield* sql`CREATE INDEX api_keys_prefix ON api_keys (prefix)`
  yield* sql`CREATE INDEX api_keys_user_created ON api_keys (user_id, created_at, id)`
})
