/**
 * The key ring of the test servers on PostgreSQL, where `SECRETS_KEY` is required (this process's own when it has
 * one): a fixed key, for tests only. On SQLite they keep `secrets.key` beside the database file, as a server does.
 * A module of its own, importing nothing: the preload (preload.ts) reads it before every test file, most of which
 * never load the service's modules that fixtures.ts does.
 */
export const TEST_SECRETS_KEY = "3KbG4VxO++UTjONN54gymXe0oCOLUT4gd16cS/HyB+I="

/** `SECRETS_KEY` for a server on `databaseUrl`: the test key on PostgreSQL, nothing on SQLite. */
export const secretsSettings = (databaseUrl: string): Record<string, string> =>
  /^postgres(ql)?:\/\//.test(databaseUrl) ? { SECRETS_KEY: process.env.SECRETS_KEY || TEST_SECRETS_KEY } : {}

/**
 * argon2id's memory for the passwords the tests set: OWASP's minimum for two passes (19 MiB), a fifth of the CPU of
 * the default 64 MiB. The preload puts it in the environment (for servers and CLIs started with it), and the
 * fixtures' and service harnesses' settings carry it (fixtures.ts); test/apikeys/password-hash.service.test.ts tests
 * the default.
 */
export const TEST_PASSWORD_HASH_MEMORY_KIB = "19456"
