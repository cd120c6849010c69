/**
 * Delivery benchmark: a loopback receiver (this process, core 1) and the server (core 0).
 *  1. Throughput: N projects fanned out to H webhooks each, all deliveries counted at the receiver. Before it, the
 *     same number of creates by a user with no webhook: the server's CPU for those, taken from the throughput
 *     phase's (both counted until the server is idle), over the deliveries, is a delivery's own CPU, to set beside
 *     the baseline's CPU a GET (bench/compare.sh). It still holds what a create does for its deliveries (the
 *     subscriptions read, their rows written), and, as a difference of two runs, both runs' noise.
 *     Then the drain: the same creates while the receiver holds the attempts, then released: the server's CPU
 *     for delivering them alone (from a backlog, claimed from the table).
 *  2. First-attempt lag at a fixed event rate: receive time minus the event's created_at, p50/p99. It starts once
 *     the server is idle (the throughput phase's last outcomes written), as 3. does, and is measured after a
 *     lead-in at the same rate (`--lead-in`, 1 s; its lags are printed apart). BENCH_LAG_FILE=<path> writes
 *     each receipt's time and lag there, and this process's own stalls, to see when the tail happens.
 *  3. Retry timing: a receiver that fails each delivery's first attempt; attempt 2 is due 1 s after attempt 1
 *     (WEBHOOK_RETRY_DELAYS=1s,…): how far from 1 s the gap between the two receipts is.
 * Before 1., `--warmup` events (200 by default, fanned out like 1.) are created and delivered unmeasured, so the
 * figures are the warm server's, not its JIT's first seconds.
 * Usage: bun bench/deliveries.ts [--events 2000] [--hooks 10] [--rate 500] [--seconds 10] [--warmup 200] [--lead-in 1]
 *        [--database-cores 1 | any] (PostgreSQL of this machine: the cores it runs on meanwhile, see `pinDatabase`)
 *        BENCH_SERVER_DIR=<another checkout> measures that one (side by side, A B A B)
 *        [--rate-limit N] sets `rate_limit` N on the throughput phase's webhooks (the service's pacing, see
 *        docs/webhooks.md); without it they have none, as before the setting existed, so "no limit" can be compared
 *        with an earlier checkout. A server without the setting refuses the field.
 * Uses DATABASE_URL when set (a postgres URL: a fresh database is made on it), else a temporary SQLite file. On a
 * PostgreSQL of this machine the CPU of the backends serving that database is printed beside the server's.
 */
import { join } from "node:path"
import { SQL } from "bun"
import { secretsSettings } from "../test/support/fixtures.ts"
import { removeLeftovers } from "../test/support/leftovers.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"
import { arg } from "./args.ts"

const EVENTS = arg("events", 2000)
const HOOKS = arg("hooks", 10)
const RATE = arg("rate", 500)
const SECONDS = arg("seconds", 10)
const WARMUP = arg("warmup", 200)
const RATE_LIMIT = process.argv.includes("--rate-limit") ? arg("rate-limit", 0) : null
const PORT = 3931
// The service to measure: this checkout, or another one (BENCH_SERVER_DIR, e.g. a checkout of an earlier commit).
const ROOT = process.env.BENCH_SERVER_DIR ?? join(import.meta.dir, "..")

// This process (client and receiver) on core 1, every thread of it, so it never takes the server's core.
Bun.spawnSync(["taskset", "-a", "-cp", "1", String(process.pid)], { stdout: "ignore" })

const DATABASE_URL = await freshDatabaseUrl()
// On PostgreSQL the server needs SECRETS_KEY (the webhook secrets it signs with are stored encrypted): the test key.
const env = { ...process.env, DATABASE_URL, LOG_LEVEL: "warn", ...secretsSettings(DATABASE_URL) }
const cli = async (...args: Array<string>) => {
  const proc = Bun.spawn(["bun", "src/cli.ts", ...args], { cwd: ROOT, env, stdout: "pipe" })
  return JSON.parse(await new Response(proc.stdout).text()).data
}

