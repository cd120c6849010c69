/**
 * WAL checkpoints on a thread of their own. SQLite's automatic checkpoint runs in the connection that commits, and
 * its `fsync`s (the only ones with `synchronous = NORMAL`) block the event loop, so every request in flight would
 * wait on them, and under webhook fan-out they would make the tail of the delivery lag.
 * This thread checkpoints passively every `INTERVAL`, so the commits find little or nothing left to copy; the
 * writer's own automatic checkpoint stays as the backstop (a passive checkpoint can fall behind a writer that never
 * pauses). Durability is unchanged: the same checkpoints, with the same syncs, on another thread.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Data, Duration, Effect, Layer } from "effect"
import { DatabaseUrl } from "../Config.js"

const INTERVAL = Duration.millis(100)
const STOP_TIMEOUT = Duration.seconds(5)

class CheckpointerFailed extends Data.TaggedError("CheckpointerFailed")<{ readonly message: string }> {}

/** Starts the checkpointer for `filename` (a file, not `:memory:`); stopped and its connection closed with the scope. */
export const walCheckpointer = (filename: string) =>
  Effect.acquireRelease(
    Effect.async<Worker, CheckpointerFailed>((resume) => {
      const worker = new Worker(new URL("./CheckpointWorker.ts", import.meta.url).href)
      worker.addEventListener("message", () => resume(Effect.succeed(worker)), { once: true })
      // A thread that cannot start (its connection does not open) answers with an error, not a message.
      worker.addEventListener(
        "error",
        (event) => {
          worker.terminate()
          resume(Effect.fail(new CheckpointerFailed({ message: event.message })))
        },
        { once: true }
      )
      worker.postMessage({ filename, intervalMs: Duration.toMillis(INTERVAL) })
      // The thread never keeps the process alive (Bun's `Worker` has `unref`; the DOM type does not say so).
      if ("unref" in worker && typeof worker.unref === "function") worker.unref()
    }),
    (worker) =>
      Effect.async<void>((resume) => {
        worker.addEventListener("message", () => resume(Effect.void), { once: true })
        worker.postMessage("stop")
      }).pipe(Effect.timeout(STOP_TIMEOUT), Effect.ignore, Effect.ensuring(Effect.sync(() => worker.terminate())))
  )

/**
 * The server's checkpointer, for a SQLite file (nothing for PostgreSQL or `:memory:`); the CLI's short runs leave
 * checkpoints to the writer. Built over the client, so it stops before the client's connection closes (the last
 * connection to close checkpoints what is left and removes the WAL).
 */
export const WalCheckpointerLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    yield* SqlClient.SqlClient
    const db = yield* Effect.orDie(DatabaseUrl)
    if (db._tag !== "sqlite" || db.filename === ":memory:") return
    // Without the thread the writer still checkpoints by itself: slower commits at times, nothing lost.
    yield* walCheckpointer(db.filename).pipe(
      Effect.catchTag("CheckpointerFailed", (error) =>
        Effect.logWarning("WAL checkpointer thread did not start; the writer checkpoints by itself").pipe(
          Effect.annotateLogs({ error: error.message })
        )
      )
    )
  })
)
