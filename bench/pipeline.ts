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
 *
 * `settings "<NAME=value …>"`: two apps of the service in this one process, on one database: A with the settings of
 * the environment, B with these on top (given to its layers through their own `ConfigProvider`, the tests'
 * `withSettings`; every setting is read through `Config`, src/Config.ts). Bursts of N requests alternate A B, B A, …
 * (`--rounds` pairs, after three of each unmeasured), so the machine's drift over minutes falls on both; printed:
 * each pair's B ÷ A and their median and quartiles. The two share the JIT's code and the heap, so a setting's cost
 * is measured with the other app's work beside it.
 *
 *   taskset -c 0 bun bench/pipeline.ts settings "RATE_LIMIT_ENABLED=false LOG_LEVEL=none" [--requests 10000]
 *     [--rounds 16] >/dev/null
 *
 * `versus`: the same pairs with the service as A and the baseline as B, each on a database of its own (the
 * baseline's settings from the environment: `BASELINE_AUDIT=1`, `BASELINE_CONTRACT=1`); B ÷ A above 1 is the
 * baseline spending more a request.
 *
 *   BASELINE_AUDIT=1 taskset -c 0 bun bench/pipeline.ts versus [--endpoint get|create] [--rounds 16] >/dev/null
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { FiberRef, Layer, ManagedRuntime } from "effect"
import { dropDatabases } from "../test/support/databases.ts"
import { secretsSettings } from "../test/support/secrets.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"
import { baselineOn, serviceOn, settingsFrom, userWithKey } from "./apps.ts"
import { arg } from "./args.ts"
import * as Memory from "./memory-server.ts"
import { median, nearestRank } from "./stats.ts"

const who = process.argv[2]
if (who !== "service" && who !== "baseline" && who !== "settings" && who !== "versus") {
  throw new Error('bun bench/pipeline.ts service|baseline|versus|settings "<NAME=value …>" [options]')
}
/** `settings`: B's settings, on top of the environment's. */
const settingsB: Record<string, string> = who === "settings" ? settingsFrom(process.argv[3] ?? "") : {}
const endpointFlag = process.argv.indexOf("--endpoint")
const endpoint = endpointFlag > 0 ? process.argv[endpointFlag + 1] : "get"
if (endpoint !== "get" && endpoint !== "create") throw new Error("--endpoint get|create")
const paired = who === "settings" || who === "versus"
const requests = arg("requests", paired ? 10_000 : 20_000)
const concurrency = arg("concurrency", 64)
const rounds = arg("rounds", paired ? 16 : 4)

// A fresh database as the tests make one (a SQLite file, or a new database on the PostgreSQL server), with the
// test key for the secrets at rest there; dropped at the end.
const url = await freshDatabaseUrl()
const postgres = url.startsWith("postgres")
Object.assign(process.env, secretsSettings(url))

// The user and key: made by the service's CLI, on its database (the baseline's keys on one of their own), and given
// to the baseline too. `versus`: the service on `url`, the baseline on a database of its own.
const keysUrl = who === "baseline" ? await freshDatabaseUrl() : url
const baselineUrl = who === "versus" ? await freshDatabaseUrl() : url
const { key, user } = userWithKey(keysUrl, `pipeline-${process.pid}@example.com`)

const memory = Layer.merge(Memory.layer, NodeHttpServer.layerContext)
/**
 * The app's layer; the service's with `settings` on top of the environment's, read through its own provider (the
 * tests' `withSettings`).
 */
const app = async (
  kind: "service" | "baseline",
  settings: Record<string, string> = {}
): Promise<Layer.Layer<Memory.MemoryServer, unknown>> => {
  // The service's limit (and the baseline's, with `BASELINE_CONTRACT=1`) out of reach, as bench/compare.sh sets it.
  process.env.RATE_LIMIT_PER_MINUTE = "1000000000"
  return kind === "service"
    ? Layer.merge(await serviceOn(memory, url, settings), memory)
    : Layer.merge(await baselineOn(memory, baselineUrl, `${user}:${key}`), memory)
}

// Tracing off, as both run by default (no exporter configured): set while the layers are built, since the server
// forks each request on the runtime it was built in.
const serve = async (kind: "service" | "baseline", settings?: Record<string, string>) => {
  const runtime = ManagedRuntime.make(
    (await app(kind, settings)).pipe(Layer.locally(FiberRef.currentTracerEnabled, false), Layer.orDie)
  )
  const { send } = await runtime.runPromise(Memory.MemoryServer)
  return { runtime, send, make: await requestsFor(send) }
}

const authorization = `Bearer ${key}`
const body = JSON.stringify({ name: "bench", description: "project" })
// With its length, as a client's request over HTTP/1.1 has it (the service reads the header before the body).
const create = () =>
  new Request("http://memory/v1/projects", {
    method: "POST",
    headers: { authorization, "content-type": "application/json", "content-length": String(body.length) },
    body
  })
/** What a burst sends an app: a create, or a GET of the project a first create made there. */
const requestsFor = async (send: Memory.Send): Promise<() => Request> => {
  const created = await send(create())
  if (created.status !== 201) throw new Error(`create: ${created.status} ${await created.text()}`)
  const { data } = (await created.json()) as { data: { id: string } }
  return endpoint === "create"
    ? create
    : () => new Request(`http://memory/v1/projects/${data.id}`, { headers: { authorization } })
}
type App = Awaited<ReturnType<typeof serve>>
const a = await serve(who === "baseline" ? "baseline" : "service")
const b =
  who === "settings" ? await serve("service", settingsB) : who === "versus" ? await serve("baseline") : undefined

let failed = 0
const burst = async (n: number, to: App = a) => {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next += 1
        const response = await to.send(to.make())
        await response.arrayBuffer()
        if (response.status >= 300) failed += 1
      }
    })
  )
}

