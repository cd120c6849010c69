/**
 * Temporary directories for the tests (a server's SQLite file is in one: a run of the suite makes about 150), removed
 * once the tests of the process have run: `removeTempDirs` is a global `afterAll` (test/support/preload.ts, preloaded
 * by bunfig.toml), which runs after each file when files run in processes of their own (`bun run test`) and after the
 * last one when they share one (`bun test`).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const made: Array<string> = []

/** A new directory under the system's temporary one, its name starting with `prefix`. */
export const tempDir = (prefix: string): string => {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  made.push(dir)
  return dir
}

/** Removes every directory `tempDir` made in this process. */
export const removeTempDirs = (): void => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
}
