// engine-independent: SQLite files whatever the run's engine
/**
 * Opening the SQLite database while another process holds a lock on it (src/Sql/Client.ts): the connection's busy
 * timeout is set before its first statement, so the open waits for the lock instead of failing with "database is
 * locked". Ten CLI runs started together on one file hit this now and then (one exited 1): the first statement,
 * the switch to WAL, ran before the timeout was set, while another process was recovering the WAL.
 *
 * A WAL recovery is a lock of a few milliseconds, too short to catch on purpose; here a second process holds an
 * exclusive lock on a database in rollback-journal mode, which the open's first statement has to wait for the same
 * way, until that process commits.
 *
 * And the page size the client opens a file with: 2 KiB for a new file, the file's own for an existing one.
 */

import { Database } from "bun:sqlite"
import { afterAll, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { SqlClientLive } from "../../src/Sql/Client.ts"
import { withDatabaseUrl } from "../support/fixtures.ts"

const dir = mkdtempSync(join(tmpdir(), "pcs-open-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A child process that takes an exclusive lock on `file`, says so on stdout, and commits after `holdMs`. */
const holdLock = async (file: string, holdMs: number) => {
  const child = Bun.spawn(
    [
      "bun",
      "-e",
      `const { Database } = require("bun:sqlite")
       const db = new Database(${JSON.stringify(file)})
       db.run("BEGIN EXCLUSIVE")
       db.run("INSERT INTO t (v) VALUES ('held')")
       console.log("locked")
       setTimeout(() => { db.run("COMMIT"); db.close() }, ${holdMs})`
    ],
    { stdout: "pipe", stderr: "inherit" }
  )
  const reader = child.stdout.getReader()
  const { value } = await reader.read()
  expect(new TextDecoder().decode(value)).toContain("locked")
  reader.releaseLock()
  return child
}

test("a connection opened while another process holds the lock waits for it, then switches to WAL", async () => {
  const file = join(dir, "locked.sqlite")
  const setUp = new Database(file)
  setUp.run("PRAGMA journal_mode = DELETE")
  setUp.run("CREATE TABLE t (v TEXT NOT NULL)")
  setUp.close()

  const child = await holdLock(file, 300)
  const opened = await Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [mode] = yield* sql<{ readonly journal_mode: string }>`PRAGMA journal_mode`
    const rows = yield* sql<{ readonly v: string }>`SELECT v FROM t`
    return { mode: mode?.journal_mode, rows: rows.map((row) => row.v) }
  }).pipe(
    Effect.provide(SqlClientLive.pipe(Layer.provide(withDatabaseUrl(`sqlite:${file}`)))),
    Effect.scoped,
    Effect.runPromise
  )
  // It waited for the other process's commit: its row is there, and the database is in WAL mode.
  expect(opened).toEqual({ mode: "wal", rows: ["held"] })
  expect(await child.exited).toBe(0)
}, 60_000)

/** The page size and journal mode `SqlClientLive` leaves `file` with. */
const openAndRead = (file: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [size] = yield* sql<{ readonly page_size: number }>`PRAGMA page_size`
    const [mode] = yield* sql<{ readonly journal_mode: string }>`PRAGMA journal_mode`
    return { pageSize: size?.page_size, mode: mode?.journal_mode }
  }).pipe(
    Effect.provide(SqlClientLive.pipe(Layer.provide(withDatabaseUrl(`sqlite:${file}`)))),
    Effect.scoped,
    Effect.runPromise
  )

test("a new database file gets 2 KiB pages; one made with 4 KiB pages keeps them and its rows", async () => {
  expect(await openAndRead(join(dir, "new.sqlite"))).toEqual({ pageSize: 2048, mode: "wal" })

  const old = join(dir, "old.sqlite")
  const setUp = new Database(old)
  setUp.run("PRAGMA page_size = 4096")
  setUp.run("PRAGMA journal_mode = WAL")
  setUp.run("CREATE TABLE t (v TEXT NOT NULL)")
  setUp.run("INSERT INTO t (v) VALUES ('kept')")
  setUp.close()
  expect(await openAndRead(old)).toEqual({ pageSize: 4096, mode: "wal" })
  const after = new Database(old, { readonly: true })
  expect(after.query("SELECT v FROM t").all()).toEqual([{ v: "kept" }])
  after.close()
})
