/** Seeding many rows at once, for tests and benchmarks that need tables of a given size. */
import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/** Inserts `rows` into `table` in statements of at most 500 rows (both engines cap a statement's parameters). */
export const insertAll = (
  sql: SqlClient.SqlClient,
  table: string,
  rows: ReadonlyArray<Record<string, string | number | null>>
) =>
  Effect.forEach(
    Array.from({ length: Math.ceil(rows.length / 500) }, (_, i) => rows.slice(i * 500, i * 500 + 500)),
    (chunk) => sql`INSERT INTO ${sql(table)} ${sql.insert(chunk)}`,
    { discard: true }
  )
