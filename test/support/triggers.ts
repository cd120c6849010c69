/**
 * A row trigger a test injects into the database, on either engine, to make a statement fail (`refuse`) or to skip
 * a row as if it were not there (`skip`); and its removal. For the paths no request can reach: a write that fails
 * halfway, a row gone between a read and a write.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { usingPostgres } from "./server.ts"

export interface InjectedTrigger {
  /** Its name, and its function's on PostgreSQL. */
  readonly name: string
  readonly table: string
  /** What fires it, before the row is written: `INSERT`, `UPDATE OF secret`… */
  readonly event: string
  /** A condition on `NEW` or `OLD`, if any. */
  readonly when?: string
  readonly effect: "refuse" | "skip"
}

/** Creates the trigger (run it on the database's `SqlClient`). */
export const createTrigger = (trigger: InjectedTrigger) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const { event, name, table, when } = trigger
    if (usingPostgres()) {
      const body = trigger.effect === "refuse" ? "RAISE EXCEPTION 'injected by the test';" : "RETURN NULL;"
      return Effect.zipRight(
        sql.unsafe(`CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger AS $$ BEGIN ${body} END $$ LANGUAGE plpgsql`),
        sql.unsafe(
          `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} FOR EACH ROW ${when === undefined ? "" : `WHEN (${when})`}
            EXECUTE FUNCTION ${name}()`
        )
      )
    }
    const body = trigger.effect === "refuse" ? "SELECT RAISE(ABORT, 'injected by the test');" : "SELECT RAISE(IGNORE);"
    return sql.unsafe(
      `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} ${when === undefined ? "" : `WHEN ${when}`} BEGIN ${body} END`
    )
  })

/** Removes it. */
export const dropTrigger = ({ name, table }: InjectedTrigger) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.unsafe(usingPostgres() ? `DROP TRIGGER ${name} ON ${table}` : `DROP TRIGGER ${name}`)
  )
