/**
 * Every row of the configuration table (docs/configuration.md) is accepted as documented: each documented value
 * starts a server that answers `/health/ready`. Settings that cannot work stop start-up with a message naming the
 * variable.
 * Each setting is tried on the server in this process (`programWith` under the settings, as `main` runs it); a
 * few representative starts are processes, for what a process adds: its environment read, its exit and output.
 * Servers are started a few at a time (they are slow to start on a small machine).
 */
import { afterAll, describe, expect, test } from "bun:test"
import { generateKeyPairSync } from "node:crypto"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Cause, Effect, Exit, Fiber } from "effect"
import { programWith } from "../../src/main.ts"
import { loggingTo, providerOf } from "../support/in-process.ts"
import { migratedDatabaseUrl } from "../support/server.ts"
import { tempDir } from "../support/temp.ts"

const ROOT = join(import.meta.dir, "..", "..")
const CONFIGURATION = readFileSync(join(ROOT, "docs", "configuration.md"), "utf8")

/** The variables named in the first column of the configuration table (docs/configuration.md). */
const documentedVariables = (): Array<string> => {
  return CONFIGURATION.split("\n")
    .filter((line) => line.startsWith("| `"))
    .flatMap((line) => Array.from(line.split("|")[1]!.matchAll(/`([A-Z0-9_]+)`/g), (match) => match[1]!))
}

const freePort = (): number => {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

/**
 * The database a start is given: the one its settings name, else a migrated one of its own (no test here is about
 * migrating, and on PostgreSQL a copy of the migrated template is quicker to make than a migration is to run).
 */
const databaseOf = async (env: Record<string, string>): Promise<string> => env.DATABASE_URL ?? migratedDatabaseUrl()

interface Outcome {
  readonly started: boolean
  readonly output: string
}

/**
 * Starts `bun src/main.ts` with `env` and waits until `/health/ready` answers 200 (so a quiet `LOG_LEVEL` works
 * too), or the process exits. Always stops it.
 */
const tryStart = async (env: Record<string, string>): Promise<Outcome> => {
  const port = freePort()
  const proc = Bun.spawn(["bun", "src/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: await databaseOf(env), HOST: "127.0.0.1", PORT: String(port), ...env },
    stdout: "pipe",
    stderr: "pipe"
  })
  const output = Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]).then((parts) =>
    parts.join("\n")
  )
  let exited = false
  void proc.exited.then(() => (exited = true))
  let started = false
  const deadline = Date.now() + 30_000
  while (!exited && !started && Date.now() < deadline) {
    started = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
      (r) => r.status === 200,
      () => false
    )
    if (!started) await Bun.sleep(100)
  }
  if (!exited) proc.kill("SIGTERM")
  await proc.exited
  return { started, output: await output }
}

/**
 * As `tryStart`, on the server in this process: `programWith` (what `main` runs) under `env` over this process's
 * environment, its log lines kept; a start-up failure's output is its cause. Always stops it.
 */
const tryInProcess = async (env: Record<string, string>): Promise<Outcome> => {
  const port = freePort()
  const settings = { DATABASE_URL: await databaseOf(env), HOST: "127.0.0.1", PORT: String(port), ...env }
  const logs: Array<string> = []
  const fiber = Effect.runFork(
    programWith(loggingTo((line) => logs.push(line))).pipe(Effect.withConfigProvider(providerOf(settings)))
  )
  let started = false
  const deadline = Date.now() + 30_000
  while (fiber.unsafePoll() === null && !started && Date.now() < deadline) {
    started = await fetch(`http://127.0.0.1:${port}/health/ready`).then(
      (r) => r.status === 200,
      () => false
    )
    if (!started) await Bun.sleep(100)
  }
  const exit = await Effect.runPromise(Fiber.interrupt(fiber))
  const failure = Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) ? Cause.pretty(exit.cause) : ""
  return { started, output: [...logs, failure].join("\n") }
}

