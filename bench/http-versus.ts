/**
 * Contenders served over real sockets from one process, loaded in turn by `wrk` from another: what each costs a
 * request with the HTTP server included, without the between-process noise of bench/compare.sh (each process its own
 * heap, JIT and memory layout) and without pipeline.ts's socketless server. Each contender is an app on a port of
 * its own, on a fresh database (the service's; the baselines' one of their own):
 *
 * - `service`: the service as src/main.ts serves it (`node:http`, `makeNodeServer` with the default idle time-out,
 *   10 s), at the environment's settings; `service:NAME=value,NAME=value` with those settings on top (`withSettings`,
 *   as pipeline.ts's `settings`);
 * - `baseline:node`, `baseline:bun`: bench/baseline/server.ts on `node:http` or on `Bun.serve` (`BASELINE_AUDIT=1`
 *   from the environment: the issue's floor).
 *
 * Rounds of one `wrk` burst each (`-t1 -c64`, `--burst` long, on core 1), in A B C, C B A order, after two unmeasured;
 * this process's CPU a request over each burst (the others idle meanwhile), after a full collection. Printed: each
 * pair's rate ratio (x ÷ y) and CPU ratio (y's CPU ÷ x's: under 1, x spends more), each round's, their medians and
 * nearest-rank quartiles; a round a contender answered nothing in is left out of its pairs, and answers that were not
 * 2xx are counted and said. Run it pinned to core 0, with PostgreSQL's processes on core 1:
 *
 *   BASELINE_AUDIT=1 DATABASE_URL=postgres://… taskset -c 0 bun bench/http-versus.ts service baseline:node \
 *     baseline:bun [--endpoint get|create] [--rounds 20] [--burst 3s] >/dev/null
 *
 * The access lines go to stdout (send them to a file, as the service's go at its defaults), the figures to stderr.
 */
import { createServer } from "node:http"
import { join } from "node:path"
import { BunHttpServer } from "@effect/platform-bun"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Duration, FiberRef, Layer, ManagedRuntime } from "effect"
import { dropDatabases } from "../test/support/databases.ts"
import { secretsSettings } from "../test/support/secrets.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"
import { baselineOn, serviceOn, settingsFrom, userWithKey } from "./apps.ts"
import { arg } from "./args.ts"
import { median, nearestRank } from "./stats.ts"

const flagged = new Set(["--endpoint", "--rounds", "--burst"])
const contenders = process.argv
  .slice(2)
  .filter((word, i, all) => !word.startsWith("--") && !flagged.has(all[i - 1] ?? ""))
if (contenders.length < 2 || contenders.some((c) => !/^(service(:.+)?|baseline:(node|bun))$/.test(c))) {
  throw new Error("bun bench/http-versus.ts service[:NAME=value,…] baseline:node baseline:bun … [options]")
}
const endpointFlag = process.argv.indexOf("--endpoint")
const endpoint = endpointFlag > 0 ? process.argv[endpointFlag + 1] : "get"
if (endpoint !== "get" && endpoint !== "create") throw new Error("--endpoint get|create")
const rounds = arg("rounds", 20)
const burstFlag = process.argv.indexOf("--burst")
const burstFor = burstFlag > 0 ? (process.argv[burstFlag + 1] ?? "3s") : "3s"

// The service's database, as the tests make one, with the test key for its secrets at rest; the user and key made
// by its CLI there and given to the baselines too, whose own database is another.
const url = await freshDatabaseUrl()
const postgres = url.startsWith("postgres")
Object.assign(process.env, secretsSettings(url))
const baselineUrl = await freshDatabaseUrl()
const { key, user } = userWithKey(url, `http-versus-${process.pid}@example.com`)
// The limits out of reach, as bench/compare.sh sets them.
process.env.RATE_LIMIT_PER_MINUTE = "1000000000"

const host = "127.0.0.1"
const appOf = async (contender: string, port: number): Promise<Layer.Layer<never, unknown>> => {
  if (contender.startsWith("service")) {
    const settings = settingsFrom(contender.split(":")[1] ?? "")
    const { makeNodeServer } = await import("../src/Http.ts")
    const server = NodeHttpServer.layer(makeNodeServer({ idleTimeout: Duration.seconds(10) }), { port, host })
    return serviceOn(server, url, settings)
  }
  const server =
    contender === "baseline:bun"
      ? BunHttpServer.layer({ port, hostname: host })
      : NodeHttpServer.layer(createServer, { port, host })
  return baselineOn(server, baselineUrl, `${user}:${key}`)
}

