/** Preloaded by every test run (bunfig.toml): what the suite does once its tests have run. */
import { afterAll } from "bun:test"
import { removeLeftovers } from "./leftovers.ts"

// Dropping a file's PostgreSQL databases takes longer than the default 5 s on a loaded machine.
afterAll(removeLeftovers, 60_000)
