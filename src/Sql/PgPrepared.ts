/**
 * The `prepared-statements` fast path (docs/fast-paths.md): connections for the `pg` pool behind `@effect/sql-pg`'s
 * client (src/Sql/PgPool.ts) that prepare each parameterised statement once, under a name, and afterwards send only
 * its parameters. PostgreSQL then parses and analyses a statement's text once per connection instead of at every
 * run, and may keep its plan.
 * Its twin is the same pool with plain connections (`StatementCountingClient`), which send every statement unnamed.
 *
 * What must hold:
 * - Plans are PostgreSQL's choice for prepared statements (`plan_cache_mode = auto`): planned for their
 *   parameters at the first runs, then a generic plan where it costs no more. Every list shape's generic plan reads
 *   in index order as its custom plan does (test/lists/query-plans.test.ts checks both).
 * - Memory is bounded: a connection keeps at most `capacity` statements; past it the least recently run is closed
 *   (`DEALLOCATE`, queued on the connection like any statement) before a new one is prepared. A `DEALLOCATE` that
 *   ran inside a failed transaction (which refuses every statement until its rollback) is sent again ahead of a
 *   later statement run outside a transaction.
 * - Only statements with parameters are named. BEGIN, COMMIT, SAVEPOINT and the migrations' DDL (no parameters)
 *   take the simple protocol, as with the twin; a statement `@effect/sql-pg` sends as a config object (streams,
 *   array rows) is passed through unchanged.
 * - A statement whose result columns changed under it (`SELECT *` after a column was added: PostgreSQL answers
 *   "cached plan must not change result type") fails that once, as the twin would not; its name is then dropped,
 *   so its next run prepares it again. The service's statements name their columns.
 */
import type Pg from "pg"
import { StatementCountingClient } from "./PgPool.js"

/** How many prepared statements a connection keeps at most. */
export const DEFAULT_CAPACITY = 256

/** The SQLSTATE of "cached plan must not change result type". */
const RESULT_TYPE_CHANGED = "0A000"

/** The SQLSTATE of "current transaction is aborted, commands ignored until end of transaction block". */
const IN_FAILED_TRANSACTION = "25P02"

const codeOf = (error: Error | null): unknown => (error !== null && "code" in error ? error.code : undefined)

/** A `pg` connection that runs each parameterised statement as a named prepared statement (see above). */
export const preparingClient = (capacity: number) =>
  class PreparingClient extends StatementCountingClient {
    /** Statement text → its name on this connection, least recently run first. */
    private readonly names = new Map<string, string>()
    /** Names whose `DEALLOCATE` a failed transaction refused: closed again once outside a transaction. */
    private readonly unclosed: Array<string> = []
    private made = 0

    private close(name: string): void {
      super.query(`DEALLOCATE ${name}`, (error: Error | null) => {
        if (codeOf(error) === IN_FAILED_TRANSACTION) this.unclosed.push(name)
      })
    }

    private nameOf(text: string): string {
      const known = this.names.get(text)
      if (known !== undefined) {
        this.names.delete(text)
        this.names.set(text, known)
        return known
      }
      if (this.names.size >= capacity) {
        const [oldestText, oldest] = this.names.entries().next().value ?? []
        if (oldestText !== undefined && oldest !== undefined) {
          this.names.delete(oldestText)
          this.close(oldest)
        }
      }
      this.made += 1
      const name = `pcs_${this.made}`
      this.names.set(text, name)
      return name
    }

    /** `@effect/sql-pg` runs a statement as `query(text, parameters, callback)`; every other call is passed on. */
    override query<T>(...args: ReadonlyArray<unknown>): T
    override query(...args: ReadonlyArray<unknown>): unknown {
      const [text, values, callback] = args
      if (typeof text !== "string" || !Array.isArray(values) || values.length === 0 || typeof callback !== "function")
        return Reflect.apply(StatementCountingClient.prototype.query, this, args)
      // Outside a transaction as of its last statement (a connection runs one caller's statements at a time). One
      // `DEALLOCATE` at most ahead of a statement: `pg` deprecates queueing more than one query behind another.
      const unclosed = this.unclosed[0]
      if (
        unclosed !== undefined &&
        this.getTransactionStatus() === "I" &&
        (this.names.has(text) || this.names.size < capacity)
      ) {
        this.unclosed.shift()
        this.close(unclosed)
      }
      const name = this.nameOf(text)
      return super.query({ text, values, name }, (error: Error | null, result: Pg.QueryResult) => {
        if (codeOf(error) === RESULT_TYPE_CHANGED && this.names.get(text) === name) {
          // Dropped rather than closed: names are never reused (`made` only grows), and the next run of this text
          // prepares it afresh.
          this.names.delete(text)
        }
        callback(error, result)
      })
    }
  }