// Tracing off, as both run by default (no exporter configured).
const ports = contenders.map((_, i) => 4510 + i)
const runtimes: Array<ManagedRuntime.ManagedRuntime<never, unknown>> = []
for (const [i, contender] of contenders.entries()) {
  const runtime = ManagedRuntime.make(
    (await appOf(contender, ports[i] ?? 0)).pipe(Layer.locally(FiberRef.currentTracerEnabled, false), Layer.orDie)
  )
  await runtime.runtime()
  runtimes.push(runtime)
}

const authorization = `Bearer ${key}`
/** A GET's ids file: the id of a project made on that contender. */
const idsFile = async (port: number): Promise<string> => {
  const created = await fetch(`http://${host}:${port}/v1/projects`, {
    method: "POST",
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench" })
  })
  if (created.status !== 201) throw new Error(`create on ${port}: ${created.status} ${await created.text()}`)
  const { data } = (await created.json()) as { data: { id: string } }
  const file = `/tmp/http-versus-${process.pid}-${port}`
  await Bun.write(file, `${data.id}\n`)
  return file
}
const ids = await Promise.all(ports.map(idsFile))

let failed = 0
/** One `wrk` burst against the contender at `i`: its rate, and this process's CPU a request. */
const burst = async (i: number) => {
  Bun.gc(true)
  const before = process.cpuUsage()
  const target = `http://${host}:${ports[i]}`
  const load =
    endpoint === "create"
      ? ["-s", "bench/create.lua", `${target}/v1/projects`]
      : ["-s", "bench/ids.lua", target, "--", ids[i] ?? ""]
  const wrk = Bun.spawn(
    ["taskset", "-c", "1", "wrk", "-t1", "-c64", `-d${burstFor}`, "-H", `Authorization: ${authorization}`, ...load],
    { stdout: "pipe", cwd: join(import.meta.dir, "..") }
  )
  const out = await new Response(wrk.stdout).text()
  await wrk.exited
  const used = process.cpuUsage(before)
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0)
  const rate = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0)
  failed += Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  return { rate, cpu: requests === 0 ? Number.NaN : (used.user + used.system) / requests }
}

for (let warm = 0; warm < 2; warm++) for (const i of contenders.keys()) await burst(i)
const pairs = contenders.flatMap((_, x) => contenders.flatMap((__, y) => (x < y ? [[x, y] as const] : [])))
const rates = pairs.map(() => [] as Array<number>)
const cpus = pairs.map(() => [] as Array<number>)
const engine = postgres ? "PostgreSQL" : "SQLite"
console.error(`${endpoint} (${engine}), ${rounds} rounds of ${burstFor} bursts, 64 connections, one process`)
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? [...contenders.keys()] : [...contenders.keys()].reverse()
  const got = new Map<number, { rate: number; cpu: number }>()
  for (const i of order) got.set(i, await burst(i))
  // A burst that made no request (a stalled server) is left out of its pairs, and said.
  for (const [k, [x, y]] of pairs.entries()) {
    const a = got.get(x)
    const b = got.get(y)
    if (a === undefined || b === undefined || !(a.rate > 0 && b.rate > 0)) continue
    rates[k]?.push(a.rate / b.rate)
    cpus[k]?.push(b.cpu / a.cpu)
  }
  console.error(
    `  round ${round + 1}: ${order.map((i) => `${contenders[i]} ${got.get(i)?.rate} req/s, ${got.get(i)?.cpu.toFixed(0)} µs`).join("; ")}`
  )
}
const quartiles = (values: ReadonlyArray<number>) =>
  `${nearestRank(values, 0.25).toFixed(3)}–${nearestRank(values, 0.75).toFixed(3)}`
for (const [k, [x, y]] of pairs.entries()) {
  const r = rates[k] ?? []
  const c = cpus[k] ?? []
  console.error(
    `${contenders[x]} ÷ ${contenders[y]}: rate ${median(r).toFixed(3)} (${quartiles(r)}), ` +
      `CPU ${median(c).toFixed(3)} (${quartiles(c)}), ${r.length} rounds`
  )
}
if (failed > 0) console.error(`${failed} answers were not 2xx: these figures do not count`)
for (const runtime of runtimes) await runtime.dispose()
for (const file of ids) await Bun.file(file).delete()
await dropDatabases()
process.exit(0)
