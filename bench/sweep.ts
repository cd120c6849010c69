/**
 * What a retention sweep costs on a table of a million deliveries: 100,000 events fanned out to 10 webhooks, each
 * delivery delivered after one attempt; half the events (and their deliveries) 40 days old, half an hour old. The
 * sweep (`bun src/cli.ts prune`, at the default retention of 30 days and batches of 1,000) deletes the old half:
 * 500,000 deliveries, their 500,000 attempts, 50,000 events. Meanwhile a server on the same database answers
 * GET /v1/projects/:id to CONCURRENCY clients in a loop; their p50/p99 during the sweep are set against the same load
 * for BASELINE_SECONDS before it. First, the plans of the sweep's statements on this database (`--explain-only`
 * prints them and stops).
 * 100,000 OAuth codes and idempotency keys, half long expired, are there for the plans only: the server's own sweep
 * at start-up removes the expired ones (their expiry does not depend on the retention settings).
 * The client runs on core 1 (taskset); the server, the CLI and PostgreSQL share the machine.
 * BENCH_SERVER_LOG=<file>: the server's log there.
 * Usage: bun bench/sweep.ts [--events 100000] [--concurrency 16] [--baseline 10] [--explain-only]
 * Uses DATABASE_URL's engine: a postgres URL (a fresh database is made on it), else a temporary SQLite file.
 */
import { Database } from "bun:sqlite"
import { join } from "node:path"
import { SQL } from "bun"
import { freePort } from "../test/support/helpers.ts"
import { removeLeftovers } from "../test/support/leftovers.ts"
import { freshDatabaseUrl } from "../test/support/server.ts"
import { arg } from "./args.ts"

const EVENTS = arg("events", 100_000)
const HOOKS = 10
const CONCURRENCY = arg("concurrency", 16)
const BASELINE_SECONDS = arg("baseline", 10)
const EXPLAIN_ONLY = process.argv.includes("--explain-only")
const PORT = freePort()
const ROOT = join(import.meta.dir, "..")
Bun.spawnSync(["taskset", "-a", "-cp", "1", String(process.pid)], { stdout: "ignore" })

const DATABASE_URL = await freshDatabaseUrl()
const pg = DATABASE_URL.startsWith("postgres")
console.log(`database: ${pg ? new URL(DATABASE_URL).pathname.slice(1) : DATABASE_URL}`)
const env = { ...process.env, DATABASE_URL, LOG_LEVEL: "warn" }
const cli = async (...args: Array<string>) => {
  const proc = Bun.spawn(["bun", "src/cli.ts", ...args], { cwd: ROOT, env, stdout: "pipe", stderr: "inherit" })
  return JSON.parse(await new Response(proc.stdout).text()).data
}
await cli("migrate")
const user = await cli("users", "create", "--email", `sweep-${Date.now()}@example.com`, "--name", "Sweep")
const key = (await cli("api-keys", "create", "--user", user.id, "--name", "bench", "--scopes", "read,write")).key

const OLD = new Date(Date.now() - 40 * 86_400_000).toISOString()
const RECENT = new Date(Date.now() - 1_800_000).toISOString()
const HALF = Math.floor(EVENTS / 2)

/** Runs `text` with `?` placeholders on either engine. */
const sqlite = pg ? undefined : new Database(DATABASE_URL.slice("sqlite:".length))
const pgClient = pg ? new SQL(DATABASE_URL) : undefined
const run = async (text: string, params: Array<string | number> = []): Promise<Array<Record<string, unknown>>> => {
  if (sqlite !== undefined) return sqlite.query(text).all(...params) as Array<Record<string, unknown>>
  let n = 0
  return await pgClient!.unsafe(
    text.replace(/\?/g, () => `$${++n}`),
    params
  )
}
if (sqlite !== undefined) {
  sqlite.run("PRAGMA busy_timeout = 5000")
  sqlite.run("PRAGMA foreign_keys = ON")
}

