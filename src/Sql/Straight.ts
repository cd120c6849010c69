/**
 * Statements run straight, shared by the `sqlite-statements` and `pg-statements` fast paths (docs/fast-paths.md):
 * a client made by `@effect/sql`'s driver, whose templates' and `unsafe`'s statements skip the library's span (a
 * no-op one with tracing off), `Scope` and lease where nothing would see the difference. Feature code is unchanged:
 * it still writes `sql\`…\``, `sql.unsafe` and `sql.withTransaction`, and gets the same rows and the same `SqlError`s.
 *
 * A statement is the library's, wrapped (`DirectStatement`, an `Effectable.Class` implementing `Statement`): run with
 * tracing off and no statement transformer, it compiles as the library's does and runs on the transaction's
 * connection (`TransactionConnection`) or, outside one, as the engine's module says (`Outside`). Otherwise (tracing
 * on, a transformer set), and for its `raw`, `values`, `stream`, `unprepared` and `withoutTransform`, it is the
 * library's statement, with its `sql.execute` span. Used inside another template, it is the library's fragment.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, Effectable, FiberRef, Option } from "effect"

/** How a statement outside a transaction runs: its text, its parameters, and the context of the fiber running it. */
export type Outside = <A>(
  text: string,
  params: ReadonlyArray<unknown>,
  context: Context.Context<never>
) => Effect.Effect<ReadonlyArray<A>, SqlError>

/**
 * A statement of `@effect/sql`, run straight when nothing would see the difference (above); every other use of it
 * is the library's statement's.
 */
class DirectStatement<A> extends Effectable.Class<ReadonlyArray<A>, SqlError> implements Statement.Statement<A> {
  constructor(
    private readonly statement: Statement.Statement<A>,
    private readonly outside: Outside
  ) {
    super()
  }
  get [Statement.FragmentId]() {
    return this.statement[Statement.FragmentId]
  }
  get segments() {
    return this.statement.segments
  }
  get raw() {
    return this.statement.raw
  }
  get withoutTransform() {
    return this.statement.withoutTransform
  }
  get stream() {
    return this.statement.stream
  }
  get values() {
    return this.statement.values
  }
  get unprepared() {
    return this.statement.unprepared
  }
  readonly compile = (withoutTransform?: boolean | undefined) => this.statement.compile(withoutTransform)

  /**
   * One step reads what decides the way (`withFiberRuntime`, as `@effect/sql-sqlite-bun` reads `SafeIntegers`): a
   * statement run as often as these is worth not spending an effect on each.
   */
  commit(): Effect.Effect<ReadonlyArray<A>, SqlError> {
    return Effect.withFiberRuntime((fiber) => {
      if (fiber.getFiberRef(FiberRef.currentTracerEnabled)) return this.statement
      if (Option.isSome(fiber.getFiberRef(Statement.currentTransformer))) return this.statement
      const [text, params] = this.statement.compile()
      const held = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
      if (Option.isSome(held)) return held.value[0].execute(text, params, undefined)
      return this.outside(text, params, fiber.currentContext)
    })
  }
}

/** `library` with the statements of its templates and of `unsafe` run straight; everything else is its own. */
export const straightClient = (library: SqlClient.SqlClient, outside: Outside): SqlClient.SqlClient => {
  const direct = <A>(statement: Statement.Statement<A>) => new DirectStatement(statement, outside)
  const client: SqlClient.SqlClient = Object.assign(
    // A template gives a statement; a string, an identifier (left as it is).
    ((strings: TemplateStringsArray & string, ...args: Array<unknown>) =>
      Array.isArray(strings) ? direct(library(strings, ...args)) : library(strings)) as typeof library,
    library,
    {
      unsafe: (<A extends object>(text: string, params?: ReadonlyArray<unknown>) =>
        direct(library.unsafe<A>(text, params))) as typeof library.unsafe
    }
  )
  ;(client as { safe: unknown }).safe = client
  return client
}
