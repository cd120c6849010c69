/**
 * The last list shapes that sorted their whole set read in index order (test/lists/query-plans.test.ts):
 *
 * - Members of a team sorted by `name`: the name is the user's, so through the join every member of the team was
 *   read and sorted. Each membership row now carries a copy of its user's name (`user_name`), with a
 *   `(team_id, user_name, user_id)` index: the page walks it in order and stops after `page × per_page` entries.
 *   The copy is kept by triggers in the writing transaction, whatever the writer, as 0007 keeps the team columns:
 *   a membership gets its user's name when inserted or moved to another user, and a rename of a user is copied to
 *   all of their memberships (only when the name changes). A deleted user's memberships go with them (cascade).
 *   PostgreSQL: a `BEFORE` row trigger sets the new row's copy, reading the user `FOR SHARE`, so a rename committing
 *   meanwhile either waits for the insert (and then copies to the new row too) or is seen by it. SQLite: an `AFTER`
 *   row trigger updates the row just written; one writer at a time, so no race.
 * - Invitations by status: a status filter is a condition on the stored columns (src/Teams/Repo.ts), which these
 *   `(team or email, status, created_at, id)` indexes serve as a prefix, so a rare status costs no more than a
 *   common one.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

const sqlite: ReadonlyArray<string> = [
  ...[
    ["insert", "AFTER INSERT ON team_members"],
    ["move", "AFTER UPDATE OF user_id ON team_members WHEN OLD.user_id IS NOT NEW.user_id"]
  ].map(
    ([name, when]) =>
      `CREATE TRIGGER team_members_copy_user_${name} ${when} BEGIN
        UPDATE team_members SET user_name = u.name FROM users u
        WHERE u.id = NEW.user_id AND team_members.team_id = NEW.team_id AND team_members.user_id = NEW.user_id;
      END`
  ),
  `CREATE TRIGGER users_copy_name_to_members AFTER UPDATE OF name ON users WHEN OLD.name IS NOT NEW.name BEGIN
    UPDATE team_members SET user_name = NEW.name WHERE user_id = NEW.id;
  END`
]

const pg: ReadonlyArray<string> = [
  `CREATE FUNCTION team_members_copy_user() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE u record;
  BEGIN
    SELECT name INTO u FROM users WHERE id = NEW.user_id FOR SHARE;
    IF FOUND THEN
      NEW.user_name := u.name;
    END IF;
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER team_members_copy_user BEFORE INSERT OR UPDATE OF user_id ON team_members
    FOR EACH ROW EXECUTE FUNCTION team_members_copy_user()`,
  `CREATE FUNCTION users_copy_name_to_members() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE team_members SET user_name = NEW.name WHERE user_id = NEW.id;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER users_copy_name_to_members AFTER UPDATE OF name ON users
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION users_copy_name_to_members()`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE team_members ADD COLUMN user_name TEXT NOT NULL DEFAULT ''`
  yield* sql`UPDATE team_members SET user_name = u.name FROM users u WHERE u.id = team_members.user_id`
  for (const statement of sql.onDialectOrElse({ pg: () => pg, orElse: () => sqlite })) yield* sql.unsafe(statement)
  yield* sql`CREATE INDEX team_members_team_name ON team_members (team_id, user_name, user_id)`
  yield* sql`CREATE INDEX invitations_team_status ON invitations (team_id, status, created_at, id)`
  yield* sql`CREATE INDEX invitations_email_status ON invitations (email, status, created_at, id)`
})