const seedStarted = performance.now()
const series = (n: number, name: string) =>
  pg
    ? `generate_series(1, ${n}) AS ${name}(x)`
    : `(WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < ${n}) SELECT x FROM s) AS ${name}`
const pad = (column: string, width = 7) =>
  pg ? `lpad(CAST(${column} AS TEXT), ${width}, '0')` : `printf('%0${width}d', ${column})`
/** A valid webhook id (the server decodes them): 24 zeros and the hook's number. */
const hookId = (column: string) => `'whk_000000000000000000000000' || ${pad(column, 2)}`
await run(
  `INSERT INTO webhooks (id, user_id, url, events, secret, status, created_at, updated_at, failed_at)
   SELECT ${hookId("h.x")}, ?, 'http://127.0.0.1:9/' || h.x, '["project.created"]', 'whsec_x', 'active', ?, ?, NULL
   FROM ${series(HOOKS, "h")}`,
  [user.id, OLD, OLD]
)
await run(
  `INSERT INTO events (id, type, payload, trace_context, created_at)
   SELECT 'evt_sweep_' || ${pad("e.x")}, 'project.created', '{"data":{}}', NULL, CASE WHEN e.x <= ? THEN ? ELSE ? END
   FROM ${series(EVENTS, "e")}`,
  [HALF, OLD, RECENT]
)
await run(
  `INSERT INTO deliveries (id, webhook_id, event_id, event_type, status, attempt_count, manual, next_attempt_at,
     last_attempt_at, claimed_until, claim_token, created_at)
   SELECT 'dlv_sweep_' || ${pad("e.x")} || '_' || h.x, ${hookId("h.x")}, 'evt_sweep_' || ${pad("e.x")}, 'project.created',
     'delivered', 1, 0, NULL, CASE WHEN e.x <= ? THEN ? ELSE ? END, NULL, NULL, CASE WHEN e.x <= ? THEN ? ELSE ? END
   FROM ${series(EVENTS, "e")} CROSS JOIN ${series(HOOKS, "h")}`,
  [HALF, OLD, RECENT, HALF, OLD, RECENT]
)
await run(
  `INSERT INTO delivery_attempts (delivery_id, number, attempted_at, duration_ms, status_code, error, response_body, outcome)
   SELECT id, 1, last_attempt_at, 5, 200, NULL, NULL, 'succeeded' FROM deliveries`
)
// OAuth codes and idempotency keys, half of them long expired: their plans on tables of some size.
await run(
  `INSERT INTO oauth_clients (id, name, secret_hash, redirect_uris, is_public, created_at) VALUES ('cli_sweep', 'Sweep', NULL, '[]', 1, ?)`,
  [OLD]
)
await run(
  `INSERT INTO oauth_codes (id, code_hash, client_id, user_id, redirect_uri, scope, code_challenge, created_at, expires_at, used_at)
   SELECT 'ocd_sweep_' || e.x, 'hash_' || e.x, 'cli_sweep', ?, 'http://127.0.0.1:9/cb', 'read', NULL, ?, CASE WHEN e.x <= ? THEN ? ELSE ? END, NULL
   FROM ${series(EVENTS, "e")}`,
  [user.id, OLD, HALF, OLD, new Date(Date.now() + 600_000).toISOString()]
)
await run(
  `INSERT INTO idempotency_keys (user_id, idempotency_key, request_hash, status, content_type, body, created_at, expires_at)
   SELECT ?, 'key-' || e.x, 'h', 201, 'application/json', '{}', ?, CASE WHEN e.x <= ? THEN ? ELSE ? END
   FROM ${series(EVENTS, "e")}`,
  [user.id, OLD, HALF, OLD, new Date(Date.now() + 600_000).toISOString()]
)
if (pg) await run("ANALYZE")
else sqlite!.run("ANALYZE")
const count = async (table: string) => Number((await run(`SELECT count(*) AS n FROM ${table}`))[0]!.n)
console.log(
  `${pg ? "PostgreSQL" : "SQLite"}: seeded ${await count("deliveries")} deliveries, ${await count("delivery_attempts")} attempts, ${await count("events")} events in ${((performance.now() - seedStarted) / 1000).toFixed(0)} s`
)

