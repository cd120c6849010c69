/**
 * What SQLite itself spends on one project insert (in its own transaction, as a create writes it), on the service's
 * schema as migrated, and on the same schema without what the lists need: the counters' triggers (the totals), the
 * unfiltered-sort indexes (migration 0014), and all of them at once, leaving the one index the baseline
 * (bench/baseline/server.ts) has. bun:sqlite directly, no Effect: the figure is the database's work alone.
 * Rounds A B C D, A B C D…; CPU µs per insert, medians and spread. `--rows N` starts every run on a table that already
 * holds N projects of the user (named at random, as people name them), to see what a growing table costs each variant.
 * Usage: taskset -c 0 bun bench/insert-cost.ts [--inserts 4000] [--rounds 5] [--rows 0]
 */
import { Database } from "bun:sqlite"
import { copyFileSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlLive } from "../src/Sql/Client.ts"
import { Users } from "../src/Users/Users.ts"
import { withDatabaseUrl } from "../test/support/fixtures.ts"
import { arg } from "./args.ts"
import { median } from "./stats.ts"

const INSERTS = arg("inserts", 4000)
const ROUNDS = arg("rounds", 5)
const ROWS = arg("rows", 0)

// A migrated database with one user, copied afresh for every run.
const dir = mkdtempSync(join(tmpdir(), "insert-cost-"))
const template = join(dir, "template.sqlite")
const runtime = ManagedRuntime.make(
  Layer.mergeAll(Users.Default).pipe(Layer.provideMerge(SqlLive), Layer.provide(withDatabaseUrl(`sqlite:${template}`)))
)
const user = await runtime.runPromise(
  Effect.flatMap(Users, (users) => users.create({ email: "insert-cost@example.com", name: "Insert" }))
)
await runtime.dispose()
if (ROWS > 0) {
  const db = new Database(template)
  const fill = db.query(
    "INSERT INTO projects (id, owner_id, team_id, name, description, visibility, status, created_at, updated_at) VALUES (?, ?, NULL, ?, '', 'private', 'active', ?, ?)"
  )
  const since = Date.now() - ROWS
  db.transaction(() => {
    for (let i = 0; i < ROWS; i++) {
      const at = new Date(since + i).toISOString()
      fill.run(`proj_0${String(i).padStart(9, "0")}`, user.id, `project ${Math.random().toString(36).slice(2)}`, at, at)
    }
  })()
  db.close()
}

const names = (db: Database, type: "index" | "trigger") =>
  db
    .query<{ name: string }, [string]>(
      "SELECT name FROM sqlite_master WHERE tbl_name = 'projects' AND type = ? AND name NOT LIKE 'sqlite_%'"
    )
    .all(type)
    .map((row) => row.name)

const variants: ReadonlyArray<readonly [string, (db: Database) => void]> = [
  ["as migrated", () => {}],
  [
    "without the counters' triggers",
    (db) =>
      names(db, "trigger").forEach((n) => {
        db.run(`DROP TRIGGER ${n}`)
      })
  ],
  [
    "without migration 0014's indexes",
    (db) =>
      names(db, "index")
        .filter((n) => n.includes("_all_"))
        .forEach((n) => {
          db.run(`DROP INDEX ${n}`)
        })
  ],
  [
    "the baseline's one index",
    (db) => {
      names(db, "trigger").forEach((n) => {
        db.run(`DROP TRIGGER ${n}`)
      })
      names(db, "index").forEach((n) => {
        db.run(`DROP INDEX ${n}`)
      })
      db.run("CREATE INDEX projects_owner_created_only ON projects (owner_id, created_at, id)")
    }
  ]
]

const runOnce = (prepare: (db: Database) => void, round: number): number => {
  const file = join(dir, `run-${round}.sqlite`)
  copyFileSync(template, file)
  const db = new Database(file)
  db.run("PRAGMA journal_mode = WAL")
  db.run("PRAGMA synchronous = NORMAL")
  prepare(db)
  const insert = db.query(
    "INSERT INTO projects (id, owner_id, team_id, name, description, visibility, status, created_at, updated_at) VALUES (?, ?, NULL, ?, ?, 'private', 'active', ?, ?)"
  )
  const started = process.cpuUsage()
  for (let i = 0; i < INSERTS; i++) {
    const now = new Date().toISOString()
    db.run("BEGIN")
    insert.run(`proj_${round}_${i}`, user.id, `project ${i}`, `description ${i}`, now, now)
    db.run("COMMIT")
  }
  const used = process.cpuUsage(started)
  db.close()
  rmSync(file, { force: true })
  return (used.user + used.system) / INSERTS
}

const figures = variants.map(() => [] as Array<number>)
for (let round = 0; round < ROUNDS; round++) {
  for (const [v, [, prepare]] of variants.entries()) figures[v]!.push(runOnce(prepare, round))
}
console.log(
  `load average ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")}; ${INSERTS} inserts × ${ROUNDS} rounds, on ${ROWS} rows`
)
variants.forEach(([label], v) => {
  const xs = figures[v]!
  const m = median(xs)
  console.log(
    `${label.padEnd(36)} ${m.toFixed(1).padStart(6)} µs per insert (±${(((Math.max(...xs) - Math.min(...xs)) / 2 / m) * 100).toFixed(0)} %)`
  )
})
rmSync(dir, { recursive: true, force: true })
