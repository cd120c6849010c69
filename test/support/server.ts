/**
 * Starts the real server as a child process (`bun src/main.ts`) on a free loopback port, on a fresh database:
 * a temporary SQLite file, or — when `DATABASE_URL` is a postgres URL — a new database on that server.
 * Tests speak HTTP to it, as a client would.
 */

import { createHash } from "node:crypto"
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { Subprocess } from "bun"
import { runCliInProcess } from "./cli.ts"
import type { CrashPoint } from "./crash-main.ts"
import { createDatabase, databaseOn, sqlOn } from "./databases.ts"
import { type Fixtures, fixtures as fixturesOn, secretsSettings } from "./fixtures.ts"
import { tempDir } from "./temp.ts"

const ROOT = join(import.meta.dir, "..", "..")

/**
 * How long a server is given to start listening: generous, as a loaded machine (the suite beside other work) can take
 * tens of seconds to migrate a new database and start; under the minute a hook or test that starts one is given.
 */
export const START_WAIT_MS = 45_000

export const usingPostgres = (): boolean => /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? "")

/** A fresh, empty database URL for one server. */
export const freshDatabaseUrl = async (): Promise<string> => {
  const base = process.env.DATABASE_URL ?? ""
  if (!usingPostgres()) {
    return `sqlite:${join(tempDir("pcs-test-"), "service.sqlite")}`
  }
  return createDatabase(base, "")
}

/**
 * A fresh database with every migration applied: where a test is not about migrating or about start-up on an empty
 * database (those take `freshDatabaseUrl`). On PostgreSQL a copy of a migrated template, `pcs_template_<hash of
 * src/Sql, src/Domain and src/Secrets>`, made once per version of the migrations on that server and kept there, so a server does
 * not run the migrations' DDL again (a copy costs a fraction of that); the server still checks them on start-up and
 * finds them all applied. On SQLite, where migrating a new file is quick, an empty file as from `freshDatabaseUrl`.
 */
export const migratedDatabaseUrl = async (): Promise<string> => {
  if (!usingPostgres()) return freshDatabaseUrl()
  const base = process.env.DATABASE_URL ?? ""
  templateReady ??= migratedTemplate(base)
  return createDatabase(base, await templateReady)
}

let templateReady: Promise<string> | undefined

/** A number no lock of the service's (src/Sql/Locks.ts) uses: one test process at a time makes the template. */
const TEMPLATE_LOCK = 4_242_901

/**
 * The migrated template's name, made if it is not on the server yet: migrated under another name by the CLI in a
 * process of its own (whose connections end with it), then renamed, so a template that exists is whole. Test
 * processes that need it at once wait on an advisory lock, and the others find it made.
 */
const migratedTemplate = async (base: string): Promise<string> => {
  // What a migration can read: the migrations and the rest of src/Sql, and the domain modules some of them import.
  const hash = createHash("sha256")
  for (const dir of ["src/Sql", "src/Domain", "src/Secrets"]) {
    const files = readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"))
    for (const file of files.sort()) hash.update(file).update(readFileSync(join(ROOT, dir, file)))
  }
  const name = `pcs_template_${hash.digest("hex").slice(0, 16)}`
  const admin = sqlOn(base)
  const session = await admin.reserve()
  try {
    await session.unsafe(`SELECT pg_advisory_lock(${TEMPLATE_LOCK})`)
    const [found] = await session.unsafe(`SELECT 1 AS found FROM pg_database WHERE datname = '${name}'`)
    if (found === undefined) {
      const building = `${name}_${Math.random().toString(36).slice(2, 8)}`
      await session.unsafe(`CREATE DATABASE ${building}`)
      const { code, stderr } = await runCli(databaseOn(base, building), ["migrate"])
      if (code !== 0) {
        await session.unsafe(`DROP DATABASE ${building} WITH (FORCE)`)
        throw new Error(`migrating the template failed: ${stderr}`)
      }
      await session.unsafe(`ALTER DATABASE ${building} RENAME TO ${name}`)
    }
  } finally {
    await session.unsafe(`SELECT pg_advisory_unlock(${TEMPLATE_LOCK})`)
    session.release()
    await admin.close()
  }
  return name
}

export interface Response<T = any> {
  readonly status: number
  readonly headers: Headers
  readonly body: T
  readonly text: string
}

export interface RequestOptions {
  readonly method?: string
  readonly key?: string
  readonly body?: unknown
  readonly rawBody?: string | Uint8Array<ArrayBuffer>
  readonly headers?: Record<string, string>
}

/** A server to speak HTTP to: a process (`startServer`) or one in this process (in-process.ts `startInProcess`). */
export interface Server {
  readonly url: string
  readonly databaseUrl: string
  /** Every line the server printed on stdout so far. */
  readonly logs: Array<string>
  request<T = any>(path: string, options?: RequestOptions): Promise<Response<T>>
  /** Runs an operator command on this server's database, in this process (`runCliInProcess`); its `data`. */
  cli<T = any>(...args: Array<string>): Promise<T>
  /**
   * A new user with an API key (`read,write` unless other scopes are given), made in this process by the
   * service's own `Users` and `ApiKeys` (see fixtures.ts).
   */
  user(options?: { readonly scopes?: string; readonly name?: string }): Promise<TestUser>
  /** Users, keys, teams and members made in this process on this server's database; closed by `stop()`. */
  readonly fixtures: Fixtures
  stop(signal?: NodeJS.Signals): Promise<number>
}

/** A server running as a child process: for what signals it, kills it or reads its exit. */
export interface ServerProcess extends Server {
  readonly process: Subprocess<"ignore", "pipe", "pipe">
}

export interface TestUser {
  readonly id: string
  readonly email: string
  readonly name: string
  readonly key: string
  readonly keyId: string
}