// The plans of the sweep's reads (src/Retention/Repo.ts), with a batch's worth of ids where they take ids.
const ids = (
  await run(
    "SELECT id FROM deliveries WHERE status IN ('delivered', 'failed') AND last_attempt_at < ? ORDER BY last_attempt_at LIMIT 1000",
    [RECENT]
  )
).map((row) => String(row.id))
const eventIds = ids.slice(0, 100).map((id) => `evt_sweep_${id.slice(10, 17)}`)
const inList = (values: Array<string>) => values.map((v) => `'${v}'`).join(", ")
const cutoff = new Date(Date.now() - 30 * 86_400_000).toISOString()
const statements: Array<[string, string]> = [
  [
    "ended deliveries",
    `SELECT id FROM deliveries WHERE status IN ('delivered', 'failed') AND last_attempt_at < '${cutoff}' ORDER BY last_attempt_at LIMIT 1000`
  ],
  [
    "their attempts",
    pg
      ? `DELETE FROM delivery_attempts WHERE ctid = ANY (ARRAY(SELECT ctid FROM delivery_attempts WHERE delivery_id IN (${inList(ids)}) LIMIT 1000))`
      : `DELETE FROM delivery_attempts WHERE (delivery_id, number) IN (SELECT delivery_id, number FROM delivery_attempts WHERE delivery_id IN (${inList(ids)}) LIMIT 1000)`
  ],
  ["the deliveries", `DELETE FROM deliveries WHERE id IN (${inList(ids)}) AND status IN ('delivered', 'failed')`],
  [
    "old events",
    `SELECT e.id FROM events e WHERE e.created_at < '${cutoff}' AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.status = 'pending') ORDER BY e.created_at LIMIT 1000`
  ],
  [
    "their deliveries",
    `SELECT id, event_id, status FROM deliveries WHERE event_id IN (${inList(eventIds)}) LIMIT 1000`
  ],
  [
    "the events",
    `DELETE FROM events WHERE id IN (${inList(eventIds)}) AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)`
  ],
  [
    "expired codes",
    pg
      ? `DELETE FROM oauth_codes WHERE ctid = ANY (ARRAY(SELECT ctid FROM oauth_codes WHERE expires_at < '${cutoff}' ORDER BY expires_at LIMIT 1000))`
      : `DELETE FROM oauth_codes WHERE id IN (SELECT id FROM oauth_codes WHERE expires_at < '${cutoff}' ORDER BY expires_at LIMIT 1000)`
  ],
  [
    "expired keys",
    pg
      ? `DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(SELECT ctid FROM idempotency_keys WHERE expires_at <= '${cutoff}' ORDER BY expires_at LIMIT 1000))`
      : `DELETE FROM idempotency_keys WHERE (user_id, idempotency_key) IN (SELECT user_id, idempotency_key FROM idempotency_keys WHERE expires_at <= '${cutoff}' ORDER BY expires_at LIMIT 1000)`
  ]
]
for (const [label, text] of statements) {
  const plan = pg
    ? (await run(`EXPLAIN (COSTS OFF) ${text}`)).map((row) => String(row["QUERY PLAN"]))
    : (await run(`EXPLAIN QUERY PLAN ${text}`)).map((row) => String(row.detail))
  // Long id lists shortened for reading.
  console.log(
    `-- ${label}\n   ${plan
      .join("\n   ")
      .replace(/'\{[^}]{60,}\}'/g, "'{…}'")
      .replace(/\('[^)]{60,}'\)/g, "(…)")}`
  )
}
if (EXPLAIN_ONLY) {
  await pgClient?.close()
  await removeLeftovers()
  process.exit(0)
}

