/**
 * `ApiKeys.authenticate` in-process, what every request with an API key runs: the `credential-cache` fast path
 * (src/ApiKeys/Credentials.ts) against its idiomatic twin, each on its own runtime over one SQLite file, in
 * alternating rounds (A B A B). Prints the CPU time per authentication of each round and the medians.
 * `--plain` adds a third contender: the key lookup's statement written plainly (one `sql` template, the hash compared,
 * no schema, no service code) on the first runtime's client, what an expert's lookup costs. On PostgreSQL, where the
 * cache does not run, that is the comparison that says something: `DATABASE_URL=postgres://… … --plain`.
 * Usage: taskset -c 0 bun bench/credentials.ts [--calls 20000] [--rounds 4] [--plain]
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import { ApiKeys } from "../src/ApiKeys/ApiKeys.ts"
import { sha256Hex } from "../src/Domain/Secrets.ts"
import { SqlLive } from "../src/Sql/Client.ts"
import { Users } from "../src/Users/Users.ts"
import { withSettings } from "../test/support/fixtures.ts"
import { twinsOf } from "../test/support/helpers.ts"
import { removeLeftovers } from "../test/support/leftovers.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"
import { arg } from "./args.ts"
import { median } from "./stats.ts"

const CALLS = arg("calls", 20_000)
const ROUNDS = arg("rounds", 4)

const databaseUrl = await freshDatabaseUrl()
const runtimeOf = (fastPaths: string) =>
  ManagedRuntime.make(
    Layer.mergeAll(ApiKeys.Default, Users.Default).pipe(
      Layer.provideMerge(SqlLive),
      Layer.provide(withSettings({ DATABASE_URL: databaseUrl, FAST_PATHS: fastPaths }))
    )
  )
const contenders = twinsOf("credential-cache").map(([name, fastPaths]) => ({ name, runtime: runtimeOf(fastPaths) }))
const [first] = contenders
if (first === undefined) throw new Error("no contenders")

const key = await first.runtime.runPromise(
  Effect.gen(function* () {
    const user = yield* (yield* Users).create({ email: `credentials-${Date.now()}@example.com`, name: "Bench" })
    return yield* (yield* ApiKeys).issue(user.id, { name: "bench", scopes: ["read", "write"], expires_at: null })
  })
)

// As in the server with tracing off (the default).
const calls = Effect.withTracerEnabled(
  Effect.flatMap(ApiKeys, (keys) =>
    Effect.gen(function* () {
      for (let i = 0; i < CALLS; i++) yield* keys.authenticate(key.key)
    })
  ),
  false
)

/** `--plain`: the lookup's statement and the hash check, written plainly. */
const plainCalls = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.gen(function* () {
    const prefix = key.key.slice(0, 12)
    for (let i = 0; i < CALLS; i++) {
      const hash = sha256Hex(key.key)
      const rows = yield* sql<{ readonly key_hash: string }>`
        SELECT k.id, k.user_id, u.name AS user_name, u.org_id, k.key_hash, k.scopes, k.revoked_at, k.expires_at,
          k.last_used_at
        FROM api_keys k JOIN users u ON u.id = k.user_id
        WHERE k.prefix = ${prefix} AND u.suspended_at IS NULL`
      if (!rows.some((row) => row.key_hash === hash)) throw new Error("the plain lookup found no key")
    }
  })
).pipe(Effect.orDie)

const runs: ReadonlyArray<{ readonly name: string; readonly run: () => Promise<void> }> = [
  ...contenders.map(({ name, runtime }) => ({ name, run: () => runtime.runPromise(calls) })),
  ...(process.argv.includes("--plain") ? [{ name: "plain", run: () => first.runtime.runPromise(plainCalls) }] : [])
]
const figures = new Map<string, Array<number>>(runs.map(({ name }) => [name, []]))
for (const { run } of runs) await run() // warm-up, unmeasured
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? runs : [...runs].reverse()
  for (const { name, run } of order) {
    const started = process.cpuUsage()
    await run()
    const used = process.cpuUsage(started)
    const perCall = (used.user + used.system) / CALLS
    figures.get(name)?.push(perCall)
    console.log(`round ${round + 1} ${name}: ${perCall.toFixed(2)} µs of CPU an authentication`)
  }
}
for (const [name, values] of figures) console.log(`${name}: median ${median(values).toFixed(2)} µs`)
for (const { runtime } of contenders) await runtime.dispose()
await removeLeftovers()
