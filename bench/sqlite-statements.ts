/**
 * Preloaded into a server on SQLite (`BUN_OPTIONS="--preload $PWD/bench/sqlite-statements.ts"`, or `BENCH_PRELOAD`
 * for bench/deliveries.ts): times each statement `bun:sqlite` runs for it, by its text, and when the process ends
 * (or on SIGUSR2) writes the totals, costliest first, to `$SQLITE_STATEMENTS_OUT.<pid>` (`/tmp/sqlite-statements`
 * by default; a `Worker`'s, the WAL checkpointer's, to `….worker`). A CPU profile samples wall time, so it charges a
 * waiting server's idle time to whatever native call ran last (`all`, `fetch`); this counts only the time spent
 * inside a statement. It wraps each statement the server prepares (`Database.prototype.query`, whose statements carry
 * their own `all`, `values`, `run` and `get`) and `Database.prototype.run`: a fraction of a microsecond a statement.
 */
import { Database, type Statement } from "bun:sqlite"
import { writeFileSync } from "node:fs"
import { isMainThread } from "node:worker_threads"

const totals = new Map<string, { calls: number; nanoseconds: number }>()

/** A statement's text on one line, as the totals are kept by. */
const keyOf = (text: string) => text.replace(/\s+/g, " ").trim().slice(0, 200)

const timed = <A>(key: string, run: () => A): A => {
  const started = Bun.nanoseconds()
  try {
    return run()
  } finally {
    const total = totals.get(key) ?? { calls: 0, nanoseconds: 0 }
    total.calls++
    total.nanoseconds += Bun.nanoseconds() - started
    totals.set(key, total)
  }
}

const wrapped = new WeakSet<Statement>()
const query = Database.prototype.query
Database.prototype.query = function (this: Database, text: string) {
  const statement = query.call(this, text)
  if (!wrapped.has(statement)) {
    wrapped.add(statement)
    const { all, get, run, values } = statement
    const key = keyOf(text)
    Object.assign(statement, {
      all: (...params: Parameters<typeof all>) => timed(key, () => all.apply(statement, params)),
      get: (...params: Parameters<typeof get>) => timed(key, () => get.apply(statement, params)),
      run: (...params: Parameters<typeof run>) => timed(key, () => run.apply(statement, params)),
      values: (...params: Parameters<typeof values>) => timed(key, () => values.apply(statement, params))
    })
  }
  return statement
} as typeof query

const run = Database.prototype.run
Database.prototype.run = function (this: Database, text: string, ...params: Array<never>) {
  return timed(keyOf(text), () => run.call(this, text, ...params))
} as typeof run

const write = () => {
  const rows = [...totals].sort(([, a], [, b]) => b.nanoseconds - a.nanoseconds)
  const sum = rows.reduce((total, [, { nanoseconds }]) => total + nanoseconds, 0)
  const lines = rows.map(
    ([text, { calls, nanoseconds }]) =>
      `${(nanoseconds / 1e6).toFixed(1).padStart(9)} ms ${String(calls).padStart(8)} × ${(nanoseconds / calls / 1e3)
        .toFixed(1)
        .padStart(7)} µs  ${text}`
  )
  writeFileSync(
    `${process.env.SQLITE_STATEMENTS_OUT ?? "/tmp/sqlite-statements"}.${process.pid}${isMainThread ? "" : ".worker"}`,
    [`${(sum / 1e9).toFixed(3)} s in ${rows.length} statements`, ...lines, ""].join("\n")
  )
}

process.on("exit", write)
process.on("SIGUSR2", write)