// The server keeps everything for 10 years, so its own start-up sweep deletes nothing.
const server = Bun.spawn(["bun", "src/main.ts"], {
  cwd: ROOT,
  env: {
    ...env,
    PORT: String(PORT),
    HOST: "127.0.0.1",
    RATE_LIMIT_ENABLED: "false",
    DELIVERY_RETENTION: "3650d",
    EVENT_RETENTION: "3650d"
  },
  stdout: Bun.file(process.env.BENCH_SERVER_LOG ?? "/dev/null"),
  stderr: "inherit"
})
Bun.spawnSync(["taskset", "-a", "-cp", "0", String(server.pid)], { stdout: "ignore" })
// Whatever happens below, the server does not outlive this script.
process.on("exit", () => server.kill("SIGKILL"))
const base = `http://127.0.0.1:${PORT}`
for (let i = 0; i < 600; i++) {
  if (
    await fetch(`${base}/health/ready`).then(
      (r) => r.ok,
      () => false
    )
  )
    break
  await Bun.sleep(100)
}
const project = await fetch(`${base}/v1/projects`, {
  method: "POST",
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  body: JSON.stringify({ name: "sweep bench" })
}).then((r) => r.json())
if (project.data === undefined) throw new Error(`the server did not create a project: ${JSON.stringify(project)}`)

/** CONCURRENCY clients in a loop until `until()` says stop; each request's latency (ms). */
const load = async (until: () => boolean) => {
  const latencies: Array<number> = []
  let failures = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (!until()) {
        const started = performance.now()
        const res = await fetch(`${base}/v1/projects/${project.data.id}`, {
          headers: { authorization: `Bearer ${key}` }
        })
        await res.arrayBuffer()
        if (res.status !== 200) failures++
        latencies.push(performance.now() - started)
      }
    })
  )
  return { latencies, failures }
}
const summary = (label: string, seconds: number, { latencies, failures }: Awaited<ReturnType<typeof load>>) => {
  const sorted = [...latencies].sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!.toFixed(1)
  console.log(
    `${label}: ${sorted.length} requests in ${seconds.toFixed(1)} s (${Math.round(sorted.length / seconds)}/s), p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${sorted.at(-1)!.toFixed(0)} ms${failures ? `, ${failures} failed` : ""}`
  )
}

await load(
  (
    (end) => () =>
      performance.now() > end
  )(performance.now() + 3_000)
) // warm-up
const baselineEnd = performance.now() + BASELINE_SECONDS * 1000
summary(
  `GET /v1/projects/:id, ${CONCURRENCY} clients, no sweep`,
  BASELINE_SECONDS,
  await load(() => performance.now() > baselineEnd)
)

let sweeping = true
const sweepStarted = performance.now()
const prune = Bun.spawn(["bun", "src/cli.ts", "prune"], { cwd: ROOT, env, stdout: "pipe", stderr: "inherit" })
const printed = new Response(prune.stdout).text()
const during = load(() => !sweeping)
await prune.exited
sweeping = false
const sweepSeconds = (performance.now() - sweepStarted) / 1000
summary(`GET /v1/projects/:id, ${CONCURRENCY} clients, during the sweep`, sweepSeconds, await during)
console.log(
  `sweep (bun src/cli.ts prune, its start-up included): ${sweepSeconds.toFixed(1)} s, deleted ${JSON.stringify(JSON.parse(await printed).data)}`
)
console.log(
  `left: ${await count("deliveries")} deliveries, ${await count("delivery_attempts")} attempts, ${await count("events")} events`
)
server.kill("SIGTERM")
await server.exited
await pgClient?.close()
// The bench's database (a million deliveries) is dropped, and its temporary directory removed.
await removeLeftovers()
process.exit(0)
