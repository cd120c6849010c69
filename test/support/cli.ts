/**
 * The operator commands in this process: `cli(argv)` from src/cli.ts, the code `bun src/cli.ts` runs, on the
 * database `databaseUrl` names (read through the service's `Config`, as the process reads it), with `stdin` as its
 * standard input and no terminal. What the default logger prints goes to `stderr`, before the command's own, as it
 * does in a process. What needs a process stays on `runCli` (server.ts): reading the process's own stdin, the
 * terminal prompt, the exit status a shell sees, the package script's output.
 */
import { ConfigProvider, Effect, Logger, Option } from "effect"
import { CliInput, type CliOutcome, cli } from "../../src/cli.ts"
import { secretsSettings } from "./fixtures.ts"

export const runCliInProcess = async (
  databaseUrl: string,
  args: ReadonlyArray<string>,
  options: { readonly stdin?: string; readonly env?: Record<string, string> } = {}
): Promise<CliOutcome> => {
  const logged: Array<string> = []
  const logger = Logger.map(Logger.logfmtLogger, (line) => {
    logged.push(`${line}\n`)
  })
  const settings = ConfigProvider.fromMap(
    new Map(Object.entries({ DATABASE_URL: databaseUrl, ...secretsSettings(databaseUrl), ...options.env }))
  ).pipe(ConfigProvider.orElse(() => ConfigProvider.fromEnv()))
  const outcome = await Effect.runPromise(
    cli(args).pipe(
      Effect.provideService(CliInput, { stdin: Effect.succeed(options.stdin ?? ""), askHidden: Option.none() }),
      Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
      Effect.withConfigProvider(settings)
    )
  )
  return { ...outcome, stderr: logged.join("") + outcome.stderr }
}
