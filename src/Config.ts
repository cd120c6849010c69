/**
 * Every setting the service reads, in one place. Nothing else touches `process.env`.
 */
import { Config, ConfigError, Either, LogLevel, Option, Redacted } from "effect"

export type DatabaseConfig =
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "pg"; readonly url: Redacted.Redacted }

/** `DATABASE_URL`: unset → `./data/service.sqlite`; `sqlite:<path>`, `sqlite::memory:`; `postgres://…`. */
export const parseDatabaseUrl = (raw: string | undefined): DatabaseConfig | string => {
  if (raw === undefined || raw.trim() === "") return { _tag: "sqlite", filename: "./data/service.sqlite" }
  const value = raw.trim()
  if (value.startsWith("postgres://") || value.startsWith("postgresql://")) {
    return { _tag: "pg", url: Redacted.make(value) }
  }
  if (value.startsWith("sqlite:")) {
    const rest = value.slice("sqlite:".length).replace(/^\/\//, "")
    if (rest === "") return "DATABASE_URL `sqlite:` needs a path, or `sqlite::memory:`"
    return { _tag: "sqlite", filename: rest }
  }
  return "DATABASE_URL must start with sqlite:, postgres:// or postgresql://"
}

export const DatabaseUrl: Config.Config<DatabaseConfig> = Config.option(Config.string("DATABASE_URL")).pipe(
  Config.mapOrFail((raw) => {
    const parsed = parseDatabaseUrl(Option.getOrUndefined(raw))
    return typeof parsed === "string"
      ? Either.left(ConfigError.InvalidData([], parsed))
      : Either.right(parsed)
  })
)

export const ServerConfig = Config.all({
  /** 0 picks a free port (the tests use it). */
  port: Config.integer("PORT").pipe(
    Config.validate({ message: "PORT must be an integer from 0 to 65535", validation: (n) => n >= 0 && n <= 65535 }),
    Config.withDefault(3000)
  ),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
  baseUrl: Config.option(Config.url("BASE_URL")),
  /** How long in-flight requests get to finish after SIGTERM. */
  shutdownTimeout: Config.duration("SHUTDOWN_TIMEOUT").pipe(Config.withDefault("20 seconds"))
})

export const LogLevelConfig = Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))
