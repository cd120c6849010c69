/**
 * Statements of the delivery recorder's fast path (src/Webhooks/RecorderFast.ts) as fixed SQL text with their
 * parameters, run on the transaction's connection directly. Through `sql\`…\``, each statement compiles its
 * fragments to text (a batch insert walks every value to build the same string each time), opens a
 * span (a no-op one with tracing off), a `Scope` and a connection lease; inside a transaction the connection is
 * already held, so here the text is built once per shape and the statement goes straight to the driver.
 *
 * With tracing on, or outside a transaction, the statement takes the ordinary way (`sql.unsafe`): the same text and
 * parameters, with its `sql.execute` span. Rows come back as the driver gives them (this service sets no name
 * transforms); decode them where they are read.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Context, Effect, FiberRef } from "effect"

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
  const run = (text: string, params: ReadonlyArray<Param>) =>
    Effect.withFiberRuntime<ReadonlyArray<unknown>, SqlError>((fiber) => {
      const held = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
      if (held._tag === "Some" && !fiber.getFiberRef(FiberRef.currentTracerEnabled)) {
        return held.value[0].execute(text, params, undefined)
      }
      return sql.unsafe(text, params)
    })
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