/** This process's CPU a request over a burst of `requests`, after a full collection. */
const measured = async (to: App = a): Promise<number> => {
  Bun.gc(true)
  const before = process.cpuUsage()
  await burst(requests, to)
  const used = process.cpuUsage(before)
  return (used.user + used.system) / requests
}

const engine = postgres ? "PostgreSQL" : "SQLite"
const notOk = () => (failed > 0 ? `; ${failed} answers not 2xx` : "")
if (b === undefined) {
  await burst(requests)
  const perRequest: Array<number> = []
  for (let round = 0; round < rounds; round++) perRequest.push(await measured())
  console.error(
    `${who} ${endpoint} (${engine}), ${requests} requests ${concurrency} at a time: ` +
      `${perRequest.map((x) => x.toFixed(1)).join(", ")} µs of CPU a request (median ${median(perRequest).toFixed(1)})` +
      notOk()
  )
} else {
  for (let i = 0; i < 3; i++) {
    await burst(requests)
    await burst(requests, b)
  }
  const ofA: Array<number> = []
  const ofB: Array<number> = []
  for (let pair = 0; pair < rounds; pair++) {
    if (pair % 2 === 0) {
      ofA.push(await measured())
      ofB.push(await measured(b))
    } else {
      ofB.push(await measured(b))
      ofA.push(await measured())
    }
  }
  const ratios = ofB.map((x, i) => x / (ofA[i] ?? Number.NaN))
  const quartile = (q: number) => nearestRank(ratios, q)
  console.error(
    `${who} ${endpoint} (${engine}), ${who === "versus" ? "A: the service, B: the baseline" : `B: ${process.argv[3]}`}; ` +
      `${rounds} pairs of ${requests} requests ` +
      `${concurrency} at a time\n  A: ${ofA.map((x) => x.toFixed(1)).join(", ")} µs of CPU a request\n` +
      `  B: ${ofB.map((x) => x.toFixed(1)).join(", ")}\n` +
      `  B ÷ A: median ${median(ratios).toFixed(3)}, quartiles ${quartile(0.25).toFixed(3)}–${quartile(0.75).toFixed(3)}; ` +
      `medians ${median(ofA).toFixed(1)} and ${median(ofB).toFixed(1)} µs${notOk()}`
  )
  await b.runtime.dispose()
}
await a.runtime.dispose()
await dropDatabases()
process.exit(0)
