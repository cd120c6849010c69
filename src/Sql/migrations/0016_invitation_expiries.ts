/**
 * A pending invitation past its expiry reads as `expired` (src/Teams/Repo.ts) but is stored as `pending` until
 * something marks it, so a team's `pending` and `expired` totals are its counters (migration 0006) corrected by
 * how many of its stored-pending invitations have lapsed. This table holds, for each stored-pending invitation, its
 * team and expiry, kept by triggers in the writing transaction: a row is added with a pending invitation and goes
 * when the invitation stops being pending or is deleted (cascade). Its `(team_id, expires_at)` index counts a team's
 * lapsed ones; its `(expires_at)` index lets the retention sweep (src/Retention/) mark the lapsed ones `expired` a
 * batch at a time, so that count stays short.
 *
 * A table of its own rather than an index on `invitations`: an index of the pending invitations by expiry is one
 * the planners read a team's `pending` or `expired` page from, then sort, instead of walking the team's
 * `(team_id, status, created_at)` index and stopping after the page (test/lists/query-plans.test.ts, one team's
 * invitations). Of the lists, only a team's `expired` page reads this table, for its lapsed ones
 * (src/Teams/Repo.ts). An invitation's team and expiry never change after it is written, and no write returns an
 * invitation to `pending`, so the triggers watch only those two moments.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

const sqlite: ReadonlyArray<string> = [
  `CREATE TRIGGER invitation_expiries_insert AFTER INSERT ON invitations WHEN NEW.status = 'pending' BEGIN
    INSERT INTO invitation_expiries (invitation_id, team_id, expires_at) VALUES (NEW.id, NEW.team_id, NEW.expires_at);
  END`,
  `CREATE TRIGGER invitation_expiries_answer AFTER UPDATE OF status ON invitations
    WHEN OLD.status = 'pending' AND NEW.status <> 'pending' BEGIN
    DELETE FROM invitation_expiries WHERE invitation_id = NEW.id;
  END`
]

const pg: ReadonlyArray<string> = [
  `CREATE FUNCTION invitation_expiries_keep() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'INSERT' THEN
      INSERT INTO invitation_expiries (invitation_id, team_id, expires_at) VALUES (NEW.id, NEW.team_id, NEW.expires_at);
    ELSE
      DELETE FROM invitation_expiries WHERE invitation_id = NEW.id;
    END IF;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER invitation_expiries_insert AFTER INSERT ON invitations
    FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION invitation_expiries_keep()`,
  `CREATE TRIGGER invitation_expiries_answer AFTER UPDATE OF status ON invitations
    FOR EACH ROW WHEN (OLD.status = 'pending' AND NEW.status <> 'pending') EXECUTE FUNCTION invitation_expiries_keep()`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE invitation_expiries (
      invitation_id TEXT PRIMARY KEY REFERENCES invitations (id) ON DELETE CASCADE,
      team_id TEXT NOT NULL,
      expires_at TEXT NOT NULL
    )`
  yield* sql`INSERT INTO invitation_expiries (invitation_id, team_id, expires_at)
    SELECT id, team_id, expires_at FROM invitations WHERE status = 'pending'`
  yield* sql`CREATE INDEX invitation_expiries_team ON invitation_expiries (team_id, expires_at)`
  yield* sql`CREATE INDEX invitation_expiries_expiry ON invitation_expiries (expires_at)`
  for (const statement of sql.onDialectOrElse({ pg: () => pg, orElse: () => sqlite })) yield* sql.unsafe(statement)
})
