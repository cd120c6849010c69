/**
 * The apps the in-process benchmarks serve (bench/pipeline.ts on a server with no socket, bench/http-versus.ts on
 * real ones): the service as src/main.ts builds it, and the baseline of bench/baseline/server.ts.
 */
import { join } from "node:path"
import { Layer } from "effect"
import { withSettings } from "../test/support/fixtures.ts"

/** Settings written `NAME=value NAME=value` (spaces or commas between them), as a record. */
export const settingsFrom = (text: string): Record<string, string> =>
  Object.fromEntries(
    text
      .split(/[\s,]+/)
      .filter((pair) => pair !== "")
      .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)])
  )

/**
 * The service on `server`, on the database at `databaseUrl`, with `settings` on top of the environment's, read
 * through its own provider (the tests' `withSettings`).
 */
export const serviceOn = async <ROut, E, RIn>(
  server: Layer.Layer<ROut, E, RIn>,
  databaseUrl: string,
  settings: Readonly<Record<string, string>> = {}
) => {
  process.env.DATABASE_URL = databaseUrl
  const [{ httpLiveOn }, { ServicesLive }, { LoggingLive }] = await Promise.all([
    import("../src/Http.ts"),
    import("../src/main.ts"),
    import("../src/Observability/Logging.ts")
  ])
  const environment = Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined)
  return httpLiveOn(server).pipe(
    Layer.provide(ServicesLive),
    Layer.provide(LoggingLive),
    Layer.provide(withSettings({ ...Object.fromEntries(environment), ...settings }))
  )
}

/** The baseline on `server`, on its own database at `databaseUrl`, knowing the API keys `keys` (`user:key,…`). */
export const baselineOn = async <ROut, E, RIn>(
  server: Layer.Layer<ROut, E, RIn>,
  databaseUrl: string,
  keys: string
) => {
  process.env.BASELINE_DB = databaseUrl.startsWith("postgres") ? databaseUrl : databaseUrl.slice("sqlite:".length)
  process.env.BASELINE_KEYS = keys
  const baseline = await import("./baseline/server.ts")
  return baseline.baselineOn(server)
}

/** A user with a read and write API key, made by the service's CLI on the database at `databaseUrl`. */
export const userWithKey = (databaseUrl: string, email: string): { readonly user: string; readonly key: string } => {
  const cli = (...args: ReadonlyArray<string>) => {
    const done = Bun.spawnSync(["bun", "src/cli.ts", ...args], {
      cwd: join(import.meta.dir, ".."),
      env: { ...process.env, DATABASE_URL: databaseUrl }
    })
    if (done.exitCode !== 0) throw new Error(`cli ${args.join(" ")}: ${done.stderr.toString()}`)
    return JSON.parse(done.stdout.toString()).data
  }
  const user = cli("users", "create", "--email", email, "--name", "Bench").id as string
  return { user, key: cli("api-keys", "create", "--user", user, "--name", "bench", "--scopes", "read,write").key }
}
