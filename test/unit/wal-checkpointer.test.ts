// engine-independent: SQLite files whatever the run's engine
/**
 * The WAL checkpointer thread (src/Sql/Checkpointer.ts): what a commit leaves in the WAL reaches the database
 * file without the writer checkpointing (its automatic checkpoint waits for 10,000 pages, far more than written
 * here), and stopping it leaves the database whole for the client's own close.
 */

import { Database } from "bun:sqlite"
import { afterAll, describe, expect, test } from "bun:test"
import { copyFileSync, existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Cause, Effect, Exit, Layer, ManagedRuntime, Option } from "effect"
import { WalCheckpointerLive, walCheckpointer } from "../../src/Sql/Checkpointer.ts"
import { SqlLive } from "../../src/Sql/Client.ts"
import { withDatabaseUrl } from "../support/fixtures.ts"

const dir = mkdtempSync(join(tmpdir(), "pcs-wal-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/**
 * How many rows of `t` the database file holds by itself, without its WAL (a copy of the file alone); `undefined`
 * when the copy was torn (taken while the checkpointer was writing pages into the file: "disk image is malformed").
 */
const rowsInFileAlone = (file: string, name: string): number | undefined => {
  const copy = join(dir, `${name}.sqlite`)
  copyFileSync(file, copy)
  const db = new Database(copy, { readonly: true })
  try {
    const count = (text: string) => db.query<{ n: number }, []>(text).get()?.n ?? 0
    return count("SELECT count(*) AS n FROM sqlite_master WHERE name = 't'") === 0
      ? 0
      : count("SELECT count(*) AS n FROM t")
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "SQLITE_CORRUPT") return undefined
    throw error
  } finally {
    db.close()
  }
}

const runtimeFor = (file: string, checkpointer: boolean) =>
  ManagedRuntime.make(
    (checkpointer ? WalCheckpointerLive.pipe(Layer.provideMerge(SqlLive)) : SqlLive).pipe(
      Layer.provide(withDatabaseUrl(`sqlite:${file}`))
    )
  )

const write = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)`
  for (let i = 0; i < 50; i++) yield* sql`INSERT INTO t (v) VALUES (${"x".repeat(500)})`
})

describe("WAL checkpoints on their own thread", () => {
  test("commits reach the database file without the writer checkpointing; the client's close still cleans up", async () => {
    const file = join(dir, "with.sqlite")
    const runtime = runtimeFor(file, true)
    await runtime.runPromise(write)
    // The thread checkpoints every 100 ms: wait for it, never for a fixed time. A copy taken while it writes the
    // file is torn: looked at again.
    const until = Date.now() + 5_000
    let seen = rowsInFileAlone(file, "with-copy")
    while (seen !== 50 && Date.now() < until) {
      await Bun.sleep(20)
      seen = rowsInFileAlone(file, "with-copy")
    }
    expect(seen).toBe(50)
    await runtime.dispose()
    // The thread's connection closed first, so the client's close was the last and removed the WAL.
    expect(existsSync(`${file}-wal`)).toBe(false)
    const db = new Database(file, { readonly: true })
    expect(db.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 50 })
    db.close()
  }, 60_000)

  test("without it, the same commits stay in the WAL (what the test above would see without the thread)", async () => {
    const file = join(dir, "without.sqlite")
    const runtime = runtimeFor(file, false)
    await runtime.runPromise(write)
    await Bun.sleep(300)
    expect(rowsInFileAlone(file, "without-copy")).toBe(0)
    await runtime.dispose()
  }, 60_000)

  test("nothing is started for a database in memory", async () => {
    const runtime = ManagedRuntime.make(
      WalCheckpointerLive.pipe(Layer.provideMerge(SqlLive), Layer.provide(withDatabaseUrl("sqlite::memory:")))
    )
    await runtime.runPromise(write)
    const rows = await runtime.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT count(*) AS n FROM t`)
    )
    expect(rows).toEqual([{ n: 50 }])
    await runtime.dispose()
  }, 60_000)

  test("a thread that cannot open its file fails the start with an error instead of hanging it", async () => {
    const exit = await Effect.runPromiseExit(Effect.scoped(walCheckpointer(join(dir, "no-such-dir", "db.sqlite"))))
    expect(Exit.isFailure(exit)).toBe(true)
    if (Exit.isFailure(exit)) {
      expect(Cause.failureOption(exit.cause).pipe(Option.map((error) => error._tag))).toEqual(
        Option.some("CheckpointerFailed")
      )
    }
  })
})