let received = 0
const lags: Array<number> = []
/** The lags of the lead-in's events (see 2. below), apart. */
const leadLags: Array<number> = []
let measuringLag = false
// BENCH_LAG_FILE=<path>: each lag-phase receipt as "<receive time, ms since epoch> <lag ms>", to see when the tail happens.
const lagLog: Array<string> | undefined = process.env.BENCH_LAG_FILE ? [] : undefined
// With it, this process's own event-loop stalls over 8 ms too ("stall <time> <ms>"): a stalled receiver adds to the lag.
if (lagLog) {
  let last = performance.now()
  setInterval(() => {
    const now = performance.now()
    if (now - last > 8 && measuringLag) lagLog.push(`stall ${Date.now()} ${Math.round(now - last)}`)
    last = now
  }, 2).unref()
}
// Retry timing: when each delivery's first attempt was refused, and the gap to its second.
const firstAttempt = new Map<string, number>()
const retryGaps: Array<number> = []
// The drain (1c): while `held` is set, the receiver answers nothing until it is released.
let held: Promise<void> | undefined
let release = () => {}
const hold = () => {
  held = new Promise((resolve) => {
    release = () => {
      held = undefined
      resolve()
    }
  })
}
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body = await request.text()
    if (held !== undefined) await held
    if (new URL(request.url).pathname === "/flaky") {
      const delivery = request.headers.get("x-service-delivery") ?? ""
      const first = firstAttempt.get(delivery)
      if (first === undefined) {
        firstAttempt.set(delivery, performance.now())
        return new Response(null, { status: 503 })
      }
      retryGaps.push(performance.now() - first)
      return new Response(null, { status: 204 })
    }
    received++
    if (measuringLag) {
      const now = Date.now()
      const event = JSON.parse(body)
      const lag = now - Date.parse(event.created_at)
      if (String(event.data?.name).startsWith("lead ")) leadLags.push(lag)
      else lags.push(lag)
      if (lagLog) lagLog.push(`${now} ${lag}`)
    }
    return new Response(null, { status: 204 })
  }
})

const makeUser = async (label: string) => {
  const user = await cli("users", "create", "--email", `bench-${label}-${Date.now()}@example.com`, "--name", label)
  return (await cli("api-keys", "create", "--user", user.id, "--name", "bench", "--scopes", "read,write")).key
}
// Throughput fans each event out to HOOKS webhooks; the lag run uses a second user with one webhook.
const key = await makeUser("fanout")
const lagKey = await makeUser("lag")
const retryKey = await makeUser("retry")
// Creates alone (no webhook subscribes to its events): what the throughput phase's creates cost without deliveries.
const plainKey = await makeUser("plain")
const server = Bun.spawn(
  [
    "taskset",
    "-c",
    "0",
    "bun",
    ...(process.env.BENCH_PROFILE
      ? [
          "--cpu-prof",
          "--cpu-prof-md",
          `--cpu-prof-dir=${process.env.BENCH_PROFILE.startsWith("/") ? process.env.BENCH_PROFILE : "/tmp/prof"}`
        ]
      : []),
    ...(process.env.BENCH_PRELOAD ? ["--preload", process.env.BENCH_PRELOAD] : []),
    "src/main.ts"
  ],
  {
    cwd: ROOT,
    env: {
      ...env,
      PORT: String(PORT),
      HOST: "127.0.0.1",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
      WEBHOOK_RETRY_DELAYS: "1s,1s,1s,1s",
      // An attempt held by the drain (1c) must not time out while the creates go on. The lease keeps five time-outs,
      // as the defaults (10s and 60s) do, so the inbox has the same room (src/Events/Inbox.ts `capacityFor`).
      WEBHOOK_TIMEOUT: "60s",
      WEBHOOK_CLAIM_TIMEOUT: "360s",
      RATE_LIMIT_ENABLED: "false"
    },
    stdout: "ignore",
    stderr: "inherit"
  }
)
const base = `http://127.0.0.1:${PORT}`
for (let i = 0; i < 100; i++) {
  if (
    await fetch(`${base}/health/ready`).then(
      (r) => r.ok,
      () => false
    )
  )
    break
  await Bun.sleep(100)
}
const api = (path: string, body: unknown, as: string = key) =>
  fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${as}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  }).then((r) => {
    if (!r.ok) throw new Error(`${path}: ${r.status}`)
  })

