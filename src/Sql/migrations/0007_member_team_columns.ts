/**
 * A user's teams as an index walk: `GET /v1/teams` sorts the caller's memberships by a column of the
 * team (`created_at`, `updated_at` or `name`) and filters by its name (`search`) and creation time
 * (`created_after`/`created_before`). Through the join that means reading every team of the user and sorting them,
 * however many there are. So each membership row carries a copy of its team's three
 * columns (`team_name`, `team_created_at`, `team_updated_at`), with a `(user_id, column, team_id)` index per sort
 * key: the page walks one index in order and stops after `page × per_page` entries, and reads the list's records
 * from the memberships alone (no join: the rows an `OFFSET` skips and a range count read no `teams` row).
 *
 * The copies are kept by triggers, in the writing transaction, whatever the writer (the HTTP API, the CLI, team
 * creation adding its owner, an accepted invitation, a direct insert): a membership row gets its team's values
 * when inserted or moved to another team, and a change of those columns on `teams` is copied to the team's
 * members (only when one of them changes: the no-op `UPDATE teams SET updated_at = updated_at` that serialises
 * membership changes copies nothing). A deleted team's memberships go with it (`ON DELETE CASCADE`), copies too.
 *
 * PostgreSQL: a `BEFORE` row trigger sets the new row's columns; it reads the team `FOR SHARE`, so a rename
 * committing meanwhile either waits for the insert (and then copies to the new row too) or is seen by it (the
 * insert waits, then reads the renamed team). SQLite: an `AFTER` row trigger updates the row just written (its
 * triggers cannot change `NEW`); one writer at a time, so no race. The index on `user_id` alone (0001) is dropped:
 * the new ones start with `user_id` and hold `team_id`, which is all the other readers of it ask for.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/** Membership column ← team column. */
const copies = [
  ["team_name", "name"],
  ["team_created_at", "created_at"],
  ["team_updated_at", "updated_at"]
] as const

const watched = copies.map(([, column]) => column).join(", ")
const changed = (distinct: string) => copies.map(([, column]) => `OLD.${column} ${distinct} NEW.${column}`).join(" OR ")
/** `team_name = <row>.name, …` */
const assignFrom = (row: string) => copies.map(([copy, column]) => `${copy} = ${row}.${column}`).join(", ")

const sqlite: ReadonlyArray<string> = [
  // The row just written (or moved) gets its team's values; none when the team does not exist (the foreign key
  // reports that).
  ...[
    ["insert", "AFTER INSERT ON team_members"],
    ["move", "AFTER UPDATE OF team_id ON team_members WHEN OLD.team_id IS NOT NEW.team_id"]
  ].map(
    ([name, when]) =>
      `CREATE TRIGGER team_members_copy_${name} ${when} BEGIN
        UPDATE team_members SET ${assignFrom("t")} FROM teams t
        WHERE t.id = NEW.team_id AND team_members.team_id = NEW.team_id AND team_members.user_id = NEW.user_id;
      END`
  ),
  `CREATE TRIGGER teams_copy_to_members AFTER UPDATE OF ${watched} ON teams WHEN ${changed("IS NOT")} BEGIN
    UPDATE team_members SET ${assignFrom("NEW")} WHERE team_id = NEW.id;
  END`
]

const pg: ReadonlyArray<string> = [
  `CREATE FUNCTION team_members_copy_team() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE t record;
  BEGIN
    SELECT ${watched} INTO t FROM teams WHERE id = NEW.team_id FOR SHARE;
    IF FOUND THEN
      ${copies.map(([copy, column]) => `NEW.${copy} := t.${column};`).join(" ")}
    END IF;
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER team_members_copy_team BEFORE INSERT OR UPDATE OF team_id ON team_members
    FOR EACH ROW EXECUTE FUNCTION team_members_copy_team()`,
  `CREATE FUNCTION teams_copy_to_members() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    UPDATE team_members SET ${assignFrom("NEW")} WHERE team_id = NEW.id;
    RETURN NULL;
  END $$`,
  `CREATE TRIGGER teams_copy_to_members AFTER UPDATE OF ${watched} ON teams
    FOR EACH ROW WHEN (${changed("IS DISTINCT FROM")}) EXECUTE FUNCTION teams_copy_to_members()`
]

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const [copy] of copies) yield* sql.unsafe(`ALTER TABLE team_members ADD COLUMN ${copy} TEXT NOT NULL DEFAULT ''`)
  yield* sql.unsafe(`UPDATE team_members SET ${assignFrom("t")} FROM teams t WHERE t.id = team_members.team_id`)
  for (const statement of sql.onDialectOrElse({ pg: () => pg, orElse: () => sqlite })) yield* sql.unsafe(statement)
  yield* sql`DROP INDEX team_members_user`
  for (const [copy] of copies) {
    yield* sql.unsafe(`CREATE INDEX team_members_user_${copy} ON team_members (user_id, ${copy}, team_id)`)
  }
})
