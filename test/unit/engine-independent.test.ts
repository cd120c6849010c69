// engine-independent: reads test files as text; no database
/**
 * CI runs the suite on SQLite and again on PostgreSQL, leaving out of the second run the files whose first line says
 * `// engine-independent: <why>` (.ci/run, docs/testing.md). A file so marked reads no database of the run's, or (the
 * browser tests, /docs) only through the API whose storage the other files test on both engines. It must not ask
 * which engine the run is on, or take a database of the run's for itself: one that starts to fails here, rather
 * than going untested on PostgreSQL.
 */
import { expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join, relative } from "node:path"

const root = join(import.meta.dir, "..", "..")
const marker = /^\/\/ engine-independent: \S/
const files = [...new Bun.Glob("test/**/*.test.ts").scanSync({ cwd: root })].sort()
const marked = files.filter((file) => marker.test(readFileSync(join(root, file), "utf8")))
const self = relative(root, import.meta.path)

test("some files are marked, each with its reason, and most are not", () => {
  expect(marked.length).toBeGreaterThan(0)
  expect(marked.length).toBeLessThan(files.length / 2)
})

test("no marked file depends on the engine the run is on", () => {
  const engineWords = /usingPostgres|env\.DATABASE_URL|freshDatabaseUrl|migratedDatabaseUrl|createDatabase/
  const dependent = marked.filter((file) => file !== self && engineWords.test(readFileSync(join(root, file), "utf8")))
  expect(dependent).toEqual([])
})
