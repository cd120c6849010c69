/** Preloaded by every test run (bunfig.toml): what the suite does once its tests have run. */
import { afterAll } from "bun:test"
import { dropDatabases } from "./databases.ts"
import { removeTempDirs } from "./temp.ts"

afterAll(async () => {
  removeTempDirs()
  await dropDatabases()
})
