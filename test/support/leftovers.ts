/**
 * What a test process or a benchmark made and must not leave behind: its temporary directories (temp.ts) and its
 * PostgreSQL databases (databases.ts). The preload (test/support/preload.ts) removes them once a process's tests have
 * run; a benchmark removes them as it ends.
 */
import { dropDatabases } from "./databases.ts"
import { removeTempDirs } from "./temp.ts"

export const removeLeftovers = async (): Promise<void> => {
  removeTempDirs()
  await dropDatabases()
}
