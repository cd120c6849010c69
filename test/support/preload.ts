/** Preloaded by every test run (bunfig.toml): what the suite does once its tests have run. */
import { afterAll } from "bun:test"
import { removeLeftovers } from "./leftovers.ts"

afterAll(removeLeftovers)