export interface CliOptions {
  /** Piped to the command's standard input; none by default. */
  readonly stdin?: string
  /** As a person types it, `bun run cli …` (the package script), instead of `bun src/cli.ts …`. */
  readonly viaScript?: boolean
  /** Another checkout to run it in (the image's file set), with exactly this environment. */
  readonly cwd?: string
  readonly env?: Record<string, string>
}

/** Runs an operator command on `databaseUrl`: what it printed on each stream, and its exit status. */
export const runCli = async (databaseUrl: string, args: ReadonlyArray<string>, options: CliOptions = {}) => {
  const proc = Bun.spawn(options.viaScript ? ["bun", "run", "cli", ...args] : ["bun", "src/cli.ts", ...args], {
    cwd: options.cwd ?? ROOT,
    env: {
      ...(options.env ?? { ...process.env, LOG_LEVEL: "warn", ...secretsSettings(databaseUrl) }),
      DATABASE_URL: databaseUrl
    },
    stdin: options.stdin === undefined ? "ignore" : new Blob([options.stdin]),
    stdout: "pipe",
    stderr: "pipe"
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited
  ])
  return { stdout, stderr, code }
}

/** `Server.request` against the server at `url`. */
export const requestOn =
  (url: string) =>
  async <T>(path: string, opts: RequestOptions = {}): Promise<Response<T>> => {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`
    let body: BodyInit | undefined =
      typeof opts.rawBody === "string" || opts.rawBody === undefined ? opts.rawBody : new Blob([opts.rawBody])
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body)
      headers["content-type"] ??= "application/json"
    }
    const response = await fetch(`${url}${path}`, { method: opts.method ?? "GET", headers, body })
    const text = await response.text()
    let parsed: any
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      parsed = undefined
    }
    return { status: response.status, headers: response.headers, body: parsed, text }
  }

/** `Server.cli` on `databaseUrl`. */
export const cliOn =
  (databaseUrl: string) =>
  async <T>(...args: Array<string>): Promise<T> => {
    const { stdout, stderr, code } = await runCliInProcess(databaseUrl, args)
    if (code !== 0) throw new Error(`cli ${args.join(" ")} exited ${code}: ${stderr}`)
    return JSON.parse(stdout).data
  }

/**
 * Starts the service as a process, `bun src/main.ts`; with `crashAt`, `bun test/support/crash-main.ts <crashAt>`
 * instead: the same service, which kills itself at that point of its first keyed change (crash-main.ts).
 */
export const startServer = async (
  options: { readonly env?: Record<string, string>; readonly databaseUrl?: string; readonly crashAt?: CrashPoint } = {}
): Promise<ServerProcess> => {
  const databaseUrl = options.databaseUrl ?? (await migratedDatabaseUrl())
  const main = options.crashAt === undefined ? ["src/main.ts"] : ["test/support/crash-main.ts", options.crashAt]
  // `--no-orphans`: the server exits when this process does, so a file that fails before its `afterAll` (or
  // forgets to stop a server) never leaves one running after the test run.
  const proc = Bun.spawn(["bun", "--no-orphans", ...main], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "info",
      ...secretsSettings(databaseUrl),
      ...options.env
    },
    stdout: "pipe",
    stderr: "pipe"
  })
  const logs: Array<string> = []
  let listened = false
  let resolveUrl: (url: string) => void = () => {}
  const listening = new Promise<string>((resolve) => (resolveUrl = resolve))
  ;(async () => {
    const decoder = new TextDecoder()
    let buffered = ""
    const reader = proc.stdout.getReader()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      buffered += decoder.decode(value, { stream: true })
      for (let newline = buffered.indexOf("\n"); newline >= 0; newline = buffered.indexOf("\n")) {
        const line = buffered.slice(0, newline)
        buffered = buffered.slice(newline + 1)
        logs.push(line)
        // An error logged once the server listens is shown as it happens, so that a test failing on a 500 in CI
        // shows its cause (a failed start-up's lines are in the error below).
        if (listened && /^\{"time":"[^"]*","level":"(error|fatal)"/.test(line)) {
          console.error(`server pid ${proc.pid}: ${line}`)
        }
        const match = /Listening on (http:\/\/[^"\s]+)/.exec(line)
        if (match) {
          listened = true
          resolveUrl(match[1]!.replace("0.0.0.0", "127.0.0.1"))
        }
      }
    }
  })()
  const stderr = new Response(proc.stderr).text()
  const url = await Promise.race([
    listening,
    proc.exited.then(async (code) => {
      throw new Error(`server exited with ${code} before listening:\n${await stderr}\n${logs.join("\n")}`)
    }),
    Bun.sleep(START_WAIT_MS).then(() => {
      throw new Error(`server did not start in ${START_WAIT_MS / 1000} s:\n${logs.join("\n")}`)
    })
  ])

  const request = requestOn(url)
  const cli = cliOn(databaseUrl)

  const fixtures = fixturesOn(databaseUrl, { secretsKey: options.env?.SECRETS_KEY })
  const user = (opts: { readonly scopes?: string; readonly name?: string } = {}): Promise<TestUser> =>
    fixtures.user(opts)

  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    await fixtures.dispose()
    proc.kill(signal)
    return await proc.exited
  }

  return { url, databaseUrl, process: proc, logs, request, cli, user, fixtures, stop }
}

/**
 * Starts a server with settings it should refuse: the error its start-up failed with, or undefined (after
 * stopping it) if it started after all.
 */
export const startupFailure = (env: Record<string, string>): Promise<unknown> =>
  startServer({ env }).then(
    async (unexpected) => {
      await unexpected.stop("SIGKILL")
      return undefined
    },
    (error: unknown) => error
  )
