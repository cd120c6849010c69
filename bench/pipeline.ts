/**
 * What an app's own work costs a request, in-process and with no socket (bench/memory-server.ts): the service (its
 * layers as src/main.ts builds them) or the baseline (bench/baseline/server.ts, its own schema), on a fresh SQLite
 * file, or on a fresh database of the PostgreSQL server `DATABASE_URL` names. N requests, C at a time, after as many
 * unmeasured; this process's CPU a request, each round. The requests are web `Request`s handed to the app as the
 * platform's servers hand theirs, so what differs between two runs is the app: no `node:http` or `Bun.serve`, no
 * socket, no client process. Run the two in turn, A B A B, pinned to one core; the service's access lines go to
 * stdout (send it to /dev/null), the figures to stderr.
 *
 *   taskset -c 0 bun bench/pipeline.ts service|baseline [--endpoint get|create] [--requests 20000]
 *     [--concurrency 64] [--rounds 4] >/dev/null
 */
import { join } from "node:path"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { FiberRef, Layer, ManagedRuntime } from "effect"
import { dropDatabases } from "../test/support/databases.ts"
import { secretsSettings } from "../test/support/secrets.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"
import { arg } from "./args.ts"
import * as Memory from "./memory-server.ts"
import { median } from "./stats.ts"

const who = process.argv[2]
if (who !== "service" && who !== "baseline") throw new Error("bun bench/pipeline.ts service|baseline [options]")
const endpointFlag = process.argv.indexOf("--endpoint")
const endpoint = endpointFlag > 0 ? process.argv[endpointFlag + 1] : "get"
if (endpoint !== "get" && endpoint !== "create") throw new Error("--endpoint get|create")
const requests = arg("requests", 20_000)
const concurrency = arg("concurrency", 64)
const rounds = arg("rounds", 4)

// A fresh database as the tests make one (a SQLite file, or a new database on the PostgreSQL server), with the
// test key for the secrets at rest there; dropped at the end.
const url = await freshDatabaseUrl()
const postgres = url.startsWith("postgres")
Object.assign(process.env, secretsSettings(url))

// The user and key: made by the service's CLI, on its database (the baseline's keys on one of their own), and given
// to the baseline too.
const keysUrl = who === "service" ? url : await freshDatabaseUrl()
const cli = (...args: ReadonlyArray<string>) => {
  const done = Bun.spawnSync(["bun", "src/cli.ts", ...args], {
    cwd: join(import.meta.dir, ".."),
    env: { ...process.env, DATABASE_URL: keysUrl }
  })
  if (done.exitCode !== 0) throw new Error(`cli ${args.join(" ")}: ${done.stderr.toString()}`)
  return JSON.parse(done.stdout.toString()).data
}
const user = cli("users", "create", "--email", `pipeline-${process.pid}@example.com`, "--name", "Bench").id as string
const key = cli("api-keys", "create", "--user", user, "--name", "bench", "--scopes", "read,write").key as string

const memory = Layer.merge(Memory.layer, NodeHttpServer.layerContext)
const app = async (): Promise<Layer.Layer<Memory.MemoryServer, unknown>> => {
  if (who === "service") {
    process.env.DATABASE_URL = url
    process.env.RATE_LIMIT_PER_MINUTE = "1000000000"
    const [{ httpLiveOn }, { ServicesLive }, { LoggingLive }] = await Promise.all([
      import("../src/Http.ts"),
      import("../src/main.ts"),
      import("../src/Observability/Logging.ts")
    ])
    return Layer.merge(httpLiveOn(memory), memory).pipe(Layer.provide(ServicesLive), Layer.provide(LoggingLive))
  }
  process.env.BASELINE_DB = postgres ? url : url.slice("sqlite:".length)
  process.env.BASELINE_KEYS = `${user}:${key}`
  const { baselineOn } = await import("./baseline/server.ts")
  return Layer.merge(baselineOn(memory), memory)
}

// Tracing off, as both run by default (no exporter configured): set while the layers are built, since the server
// forks each request on the runtime it was built in.
const runtime = ManagedRuntime.make(
  (await app()).pipe(Layer.locally(FiberRef.currentTracerEnabled, false), Layer.orDie)
)
const { send } = await runtime.runPromise(Memory.MemoryServer)

const authorization = `Bearer ${key}`
const body = JSON.stringify({ name: "bench", description: "project" })
// With its length, as a client's request over HTTP/1.1 has it (the service reads the header before the body).
const create = () =>
  new Request("http://memory/v1/projects", {
    method: "POST",
    headers: { authorization, "content-type": "application/json", "content-length": String(body.length) },
    body
  })
const created = await send(create())
if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`)
const { data } = (await created.json()) as { data: { id: string } }
const make =
  endpoint === "create"
    ? create
    : () => new Request(`http://memory/v1/projects/${data.id}`, { headers: { authorization } })

let failed = 0
const burst = async (n: number) => {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next += 1
        const response = await send(make())
        await response.arrayBuffer()
        if (response.status >= 300) failed += 1
      }
    })
  )
}

await burst(requests)
const perRequest: Array<number> = []
for (let round = 0; round < rounds; round++) {
  Bun.gc(true)
  const before = process.cpuUsage()
  await burst(requests)
  const used = process.cpuUsage(before)
  perRequest.push((used.user + used.system) / requests)
}
console.error(
  `${who} ${endpoint} (${postgres ? "PostgreSQL" : "SQLite"}), ${requests} requests ${concurrency} at a time: ` +
    `${perRequest.map((x) => x.toFixed(1)).join(", ")} µs of CPU a request (median ${median(perRequest).toFixed(1)})` +
    (failed > 0 ? `; ${failed} answers not 2xx` : "")
)
await runtime.dispose()
await dropDatabases()
process.exit(0)
