/**
 * `ApiKeys.authenticate` in-process, what every request with an API key runs: the `credential-cache` fast path
 * (src/ApiKeys/Credentials.ts) against its idiomatic twin, each on its own runtime over one SQLite file, in
 * alternating rounds (A B A B). Prints the CPU time per authentication of each round and the medians.
 * Usage: taskset -c 0 bun bench/credentials.ts [--calls 20000] [--rounds 4]
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { ApiKeys } from "../src/ApiKeys/ApiKeys.ts"
import { SqlLive } from "../src/Sql/Client.ts"
import { Users } from "../src/Users/Users.ts"
import { withSettings } from "../test/support/fixtures.ts"
import { twinsOf } from "../test/support/helpers.ts"
import { removeLeftovers } from "../test/support/leftovers.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? Number(process.argv[i + 1]) : fallback
}
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

const figures = new Map<string, Array<number>>(contenders.map(({ name }) => [name, []]))
for (const { runtime } of contenders) await runtime.runPromise(calls) // warm-up, unmeasured
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? contenders : [...contenders].reverse()
  for (const { name, runtime } of order) {
    const started = process.cpuUsage()
    await runtime.runPromise(calls)
    const used = process.cpuUsage(started)
    const perCall = (used.user + used.system) / CALLS
    figures.get(name)?.push(perCall)
    console.log(`round ${round + 1} ${name}: ${perCall.toFixed(2)} µs of CPU an authentication`)
  }
}
const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 0 ? ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2 : (sorted[middle] ?? 0)
}
for (const [name, values] of figures) console.log(`${name}: median ${median(values).toFixed(2)} µs`)
for (const { runtime } of contenders) await runtime.dispose()
await removeLeftovers()
