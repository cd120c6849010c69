/**
 * µs a statement through the service's SQLite client (`FAST_PATHS` decides which: the `sqlite-statements` client or
 * its twin), with tracing off as the service runs it: a read by key outside a transaction and inside one.
 *   bun bench/statement.ts [--reads 200000] [--rounds 5]
 * Compare two checkouts by running each in turn, A B A B, in one sitting.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { parseArgs } from "node:util"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { median } from "./stats.ts"

const { values } = parseArgs({ options: { reads: { type: "string" }, rounds: { type: "string" } } })
const reads = Number(values.reads ?? 200_000)
const rounds = Number(values.rounds ?? 5)
const dir = mkdtempSync(join(tmpdir(), "statement-"))
process.env.DATABASE_URL = `sqlite:${join(dir, "bench.sqlite")}`
process.env.SECRETS_KEY ??= "3KbG4VxO++UTjONN54gymXe0oCOLUT4gd16cS/HyB+I="
const { SqlLive } = await import("../src/Sql/Client.js")

const program = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT)`
  yield* sql`INSERT INTO t (id, name) VALUES (1, 'a')`
  const read = sql`SELECT name FROM t WHERE id = ${1}`
  const outside: Array<number> = []
  const inside: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    let start = Bun.nanoseconds()
    for (let i = 0; i < reads; i++) yield* read
    outside.push((Bun.nanoseconds() - start) / reads / 1000)
    start = Bun.nanoseconds()
    yield* sql.withTransaction(
      Effect.gen(function* () {
        for (let i = 0; i < reads; i++) yield* read
      })
    )
    inside.push((Bun.nanoseconds() - start) / reads / 1000)
  }
  const fixed = (xs: ReadonlyArray<number>) => xs.map((x) => x.toFixed(2)).join(", ")
  console.log(`outside a transaction: ${fixed(outside)} µs (median ${median(outside).toFixed(2)})`)
  console.log(`inside a transaction:  ${fixed(inside)} µs (median ${median(inside).toFixed(2)})`)
}).pipe(Effect.withTracerEnabled(false))

await Effect.runPromise(Effect.scoped(Effect.provide(program, SqlLive)))
rmSync(dir, { recursive: true, force: true })