/** Runs `tasks` at most `limit` at a time. */
const bounded = async <T>(limit: number, tasks: ReadonlyArray<() => Promise<T>>): Promise<Array<T>> => {
  const results: Array<T> = new Array(tasks.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const index = next++
        results[index] = await tasks[index]!()
      }
    })
  )
  return results
}

/**
 * Stands in for the collector: takes what is exported and answers 200, so a server's shutdown flush ends at once
 * (on a closed port each exporter retries until its shutdown timeout).
 */
const collector = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() })
const COLLECTOR = `http://127.0.0.1:${collector.port}`
afterAll(() => collector.stop(true), 20_000)

const keys = generateKeyPairSync("ed25519")
const pem = keys.privateKey.export({ type: "pkcs8", format: "pem" }).toString()
const jwk = JSON.stringify(keys.privateKey.export({ format: "jwk" }))
const scratch = tempDir("pcs-config-")

/**
 * The values each documented variable is said to take. Server `k` gets value `k mod n` of every variable, so each
 * value is tried at least once in as many servers as the longest list. `COLLECTOR` stands in for the collector.
 */
const documentedValues: Record<string, ReadonlyArray<string>> = {
  PORT: [], // every server sets its own (0 is used by every other test)
  HOST: ["127.0.0.1"],
  BASE_URL: ["http://localhost:3000", "https://api.example.com"],
  // `{k}`: the server's number, so no two servers share a file.
  DATABASE_URL: [
    `sqlite:${join(scratch, "prefixed-{k}.sqlite")}`,
    "sqlite::memory:",
    join(scratch, "bare-path-{k}.sqlite") // a bare path, as the default is written
    // postgres://…: every other test runs on it when the suite's DATABASE_URL is one.
  ],
  LOG_LEVEL: ["trace", "debug", "info", "warning", "error", "fatal", "none", "warn", "off", "WARNING"],
  SHUTDOWN_TIMEOUT: ["20s", "500ms", "1m"],
  HTTP_IDLE_TIMEOUT: ["10s", "30s"],
  WEBHOOK_RETRY_DELAYS: ["1m,5m,30m,2h", "1s,2s,3s,4s"],
  WEBHOOK_TIMEOUT: ["10s", "500ms"],
  WEBHOOK_CLAIM_TIMEOUT: ["60s", "2h"],
  WEBHOOK_CONCURRENCY: ["32", "1"],
  WEBHOOK_POLL_INTERVAL: ["1s", "250ms"],
  INVITATION_TTL: ["7d", "1s", "36h"],
  WEBHOOK_ALLOW_PRIVATE_TARGETS: ["false", "true"],
  WEBHOOK_SECRET_OVERLAP: ["24h", "1s"],
  IDEMPOTENCY_TTL: ["24h", "500ms"],
  JWT_PRIVATE_KEY: [pem, jwk],
  // Unset or empty: secrets.key beside the SQLite file (every DATABASE_URL here is SQLite), or in memory a key of
  // the process's own. PostgreSQL without it: test/e2e/secrets-key-ring.test.ts.
  SECRETS_KEY: [
    "",
    "3KbG4VxO++UTjONN54gymXe0oCOLUT4gd16cS/HyB+I=",
    "ololDq0O5dmmB/OTIdGxuHq66VTnFrptUYHQgErB8oQ=,mPhAgRJJEFhTMjGVpgUOfCekd7h0d/mOdUunZBTIOlY="
  ],
  AUTH_IP_LIMIT_PER_MINUTE: ["20", "1"],
  OAUTH_CLIENT_LIMIT_PER_MINUTE: ["600", "3"],
  AUTH_FAILED_LOGIN_LIMIT: ["10", "3"],
  PASSWORD_HASH_MEMORY_KIB: ["65536", "19456"],
  RATE_LIMIT_PER_MINUTE: ["1000", "5"],
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: ["100", "7"],
  RATE_LIMIT_WINDOW: ["1m", "2s"],
  REDIS_URL: [], // needs a Redis server: test/e2e/rate-limit.test.ts starts one
  RATE_LIMIT_ENABLED: ["true", "false"],
  DELIVERY_RETENTION: ["30d", "1h"],
  EVENT_RETENTION: ["30d", "2h"],
  AUDIT_RETENTION: ["365d", "2h"],
  RETENTION_SWEEP_INTERVAL: ["1h", "10m"],
  RETENTION_BATCH_SIZE: ["1000", "10"],
  TRUSTED_PROXIES: ["", "127.0.0.1,10.0.0.0/8,fd00::/8"],
  FAST_PATHS: ["all", "none", "request-wrapper,delivery-recorder"],
  OTEL_EXPORTER_OTLP_ENDPOINT: [COLLECTOR, `${COLLECTOR}/`],
  OTEL_EXPORTER_OTLP_PROTOCOL: ["http/protobuf", "http/json"],
  OTEL_SERVICE_NAME: ["project-collaboration-service", "pcs-staging"],
  OTEL_RESOURCE_ATTRIBUTES: ["", "deployment.environment=test,service.namespace=pcs"],
  OTEL_EXPORTER_OTLP_HEADERS: ["", "x-api-key=secret,x-tenant=a%20b"],
  OTEL_TRACES_EXPORTER: ["otlp", "none"],
  OTEL_METRICS_EXPORTER: ["none", "otlp"],
  OTEL_LOGS_EXPORTER: ["none", "otlp"],
  OTEL_TRACES_SAMPLER: [
    "parentbased_always_on",
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_off",
    "parentbased_traceidratio"
  ],
  OTEL_TRACES_SAMPLER_ARG: ["1", "0.25", "0"],
  OTEL_BSP_SCHEDULE_DELAY: ["1000", "5000"],
  OTEL_BSP_MAX_EXPORT_BATCH_SIZE: ["4096", "512"],
  OTEL_BSP_MAX_QUEUE_SIZE: ["32768", "2048"],
  OTEL_BSP_EXPORT_TIMEOUT: ["30000", "10000"],
  OTEL_METRIC_EXPORT_INTERVAL: ["10000", "60000"]
}

