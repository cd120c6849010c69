/**
 * The body of the WAL checkpointer thread (src/Sql/Checkpointer.ts): its own connection to the database file, a
 * passive checkpoint every `intervalMs`. A passive checkpoint never waits for the writer and never makes it wait;
 * the checkpoint's `fsync`s block this thread, not the server's event loop. Plain code: no Effect runtime here.
 */
import { Database } from "bun:sqlite"

declare const self: Worker

let db: Database | undefined
let timer: ReturnType<typeof setInterval> | undefined

const checkpoint = () => {
  try {
    db?.run("PRAGMA wal_checkpoint(PASSIVE)")
  } catch {
    // SQLITE_BUSY or a lock held elsewhere: the next tick tries again, and the writer's own checkpoint is the backstop.
  }
}

self.addEventListener(
  "message",
  (event: MessageEvent<{ readonly filename: string; readonly intervalMs: number } | "stop">) => {
    const message = event.data
    if (message === "stop") {
      if (timer !== undefined) clearInterval(timer)
      db?.close()
      db = undefined
      self.postMessage("stopped")
      return
    }
    db = new Database(message.filename, { readwrite: true, create: false })
    db.run("PRAGMA busy_timeout = 5000")
    timer = setInterval(checkpoint, message.intervalMs)
    self.postMessage("started")
  }
)
