/** The statements an effect sends, as they go to the database (for tests that explain their plans). */
import * as Statement from "@effect/sql/Statement"
import { Effect } from "effect"

/** Runs `effect` and answers each statement it sent, compiled: its text and its parameters. */
export const captured = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const statements: Array<readonly [string, ReadonlyArray<unknown>]> = []
    yield* Statement.withTransformer(effect, (statement) =>
      Effect.sync(() => {
        statements.push(statement.compile())
        return statement
      })
    )
    return statements
  })