for (let i = 0; i < HOOKS; i++) {
  await api("/v1/webhooks", {
    url: `http://127.0.0.1:${receiver.port}/hook/${i}`,
    events: ["project.created"],
    ...(RATE_LIMIT === null ? {} : { rate_limit: RATE_LIMIT })
  })
}
await api("/v1/webhooks", { url: `http://127.0.0.1:${receiver.port}/lag`, events: ["project.created"] }, lagKey)
await api("/v1/webhooks", { url: `http://127.0.0.1:${receiver.port}/flaky`, events: ["project.created"] }, retryKey)

const waitFor = async (count: number, limitMs: number) => {
  const until = Date.now() + limitMs
  while (received < count && Date.now() < until) await Bun.sleep(5)
  return received >= count
}

/** CPU seconds a process has used so far (Linux: utime + stime from /proc); 0 once it is gone. */
const cpuOf = async (pid: number) => {
  const stat = await Bun.file(`/proc/${pid}/stat`)
    .text()
    .catch(() => "")
  const fields = stat.split(") ")[1]?.split(" ") ?? []
  return stat === "" ? 0 : (Number(fields[11]) + Number(fields[12])) / 100
}
const serverCpu = () => cpuOf(server.pid)

/**
 * PostgreSQL on this machine: CPU seconds its backends serving the benchmark's database have used so far (the
 * server's connections; this process's own is left out). A backend that started since counts from zero. Undefined
 * on SQLite (the database's work is in the server's own CPU).
 */
const monitor = DATABASE_URL.startsWith("postgres") ? new SQL(DATABASE_URL, { max: 1 }) : undefined

/**
 * PostgreSQL on this machine is moved to `--database-cores` (default core 1, beside this process) for the run, as a
 * database host of its own would be: left on both cores, its backends take the server's core too, and the lag then
 * measures the two sharing one core. `--database-cores any` leaves it where it is. The postmaster and every process
 * it has are moved (backends forked later inherit it), and all are put back to the postmaster's mask at exit.
 */
const databaseCores = process.argv.includes("--database-cores")
  ? (process.argv[process.argv.indexOf("--database-cores") + 1] ?? "1")
  : "1"
const taskset = (...args: Array<string>) => Bun.spawnSync(["taskset", ...args], { stdout: "pipe", stderr: "pipe" })
const processesOf = (postmaster: number) => [
  String(postmaster),
  ...new TextDecoder()
    .decode(Bun.spawnSync(["pgrep", "-P", String(postmaster)], { stdout: "pipe" }).stdout)
    .split("\n")
    .filter(Boolean)
]
const pinDatabase = async () => {
  if (monitor === undefined || databaseCores === "any") return
  const [own] = await monitor`SELECT pg_backend_pid() AS pid`
  // Only a PostgreSQL of this machine: the backend's pid must be a postgres process here.
  const local = ["localhost", "127.0.0.1", "[::1]", ""].includes(new URL(DATABASE_URL).hostname)
  const comm = local
    ? await Bun.file(`/proc/${own.pid}/comm`)
        .text()
        .catch(() => "")
    : ""
  if (!comm.startsWith("postgres")) return console.log("PostgreSQL is not on this machine: it is left where it is")
  const stat = await Bun.file(`/proc/${own.pid}/stat`).text()
  const postmaster = Number(stat.split(") ")[1]?.split(" ")[1])
  const mask = new TextDecoder()
    .decode(taskset("-p", String(postmaster)).stdout)
    .split(": ")[1]
    ?.trim()
  if (mask === undefined) return console.log("PostgreSQL's cores are unknown: it is left where it is")
  const unpin = () => {
    for (const pid of processesOf(postmaster)) taskset("-a", "-p", mask, pid)
  }
  process.on("exit", unpin)
  if (processesOf(postmaster).some((pid) => taskset("-a", "-cp", databaseCores, pid).exitCode !== 0)) {
    return console.log(`PostgreSQL could not be moved to core(s) ${databaseCores}: it may share the server's core`)
  }
  console.log(`PostgreSQL (postmaster ${postmaster}) on core(s) ${databaseCores} for the run (mask ${mask} after)`)
}
await pinDatabase()
const databaseCpu = async (): Promise<Map<number, number> | undefined> => {
  if (monitor === undefined) return undefined
  const rows: Array<{ pid: number }> =
    await monitor`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`
  return new Map(await Promise.all(rows.map(async ({ pid }) => [pid, await cpuOf(pid)] as const)))
}
const databaseCpuSince = async (before: Map<number, number> | undefined) => {
  const after = await databaseCpu()
  if (before === undefined || after === undefined) return ""
  let used = 0
  for (const [pid, cpu] of after) used += cpu - (before.get(pid) ?? 0)
  return `; database CPU ${used.toFixed(2)} s`
}

