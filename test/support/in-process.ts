/**
 * The real server in this process: the application's own layers (`programWith` from src/main.ts: `MainLive`,
 * telemetry, logging) over a fresh database, serving HTTP through the same `node:http` server on a free loopback
 * port, so tests speak HTTP with fetch as they would to a process — without a process to start (most of a second of
 * CPU each) for every file. The settings are the service's own `Config`, read from the `env` the test gives over
 * this process's environment (as `startServer` passes its own), with `PORT=0`, `HOST=127.0.0.1`, `LOG_LEVEL=info`
 * and the fresh `DATABASE_URL`. Log lines are the JSON lines the service prints, kept in `logs` instead of stdout.
 *
 * For rules (visibility, roles, validation, state changes). What needs a process stays on `startServer`: start-up
 * refusals, signals and exit codes, crashes, replicas, stdout itself.
 *
 * A test process keeps one module registry across its files (`bun test` alone, and each worker of `bun run test`:
 * `--no-isolate`), so what a module of src/ keeps at module level (metrics, label tables, id counters) is shared by
 * every in-process server it runs; nothing a rule test asserts depends on it.
 */
import { Cause, ConfigProvider, Deferred, Effect, Exit, Fiber, Layer, Logger } from "effect"
import { LogLevelConfig } from "../../src/Config.ts"
import { programWith } from "../../src/main.ts"
import { jsonLoggerTo } from "../../src/Observability/Logging.ts"
import { fixtures as fixturesOn, secretsSettings } from "./fixtures.ts"
import { cliOn, migratedDatabaseUrl, requestOn, type Server, START_WAIT_MS, type TestUser } from "./server.ts"

/** The settings a test gives, over this process's environment (a test run's `DATABASE_URL` among them). */
export const providerOf = (env: Record<string, string>) =>
  ConfigProvider.fromMap(new Map(Object.entries(env))).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))

/** `LoggingLive`, with the lines given to `write` instead of stdout. */
export const loggingTo = (write: (line: string) => void) =>
  Layer.unwrapEffect(
    Effect.map(Effect.orDie(LogLevelConfig), (level) =>
      Layer.merge(Logger.replace(Logger.defaultLogger, jsonLoggerTo(write)), Logger.minimumLogLevel(level))
    )
  )

/** Signals an in-process server can honour: the graceful shutdown. Others need a process (`startServer`). */
const GRACEFUL: ReadonlySet<NodeJS.Signals> = new Set(["SIGTERM", "SIGINT"])

/**
 * Starts the server in this process, as `startServer` starts a process: the same `Server` to the test. `stop()`
 * interrupts it, which shuts it down as SIGTERM does (drains requests in flight, stops the delivery worker and the
 * checkpointer, closes the database), and answers 0 when that ended cleanly.
 */
export const startInProcess = async (
  options: {
    readonly env?: Record<string, string>
    readonly databaseUrl?: string
    /** Installed around the whole server as its logging is (a supervisor, runtime flags). */
    readonly around?: Layer.Layer<never>
  } = {}
): Promise<Server> => {
  const databaseUrl = options.databaseUrl ?? (await migratedDatabaseUrl())
  const env = {
    DATABASE_URL: databaseUrl,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    ...secretsSettings(databaseUrl),
    ...options.env
  }
  const logs: Array<string> = []
  const listening = Effect.runSync(Deferred.make<string>())
  const write = (text: string) => {
    const line = text.endsWith("\n") ? text.slice(0, -1) : text
    logs.push(line)
    const match = /Listening on (http:\/\/[^"\s]+)/.exec(line)
    if (match) Effect.runSync(Deferred.succeed(listening, match[1]!.replace("0.0.0.0", "127.0.0.1")))
  }
  const logging = options.around === undefined ? loggingTo(write) : Layer.merge(loggingTo(write), options.around)
  const fiber = Effect.runFork(programWith(logging).pipe(Effect.withConfigProvider(providerOf(env))))

  const url = await Effect.runPromise(
    Effect.raceFirst(
      Deferred.await(listening),
      Effect.flatMap(Fiber.await(fiber), (exit) =>
        Effect.die(
          new Error(
            `server stopped before listening:\n${Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "no failure"}\n${logs.join("\n")}`
          )
        )
      )
    ).pipe(
      Effect.timeoutFail({
        duration: START_WAIT_MS,
        onTimeout: () => new Error(`server did not start in ${START_WAIT_MS / 1000} s:\n${logs.join("\n")}`)
      }),
      // A server that did not start is not left running.
      Effect.onError(() => Fiber.interrupt(fiber))
    )
  )

  const fixtures = fixturesOn(databaseUrl, { secretsKey: options.env?.SECRETS_KEY })
  const user = (opts: { readonly scopes?: string; readonly name?: string } = {}): Promise<TestUser> =>
    fixtures.user(opts)

  let stopped: Promise<number> | undefined
  const stop = (signal: NodeJS.Signals = "SIGTERM"): Promise<number> => {
    if (!GRACEFUL.has(signal)) {
      return Promise.reject(new Error(`an in-process server cannot take ${signal}: start it with startServer`))
    }
    stopped ??= (async () => {
      await fixtures.dispose()
      const exit = await Effect.runPromise(Fiber.interrupt(fiber))
      return Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause) ? 1 : 0
    })()
    return stopped
  }

  return { url, databaseUrl, logs, request: requestOn(url), cli: cliOn(databaseUrl), user, fixtures, stop }
}

/**
 * As `startupFailure` (server.ts), in this process: the error its start-up failed with ("server stopped before
 * listening", with the cause), or undefined (after stopping it) if it started after all.
 */
export const startupFailureInProcess = (env: Record<string, string>): Promise<unknown> =>
  startInProcess({ env }).then(
    async (unexpected) => {
      await unexpected.stop()
      return undefined
    },
    (error: unknown) => error
  )