describe("the configuration table (docs/configuration.md)", () => {
  test("lists exactly the variables tried here", () => {
    expect(documentedVariables().sort()).toEqual(Object.keys(documentedValues).sort())
  })

  test("every variable in the table is read by src/Config.ts", () => {
    const source = readFileSync(join(ROOT, "src", "Config.ts"), "utf8")
    for (const name of documentedVariables())
      expect({ name, read: source.includes(`"${name}"`) }).toEqual({ name, read: true })
  })

  test("every variable docker-compose.yml gives the service is documented", () => {
    const compose = readFileSync(join(ROOT, "docker-compose.yml"), "utf8")
    const service = compose.split(/\n {2}postgres:/)[0]!
    const environment = service.split(/\n {4}environment:\n/)[1]!.split(/\n {4}[a-z_]+:/)[0]!
    const names = Array.from(environment.matchAll(/^ {6}([A-Z0-9_]+):/gm), (match) => match[1]!)
    expect(names.length).toBeGreaterThan(5)
    const documented = documentedVariables()
    for (const name of names)
      expect({ name, documented: documented.includes(name) }).toEqual({ name, documented: true })
  })

  const count = Math.max(...Object.values(documentedValues).map((values) => values.length))
  const envs = Array.from({ length: count }, (_, k) =>
    Object.fromEntries(
      Object.entries(documentedValues).flatMap(([name, values]) =>
        values.length === 0 ? [] : [[name, values[k % values.length]!.replace("{k}", String(k))]]
      )
    )
  )

  test("each documented value starts the server", async () => {
    const outcomes = await bounded(
      3,
      envs.map((env) => () => tryInProcess(env))
    )
    for (const [k, outcome] of outcomes.entries()) {
      expect({ env: k, started: outcome.started, output: outcome.started ? "" : outcome.output }).toEqual({
        env: k,
        started: true,
        output: ""
      })
    }
  }, 240_000)

  test("a process started with documented values (the first of each) reads them from its environment", async () => {
    const outcome = await tryStart(envs[0]!)
    expect({ started: outcome.started, output: outcome.started ? "" : outcome.output }).toEqual({
      started: true,
      output: ""
    })
  }, 60_000)
})

