/**
 * Teams managed through the API (a team now has `updated_at`), invitations to join them, and deployments of
 * projects. Deleting a team deletes its invitations; deleting a project deletes its deployments.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE teams ADD COLUMN updated_at TEXT NOT NULL DEFAULT ''`
  yield* sql`UPDATE teams SET updated_at = created_at`
  yield* sql`CREATE INDEX team_members_team_role ON team_members (team_id, role)`
  yield* sql`
    CREATE TABLE invitations (
      id TEXT PRIMARY KEY,
      team_id TEXT NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
      email TEXT NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
      status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'declined', 'revoked', 'expired')),
      invited_by TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at TEXT NOT NULL,
      expires_at TEXT NOT NULL,
      answered_at TEXT
    )`
  // One open invitation per team and email; a stale one is marked expired before a new one is written.
  yield* sql`CREATE UNIQUE INDEX invitations_pending ON invitations (team_id, email) WHERE status = 'pending'`
  yield* sql`CREATE INDEX invitations_team_created ON invitations (team_id, created_at, id)`
  yield* sql`CREATE INDEX invitations_email_created ON invitations (email, created_at, id)`
  yield* sql`
    CREATE TABLE deployments (
      id TEXT PRIMARY KEY,
      project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
      environment TEXT NOT NULL,
      ref TEXT NOT NULL,
      description TEXT NOT NULL DEFAULT '',
      status TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
      created_by TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      finished_at TEXT
    )`
  yield* sql`CREATE INDEX deployments_project_created ON deployments (project_id, created_at, id)`
})
