/**
 * Admission, the `admission` fast path (docs/fast-paths.md): at most `HTTP_CONCURRENCY` requests are worked on at
 * once (unset: 32 on SQLite, no limit on PostgreSQL); the others wait for a place, or `ADMISSION_WAIT_MS` at most, then
 * start anyway. Its twin is no admission: every request starts at once (`FAST_PATHS` without `admission`, or
 * `HTTP_CONCURRENCY=0`).
 *
 * Why: on SQLite a request's work is this process's CPU, and under sustained writes each create waits for its batch
 * (group commit, src/Sql/GroupCommit.ts) with the fibers of its whole handling in memory. A request waiting here
 * holds only its fiber and what the request wrapper made for it, so the collector marks a few dozen requests' work
 * instead of one for every connection.
 *
 * Built on an Effect `Semaphore` (its permits are the places), applied inside the per-request wrapper (src/Http.ts),
 * so a waiting request is counted in flight (shutdown waits for it) and its wait is part of its duration. Places are
 * held by requests that wait for their clients too (a body sent slowly), so a client cannot hold every place and stop
 * the server: it can only slow the others by the longest wait. Health checks never wait. A request whose client goes
 * away while it waits is dropped: the platform interrupts its fiber, and the wait is interruptible (the rest of a
 * request's handling is not). A waiting request is resumed when a place frees, about in arrival order (the semaphore
 * wakes its waiters in the order they came, but one arriving as a place frees may take it first).
 */
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Duration, Effect, Exit, Fiber, Option } from "effect"
import type { FastPath } from "../Config.js"

/** Wraps the app the server serves (inside the per-request wrapper). */
export type Admission = (app: HttpApp.Default) => HttpApp.Default

/**
 * The places: with the `admission` fast path, `HTTP_CONCURRENCY`, or when it is not set 32 on SQLite, where a
 * request's work is this process's CPU, and no limit on PostgreSQL, whose requests wait on the database server, which
 * more of them in flight keep busy; without it, no limit (0).
 */
export const concurrencyFor = (
  fastPaths: ReadonlySet<FastPath>,
  setting: Option.Option<number>,
  engine: "sqlite" | "pg"
): number => (fastPaths.has("admission") ? Option.getOrElse(setting, () => (engine === "pg" ? 0 : 32)) : 0)

/** How long a request waits for a place at most; then it starts anyway. */
export const ADMISSION_WAIT_MS = 100

const isHealth = (url: string) => url.startsWith("/health/")

/** Admission with `concurrency` places (none: every request starts at once), each request waiting `waitMs` at most. */
export const makeAdmission = (concurrency: number, waitMs: number = ADMISSION_WAIT_MS): Effect.Effect<Admission> => {
  if (concurrency <= 0) return Effect.succeed((app) => app)
  return Effect.map(Effect.makeSemaphore(concurrency), (places): Admission => {
    const wait = Duration.millis(waitMs)
    /**
     * Waits for a place, `wait` at most; answers whether it holds one. The wait alone is interruptible: one interrupted
     * holds nothing when it ends.
     */
    const waitForPlace = Effect.gen(function* () {
      const taking = yield* Effect.fork(Effect.interruptible(places.take(1)))
      const waited = yield* Effect.exit(Effect.interruptible(Effect.timeoutOption(Fiber.await(taking), wait)))
      // Its exit says whether it took a place, even one taken just as the wait ended.
      const holds = Exit.isSuccess(yield* Fiber.interrupt(taking))
      if (Exit.isSuccess(waited)) return holds
      if (holds) yield* places.release(1)
      return yield* Effect.interrupt
    })
    return (app) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        if (isHealth(request.url)) return app
        return Effect.flatMap(
          places.withPermitsIfAvailable(1)(app),
          Option.match({
            onSome: Effect.succeed,
            onNone: () =>
              Effect.uninterruptibleMask((restore) =>
                Effect.flatMap(waitForPlace, (holds) =>
                  holds ? Effect.ensuring(restore(app), places.release(1)) : restore(app)
                )
              )
          })
        )
      })
  })
}