describe("settings that cannot work stop start-up, naming the variable", () => {
  const refused: ReadonlyArray<readonly [Record<string, string>, ReadonlyArray<string>]> = [
    [{ LOG_LEVEL: "loud" }, ["LOG_LEVEL", "warning"]],
    [
      { WEBHOOK_CLAIM_TIMEOUT: "5s", WEBHOOK_TIMEOUT: "10s" },
      ["WEBHOOK_CLAIM_TIMEOUT must exceed WEBHOOK_TIMEOUT (they are 5s and 10s)"]
    ],
    [
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "5000",
        OTEL_BSP_MAX_QUEUE_SIZE: "2048"
      },
      ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE (they are 5000 and 2048)"]
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" },
      ["OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL"]
    ],
    [{ BASE_URL: "localhost:3000" }, ["BASE_URL must be an http:// or https:// URL"]],
    [{ DATABASE_URL: "mysql://db/pcs" }, ["DATABASE_URL must be"]],
    [{ SHUTDOWN_TIMEOUT: "soon" }, ["SHUTDOWN_TIMEOUT must be a duration"]],
    [{ HTTP_IDLE_TIMEOUT: "0s" }, ["HTTP_IDLE_TIMEOUT must be more than 0"]],
    [{ IDEMPOTENCY_TTL: "soon" }, ["IDEMPOTENCY_TTL must be a duration"]],
    [{ IDEMPOTENCY_TTL: "0s" }, ["IDEMPOTENCY_TTL must be more than 0"]],
    [{ PASSWORD_HASH_MEMORY_KIB: "4096" }, ["PASSWORD_HASH_MEMORY_KIB must be an integer from 19456 to 4194304"]],
    [{ FAST_PATHS: "warp" }, ["FAST_PATHS must be all, none or a comma-separated list of request-wrapper"]]
  ]
  const expectRefused = (outcomes: ReadonlyArray<Outcome>, cases: typeof refused) => {
    for (const [k, outcome] of outcomes.entries()) {
      const [env, messages] = cases[k]!
      expect({ env, started: outcome.started }).toEqual({ env, started: false })
      for (const message of messages) expect(outcome.output).toContain(message)
      expect(outcome.output).not.toContain("Invalid data at :")
    }
  }

  test("each is refused with its message", async () => {
    const outcomes = await bounded(
      3,
      refused.map(
        ([env]) =>
          () =>
            tryInProcess(env)
      )
    )
    expectRefused(outcomes, refused)
  }, 120_000)

  // Before logging is set up (LOG_LEVEL) and after (the rest): the message is on the process's output.
  const processCases = refused.filter(([env]) => "LOG_LEVEL" in env || "WEBHOOK_CLAIM_TIMEOUT" in env)
  test("a process refuses them with its message on its output", async () => {
    expect(processCases).toHaveLength(2)
    expectRefused(await Promise.all(processCases.map(([env]) => tryStart(env))), processCases)
  }, 60_000)
})

test("OTEL_BSP_MAX_QUEUE_SIZE alone below the default batch size starts (the batch size follows it)", async () => {
  const outcome = await tryInProcess({
    OTEL_EXPORTER_OTLP_ENDPOINT: COLLECTOR,
    OTEL_BSP_MAX_QUEUE_SIZE: "100"
  })
  expect({ started: outcome.started, output: outcome.started ? "" : outcome.output }).toEqual({
    started: true,
    output: ""
  })
}, 60_000)
