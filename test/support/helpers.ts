/**
 * Small helpers every test file may need, in one place: waiting for a condition, a free loopback port, stopping a
 * server process without ever leaking it, the server's JSON log lines, and the order every list promises.
 */
import { Schema } from "effect"
import { FAST_PATH_NAMES, type FastPath } from "../../src/Config.ts"
import { makeId } from "../../src/Domain/Ids.ts"
import { ClaimedDelivery } from "../../src/Domain/Webhook.ts"
import { type Server, type ServerProcess, usingPostgres } from "./server.ts"

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Polls `probe` until it answers something other than `undefined` or `false` (a probe that throws counts as not
 * yet; so does a condition not yet true, `attempts.length >= 1`); rejects after `timeoutMs` (10 s) with the last
 * error seen. Polls every `intervalMs` (50 ms).
 */
export const eventually = async <T>(
  probe: () => Promise<T | undefined> | T | undefined,
  options: { readonly timeoutMs?: number; readonly intervalMs?: number; readonly what?: string } = {}
): Promise<Exclude<T, false>> => {
  const deadline = Date.now() + (options.timeoutMs ?? 10_000)
  let last: unknown
  for (;;) {
    try {
      const value = await probe()
      if (value !== undefined && value !== false) return value as Exclude<T, false>
    } catch (error) {
      last = error
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${options.what ?? "a condition"}${last !== undefined ? `: ${String(last)}` : ""}`
      )
    }
    await sleep(options.intervalMs ?? 50)
  }
}

/** A TCP port on 127.0.0.1 that nothing listened on a moment ago. */
export const freePort = (): number => {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

const isProcess = (server: Server): server is ServerProcess => "process" in server

/**
 * SIGTERM, then SIGKILL if the process has not exited `ms` later, so a hung shutdown never leaks a process.
 * True when it exited on SIGTERM in time (or had exited already, or there was no server). An in-process server
 * is stopped (its graceful shutdown); true when that ended within `ms`.
 */
export const stopWithin = async (server: Server | undefined, ms = 8_000): Promise<boolean> => {
  if (server === undefined) return true
  if (!isProcess(server)) return Promise.race([server.stop().then(() => true), sleep(ms).then(() => false)])
  if (server.process.exitCode !== null || server.process.signalCode !== null) {
    await server.stop("SIGKILL") // closes the fixtures' connections; the process is gone already
    return true
  }
  const exited = await Promise.race([server.stop("SIGTERM").then(() => true), sleep(ms).then(() => false)])
  if (!exited) await server.stop("SIGKILL")
  return exited
}

/** The server's stdout lines that are JSON objects (its log lines). */
export const parsedLogs = (server: Pick<Server, "logs">): Array<Record<string, unknown>> =>
  server.logs.flatMap((line) => {
    try {
      const parsed: unknown = JSON.parse(line)
      return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)
        ? [Object.fromEntries(Object.entries(parsed))]
        : []
    } catch {
      return []
    }
  })

/**
 * A fast path and its idiomatic twin (docs/fast-paths.md), each with the `FAST_PATHS` value that runs it: `all`, and
 * every fast path but this one.
 */
export const twinsOf = (fastPath: FastPath): ReadonlyArray<readonly ["fast" | "idiomatic", string]> => [
  ["fast", "all"],
  ["idiomatic", FAST_PATH_NAMES.filter((name) => name !== fastPath).join(",")]
]

/**
 * The delivery recorders (src/Webhooks/Recorder.ts) the worker runs on the engine under test, and the settings that
 * choose each: on PostgreSQL the fast path and its idiomatic twin (`delivery-recorder` left out of FAST_PATHS, every
 * other fast path on); on SQLite the twin alone, whatever FAST_PATHS says (src/Webhooks/RecorderLive.ts). The
 * webhook tests that record outcomes run over them.
 */
export const DELIVERY_RECORDERS: ReadonlyArray<readonly ["fast" | "idiomatic", Readonly<Record<string, string>>]> =
  twinsOf("delivery-recorder")
    .filter(([kind]) => usingPostgres() || kind === "idiomatic")
    .map(([kind, fastPaths]) => [kind, { FAST_PATHS: fastPaths }] as const)

/** The recorder a server's delivery worker said it runs, in its "delivery worker started" line. */
export const deliveryRecorderOf = (server: Pick<Server, "logs">): unknown =>
  parsedLogs(server).find((line) => line.message === "delivery worker started")?.recorder

/** An ISO 8601 UTC timestamp with milliseconds, as the service writes them. */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/**
 * The order every list promises: by `key`, then by id, ascending (for `desc`, both reversed). For `Array.sort`
 * on the records a test expects, to compare with what the service answers.
 */
export const listOrder =
  <T extends { readonly id: string }>(key: keyof T, order: "asc" | "desc" = "asc") =>
  (a: T, b: T): number => {
    const by = a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
    return order === "asc" ? by : -by
  }

/**
 * A `webhooks` row as stored, for tests and benchmarks that write webhooks below the service: subscribed to
 * `project.created`, active unless `failedAt` is given.
 */
export const webhookRow = (row: {
  readonly id: string
  readonly userId: string
  readonly url: string
  readonly secret: string
  readonly at: string
  readonly failedAt?: string
}) => ({
  id: row.id,
  user_id: row.userId,
  url: row.url,
  events: JSON.stringify(["project.created"]),
  secret: row.secret,
  created_at: row.at,
  updated_at: row.at,
  status: row.failedAt === undefined ? "active" : "failed",
  failed_at: row.failedAt ?? null
})

/** A delivery as the worker's claim hands it over (to an address nobody listens on), `overrides` on top. */
export const claimedDelivery = (overrides: Partial<typeof ClaimedDelivery.Encoded> = {}): ClaimedDelivery =>
  Schema.decodeSync(ClaimedDelivery)({
    id: makeId("delivery"),
    webhook_id: makeId("webhook"),
    event_id: makeId("event"),
    event_type: "project.created",
    attempt_count: 0,
    attempts_made: 0,
    status: "pending",
    manual: 0,
    next_attempt_at: new Date().toISOString(),
    url: "http://127.0.0.1:1/hook",
    signature: "hmac",
    secret: "whsec_x",
    previous_secret: null,
    previous_secret_expires_at: null,
    webhook_status: "active",
    payload: "{}",
    trace_context: null,
    claim_token: crypto.randomUUID(),
    rate_limit: null,
    ...overrides
  })
