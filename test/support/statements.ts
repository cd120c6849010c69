/** The statements an effect, or a request, sends, as they go to the database (for tests that count or explain them). */
import * as Statement from "@effect/sql/Statement"
import { Effect, FiberRefs } from "effect"
import { CurrentRequestIdentity } from "../../src/Domain/RequestId.ts"

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

/**
 * A `Statement` transformer for an in-process server (`startInProcess({ around })`) that notes the text of each
 * statement sent while serving a request, by the request's id (`req_…`): `sent.get(id)`.
 */
export const countedByRequest = () => {
  const sent = new Map<string, Array<string>>()
  const around = Statement.setTransformer((statement, _sql, fiberRefs) =>
    Effect.sync(() => {
      const request = FiberRefs.getOrDefault(fiberRefs, CurrentRequestIdentity)
      if (request !== undefined) sent.set(request.id, [...(sent.get(request.id) ?? []), statement.compile()[0]])
      return statement
    })
  )
  return { sent, around }
}
