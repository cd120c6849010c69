/**
 * The service as src/main.ts runs it, but for one thing: on its first keyed change whose answer is recorded, the
 * process kills itself (SIGKILL) at the point its argument names, `before-commit` or `after-commit` of that change's
 * transaction (`CommitHooks`, src/Idempotency/Idempotency.ts, which does nothing in the service itself). For the
 * crash tests (test/e2e/idempotency-crash.test.ts), started by `startServer({ crashAt })` (server.ts):
 *
 *   bun test/support/crash-main.ts before-commit
 */
import * as BunRuntime from "@effect/platform-bun/BunRuntime"
import { Effect, Layer } from "effect"
import { CommitHooks } from "../../src/Idempotency/Idempotency.ts"
import { program } from "../../src/main.ts"

export const CRASH_POINTS = ["before-commit", "after-commit"] as const
export type CrashPoint = (typeof CRASH_POINTS)[number]

/** What the process logs as it kills itself: the crash tests look for it. */
export const crashLine = (point: CrashPoint) => `crash-main: killing the process ${point}`

const kill = (point: CrashPoint) =>
  Effect.logWarning(crashLine(point)).pipe(
    Effect.zipRight(Effect.sync(() => process.kill(process.pid, "SIGKILL"))),
    Effect.zipRight(Effect.never)
  )

/** The hooks with `point`'s killing the process. */
export const killingAt = (point: CrashPoint) =>
  Layer.succeed(CommitHooks, {
    beforeCommit: point === "before-commit" ? kill(point) : Effect.void,
    afterCommit: point === "after-commit" ? kill(point) : Effect.void
  })

if (import.meta.main) {
  const point = CRASH_POINTS.find((known) => known === process.argv[2])
  if (point === undefined) {
    console.error(`usage: bun test/support/crash-main.ts ${CRASH_POINTS.join(" | ")}`)
    process.exit(2)
  }
  BunRuntime.runMain(program.pipe(Effect.provide(killingAt(point))), { disablePrettyLogger: true })
}
