// engine-independent: no database
/**
 * src/Sql/Repository.ts: a service takes its repository once through `orDie`, after which each method's failure is a
 * defect (as `Effect.orDie` at each call was) and its answer unchanged; `dieOnSqlError` makes a transaction's
 * `SqlError` a defect and leaves its typed failures to the caller.
 */

import { describe, expect, test } from "bun:test"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, Effect, Exit, Option, Schema } from "effect"
import { dieOnSqlError, orDie } from "../../src/Sql/Repository.ts"

class Refused extends Schema.TaggedError<Refused>()("Refused", {}) {}

const broken = new SqlError({ cause: new Error("disk I/O error"), message: "Failed to execute statement" })

const repository = {
  find: (id: string) => (id === "bad" ? Effect.fail(broken) : Effect.succeed(Option.some(id))),
  decode: () => Schema.decodeUnknown(Schema.Number)("not a number"),
  count: Effect.succeed(3),
  failing: Effect.fail(broken),
  limit: 20
}

const defectOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.dieOption(exit.cause)) : undefined

describe("orDie", () => {
  const repo = orDie(repository)

  test("a method answers as before, its type without the failure", () => {
    const found: Effect.Effect<Option.Option<string>> = repo.find("a")
    expect(Effect.runSync(found)).toEqual(Option.some("a"))
    expect(Effect.runSync(repo.count)).toBe(3)
    expect(repo.limit).toBe(20)
  })

  test("a method's SqlError is a defect, the same error", () => {
    const exit = Effect.runSyncExit(repo.find("bad"))
    expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
    expect(defectOf(exit)).toBe(broken)
    expect(defectOf(Effect.runSyncExit(repo.failing))).toBe(broken)
  })

  test("any other failure of a method (a row that does not decode) is a defect too", () => {
    const exit = Effect.runSyncExit(repo.decode())
    expect(Exit.isFailure(exit) && Cause.isDie(exit.cause)).toBe(true)
  })

  test("each call runs afresh", () => {
    let calls = 0
    const counted = orDie({ next: () => Effect.sync(() => ++calls) })
    const once = counted.next()
    Effect.runSync(once)
    Effect.runSync(once)
    expect(calls).toBe(2)
  })
})

describe("dieOnSqlError", () => {
  test("a SqlError is a defect; a typed failure stays the caller's", () => {
    const sqlExit = Effect.runSyncExit(dieOnSqlError(Effect.fail(broken)))
    expect(defectOf(sqlExit)).toBe(broken)
    const refused: Effect.Effect<never, Refused | SqlError> = Effect.fail(new Refused())
    const exit = Effect.runSyncExit(dieOnSqlError(refused))
    expect(exit).toEqual(Exit.fail(new Refused()))
  })
})
