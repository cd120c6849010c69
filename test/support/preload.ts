/** Preloaded by every test run (bunfig.toml): what the suite does once its tests have run. */
import { afterAll } from "bun:test"
import { removeLeftovers } from "./leftovers.ts"
import { TEST_PASSWORD_HASH_MEMORY_KIB, TEST_SECRETS_KEY } from "./secrets.ts"

// PostgreSQL needs SECRETS_KEY: what a test starts with this process's environment (config.test.ts, the image's
// and the deployment's tests) gets the test key (test/support/secrets.ts), as the support's own servers do.
if (/^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? "") && !process.env.SECRETS_KEY) {
  process.env.SECRETS_KEY = TEST_SECRETS_KEY
}

// Passwords hashed at OWASP's minimum memory for argon2id (test/support/secrets.ts): servers started with this
// process's environment get it too.
process.env.PASSWORD_HASH_MEMORY_KIB ??= TEST_PASSWORD_HASH_MEMORY_KIB

// Dropping a file's PostgreSQL databases takes longer than the default 5 s on a loaded machine.
afterAll(removeLeftovers, 60_000)