const createAll = async (count: number, label: string, as: string = key) => {
  for (let i = 0; i < count; i += 20) {
    await Promise.all(
      Array.from({ length: Math.min(20, count - i) }, (_, j) => api("/v1/projects", { name: `${label}${i + j}` }, as))
    )
  }
}

/**
 * Waits until the server is idle (under 10 % of a core over 200 ms, at most 10 s), so a phase starts on a quiet
 * server: the throughput phase ends when the last delivery arrives, but its last outcomes are still being written.
 */
const settle = async () => {
  const until = Date.now() + 10_000
  for (;;) {
    const before = await serverCpu()
    await Bun.sleep(200)
    if ((await serverCpu()) - before < 0.02 || Date.now() > until) return
  }
}

// 0. Warm-up, unmeasured.
await createAll(WARMUP, "w")
await waitFor(WARMUP * HOOKS, 60_000)
received = 0

// 1a. The same creates with no delivery, to take their CPU out of the throughput phase's (1b).
const projects = Math.ceil(EVENTS / HOOKS)
await settle()
const plainCpuBefore = await serverCpu()
const plainStarted = performance.now()
await createAll(projects, "c", plainKey)
const plainElapsed = (performance.now() - plainStarted) / 1000
await settle()
const plainCpu = (await serverCpu()) - plainCpuBefore

// 1b. Throughput.
await settle()
const cpuBefore = await serverCpu()
const dbCpuBefore = await databaseCpu()
const started = performance.now()
await createAll(projects, "p")
const created = performance.now()
const complete = await waitFor(projects * HOOKS, 120_000)
const elapsed = (performance.now() - started) / 1000
const cpuUsed = (await serverCpu()) - cpuBefore
const dbCpuUsed = await databaseCpuSince(dbCpuBefore)
console.log(`database: ${DATABASE_URL.split(":")[0]}`)
console.log(`rate_limit on the throughput webhooks: ${RATE_LIMIT ?? "none"}`)
console.log(
  `throughput: ${projects * HOOKS} deliveries (${projects} events x ${HOOKS} webhooks) in ${elapsed.toFixed(2)} s` +
    ` = ${Math.round((projects * HOOKS) / elapsed)} deliveries/s` +
    ` (events created in ${((created - started) / 1000).toFixed(2)} s = ${Math.round(projects / ((created - started) / 1000))} creates/s)` +
    `${complete ? "" : " — INCOMPLETE"}; server CPU ${cpuUsed.toFixed(2)} s of ${elapsed.toFixed(2)} s${dbCpuUsed}`
)
// A delivery's own CPU: the throughput phase's, its last outcomes written, less that of the same creates with no
// webhook (1a, counted the same way), over the deliveries. It still holds what a create does for its deliveries
// (reading the subscriptions, writing their rows).
await settle()
const deliveryCpu = ((await serverCpu()) - cpuBefore - plainCpu) / (projects * HOOKS)
console.log(
  `the same ${projects} creates with no webhook: server CPU ${plainCpu.toFixed(2)} s (${plainElapsed.toFixed(2)} s); ` +
    `a delivery's own: ${(deliveryCpu * 1e6).toFixed(0)} µs of server CPU = ${Math.round(1 / deliveryCpu)} deliveries ` +
    "a CPU second (set beside the baseline's CPU µs a GET, bench/compare.sh)"
)

