/**
 * The trip of a keyed create as docs/request-pipeline.md lists it, against the files the code runs: a keyed create
 * run under `bun test --coverage` (test/support/trip-fixture.ts, a process of its own: coverage is a setting of the
 * test process) with one create, seven and thirteen. Each line of a create's trip runs more often in each run than in
 * the one before, six times more for each time a create runs it. What the server does beside the creates once a
 * process (the retention sweep at start-up, which may end before the creates or after them, or be cut short when the
 * server stops) runs each of its lines once at most in a run, so none of them more often in each run than in the one
 * before, and it adds little to a line of the trip beside six creates. So the files of src/ of rank 1 and above (the
 * ranks of scripts/check-imports.ts; rank 0, the domain's and observability's helpers, the page leaves out) with a
 * line that ran more often with seven creates than with one, and with thirteen than with seven, are the ones a keyed
 * create enters. On SQLite they must be the page's list; on PostgreSQL the files the page says take the place of
 * SQLite's, as many as it says.
 */
import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { rankOf } from "../../scripts/check-imports.ts"
import { tempDir } from "../support/temp.ts"

const root = join(import.meta.dir, "..", "..")
const page = readFileSync(join(root, "docs", "request-pipeline.md"), "utf8")
const postgres = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? "")

/** The files the page's list names (between `<!-- trip -->` and `<!-- /trip -->`), each once. */
const listed = (): ReadonlySet<string> => {
  const list = page.slice(page.indexOf("<!-- trip -->"), page.indexOf("<!-- /trip -->"))
  return new Set([...list.matchAll(/^ *- `(src\/[^`]+)`/gm)].map((found) => found[1] ?? ""))
}

/** The page's list is SQLite's trip; on PostgreSQL these leave it (the writer's batch, SQLite's connection)… */
const SQLITE_ONLY = ["src/Sql/GroupCommit.ts", "src/Sql/SqliteClient.ts"]
/** …and these join it (the key's lookup, which the credential cache spares SQLite; the pool; its statements). */
const POSTGRES_ONLY = ["src/ApiKeys/Repo.ts", "src/Sql/PgPool.ts", "src/Sql/PgPrepared.ts"]

/** Each line's hits by file, from `bun test --coverage` of the fixture with `creates` keyed creates. */
const hits = (creates: number): Map<string, Map<number, number>> => {
  const dir = tempDir("trip-coverage-")
  const run = Bun.spawnSync(
    [
      process.execPath,
      "test",
      "--coverage",
      "--coverage-reporter=lcov",
      `--coverage-dir=${dir}`,
      "./test/support/trip-fixture.ts"
    ],
    { cwd: root, env: { ...process.env, TRIP_CREATES: String(creates) }, stdout: "pipe", stderr: "pipe" }
  )
  expect({ exitCode: run.exitCode, output: run.exitCode === 0 ? "" : run.stderr.toString() }).toEqual({
    exitCode: 0,
    output: ""
  })
  const byFile = new Map<string, Map<number, number>>()
  let lines = new Map<number, number>()
  for (const line of readFileSync(join(dir, "lcov.info"), "utf8").split("\n")) {
    if (line.startsWith("SF:")) {
      lines = new Map()
      byFile.set(line.slice(3), lines)
    } else if (line.startsWith("DA:")) {
      const [at = "", count = ""] = line.slice(3).split(",")
      lines.set(Number(at), Number(count))
    }
  }
  return byFile
}

describe("the keyed create's trip (docs/request-pipeline.md), measured", () => {
  test("the files of rank 1 and above with a line that more keyed creates run more often are the ones the page lists", () => {
    const [one, seven, thirteen] = [hits(1), hits(7), hits(13)]
    const entered = [...thirteen]
      .filter(([file, lines]) => {
        if (!file.startsWith("src/") || rankOf(file.slice(4)) < 1) return false
        return [...lines].some(
          ([at, count]) =>
            (one.get(file)?.get(at) ?? 0) < (seven.get(file)?.get(at) ?? 0) && (seven.get(file)?.get(at) ?? 0) < count
        )
      })
      .map(([file]) => file)
      .sort()
    const sqlite = listed()
    const expected = postgres
      ? [...[...sqlite].filter((file) => !SQLITE_ONLY.includes(file)), ...POSTGRES_ONLY].sort()
      : [...sqlite].sort()
    expect(entered).toEqual(expected)
    if (postgres) {
      expect(Number(/on\s+PostgreSQL,\s+measured\s+the\s+same\s+way,\s+(\d+)\s+files/.exec(page)?.[1])).toBe(
        expected.length
      )
      for (const file of POSTGRES_ONLY)
        expect({ file, named: page.includes(`\`${file}\``) }).toEqual({ file, named: true })
    }
  }, 120_000)
})
