/**
 * Statements of the delivery recorder's fast path (src/Webhooks/RecorderFast.ts) as fixed SQL text with their
 * parameters. Through `sql\`…\``, each statement compiles its fragments to text (a batch insert walks every value
 * to build the same string each time); here the text is built once per shape and run as it is (`sql.unsafe`). Rows
 * come back as the driver gives them (this service sets no name transforms); decode them where they are read.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Effect } from "effect"

/** What these statements bind: text, numbers and NULL. */
export type Param = string | number | null

export interface Direct {
  /** `?` on SQLite, `$n` on PostgreSQL: the `n`th parameter (from 1). */
  readonly placeholder: (n: number) => string
  /** `(…), (…)` for `rows` rows of `columns` values, numbered from `first` (1 by default). */
  readonly values: (rows: number, columns: number, first?: number) => string
  /** Runs `text` with `params`; answers the rows as the driver gives them. */
  readonly run: (text: string, params: ReadonlyArray<Param>) => Effect.Effect<ReadonlyArray<unknown>, SqlError>
  /**
   * The text of a statement by its shape (`key`: what it varies in, such as its row count), made by `make` the first
   * time and kept. The hot statements vary only in their row counts, which their callers bound.
   */
  readonly text: (key: string, make: () => string) => string
}

export const makeDirect = (sql: SqlClient.SqlClient): Direct => {
  const placeholder = sql.onDialectOrElse({ pg: () => (n: number) => `$${n}`, orElse: () => (_: number) => "?" })
  const values = (rows: number, columns: number, first = 1) => {
    const out: Array<string> = []
    let n = first
    for (let r = 0; r < rows; r++) {
      const row: Array<string> = []
      for (let c = 0; c < columns; c++) row.push(placeholder(n++))
      out.push(`(${row.join(", ")})`)
    }
    return out.join(", ")
  }
  const run = (text: string, params: ReadonlyArray<Param>): Effect.Effect<ReadonlyArray<unknown>, SqlError> =>
    sql.unsafe(text, params)
  const texts = new Map<string, string>()
  const text = (key: string, make: () => string) => {
    let made = texts.get(key)
    if (made === undefined) {
      made = make()
      texts.set(key, made)
    }
    return made
  }
  return { placeholder, values, run, text }
}