// 1c. The drain: the same creates again while the receiver holds the first attempts (the worker's runners all
// wait), so the deliveries pile up, claimed or in the table; then released, the server's CPU until every one is made
// and recorded is the deliveries' alone, measured, not taken from another run. A backlog is drained by claims from
// the table, which the steady flow of 1b mostly skips (a create hands its deliveries to the worker), in full
// batches; the rows' writing is in the creates, not here.
await settle()
received = 0
hold()
await createAll(projects, "d")
await settle()
const drainCpuBefore = await serverCpu()
const drainStarted = performance.now()
release()
const drained = await waitFor(projects * HOOKS, 120_000)
const drainElapsed = (performance.now() - drainStarted) / 1000
await settle()
const drainCpu = (await serverCpu()) - drainCpuBefore
console.log(
  `drain: ${projects * HOOKS} deliveries waiting, made in ${drainElapsed.toFixed(2)} s` +
    ` = ${Math.round((projects * HOOKS) / drainElapsed)} deliveries/s${drained ? "" : " — INCOMPLETE"}; server CPU` +
    ` ${drainCpu.toFixed(2)} s (until idle) = ${((1e6 * drainCpu) / (projects * HOOKS)).toFixed(0)} µs a delivery`
)

// 2. First-attempt lag at a fixed rate, one webhook per event. The first `--lead-in` seconds at the rate are not
// measured: the client opens the connections that rate needs then (from the 20 of phase 1 to about 70), which costs
// the server; their lags are printed apart.
await settle()
received = 0
measuringLag = true
const lagHooks = 1
const LEAD_IN = arg("lead-in", 1)
const leadIn = Math.round(RATE * LEAD_IN)
const total = RATE * SECONDS
const interval = 1000 / RATE
const t0 = performance.now()
const inflight: Array<Promise<void>> = []
let lagCpuBefore = 0
let lagDbCpuBefore: Map<number, number> | undefined
let measuredFrom = t0
for (let i = 0; i < leadIn + total; i++) {
  const due = t0 + i * interval
  const wait = due - performance.now()
  if (wait > 1) await Bun.sleep(wait)
  if (i === leadIn) {
    lagCpuBefore = await serverCpu()
    lagDbCpuBefore = await databaseCpu()
    measuredFrom = performance.now()
  }
  inflight.push(api("/v1/projects", { name: i < leadIn ? `lead ${i}` : `lag ${i}` }, lagKey))
}
await Promise.all(inflight)
await waitFor((leadIn + total) * lagHooks, 60_000)
const lagCpu = (await serverCpu()) - lagCpuBefore
const lagDbCpu = await databaseCpuSince(lagDbCpuBefore)
const lagWall = (performance.now() - measuredFrom) / 1000
if (lagLog && process.env.BENCH_LAG_FILE) await Bun.write(process.env.BENCH_LAG_FILE, `${lagLog.join("\n")}\n`)
const percentile = (values: Array<number>, p: number) =>
  values.sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]
console.log(
  `first-attempt lag at ${RATE} events/s for ${SECONDS} s after a ${LEAD_IN} s lead-in (one webhook, ${lags.length} ` +
    `deliveries): p50 ${percentile(lags, 50)} ms, p99 ${percentile(lags, 99)} ms, max ${percentile(lags, 100)} ms;` +
    ` server CPU ${lagCpu.toFixed(2)} s of ${lagWall.toFixed(2)} s = ${((1000 * lagCpu) / total).toFixed(2)} ms an event` +
    `${lagDbCpu}; the lead-in's p99 ${percentile(leadLags, 99) ?? "-"} ms, max ${percentile(leadLags, 100) ?? "-"} ms`
)

// 3. Retries when due: 200 events at 50/s, each failing once, retried 1 s later.
await settle()
const RETRIES = 200
for (let i = 0; i < RETRIES; i++) {
  const due = performance.now() + 20
  await api("/v1/projects", { name: `retry ${i}` }, retryKey)
  const wait = due - performance.now()
  if (wait > 1) await Bun.sleep(wait)
}
const until = Date.now() + 30_000
while (retryGaps.length < RETRIES && Date.now() < until) await Bun.sleep(10)
const off = retryGaps.map((gap) => Math.abs(gap - 1000)).sort((a, b) => a - b)
const at = (p: number) => off[Math.min(off.length - 1, Math.floor((p / 100) * off.length))]?.toFixed(0)
console.log(
  `retry timing (attempt 2 due 1 s after attempt 1, ${retryGaps.length} of ${RETRIES} retried): ` +
    `|gap - 1 s| p50 ${at(50)} ms, p99 ${at(99)} ms, max ${off[off.length - 1]?.toFixed(0)} ms`
)

server.kill(process.env.BENCH_PROFILE ? "SIGINT" : "SIGTERM")
await server.exited
receiver.stop(true)
await removeLeftovers()
process.exit(0)
