/**
 * Every setting the service reads, in one place. Nothing else touches `process.env`.
 */
import { isIP } from "node:net"
import { Config, ConfigError, Duration, Either, LogLevel, Option, Redacted } from "effect"

/** `500ms`, `10s`, `1m`, `2h`, `1d` (or Effect's long form, `10 seconds`). */
export const parseDuration = (text: string): Duration.Duration | undefined => {
  const match = /^(\d+(?:\.\d+)?) ?(ms|millis|s|seconds?|m|minutes?|h|hours?|d|days?)$/.exec(text)
  if (match === null) return undefined
  const [, amount = "", unit = ""] = match
  const n = Number(amount)
  switch (unit.slice(0, 1) + (unit === "ms" || unit === "millis" ? "s" : "")) {
    case "ms":
      return Duration.millis(n)
    case "s":
      return Duration.seconds(n)
    case "m":
      return Duration.minutes(n)
    case "h":
      return Duration.hours(n)
    default:
      return Duration.days(n)
  }
}

const durationSetting = (name: string) => (raw: string) => {
  const parsed = parseDuration(raw.trim())
  return parsed === undefined
    ? Either.left(ConfigError.InvalidData([name], `${name} must be a duration such as 500ms, 10s, 1m or 2h`))
    : Either.right(parsed)
}

/** An integer setting of at least 1. */
const positiveInteger = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `${name} must be an integer of at least 1`, validation: (n) => n >= 1 }),
    Config.withDefault(fallback)
  )

export type DatabaseConfig =
  | { readonly _tag: "sqlite"; readonly filename: string }
  | { readonly _tag: "pg"; readonly url: Redacted.Redacted }

/**
 * `DATABASE_URL`: unset → `./data/service.sqlite`; `sqlite:<path>`, `sqlite::memory:`, a bare file path (as the
 * default is written, e.g. `./data/service.sqlite` or `/var/lib/pcs/db.sqlite`), or `postgres://…`.
 */
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
  // Any other `scheme:` (mysql://, file:, …) is refused rather than taken for a file name.
  if (/^[a-z][a-z0-9+.-]*:/i.test(value) && value !== ":memory:") {
    return "DATABASE_URL must be a file path, sqlite:<path>, sqlite::memory:, or a postgres:// / postgresql:// URL"
  }
  return { _tag: "sqlite", filename: value }
}

export const DatabaseUrl: Config.Config<DatabaseConfig> = Config.option(Config.string("DATABASE_URL")).pipe(
  Config.mapOrFail((raw) => {
    const parsed = parseDatabaseUrl(Option.getOrUndefined(raw))
    return typeof parsed === "string"
      ? Either.left(ConfigError.InvalidData(["DATABASE_URL"], parsed))
      : Either.right(parsed)
  })
)

/**
 * An absolute `http://` or `https://` URL. `Config.url` alone takes `localhost:4318` as a URL whose scheme is
 * `localhost:`, which then fails at the first request instead of at start-up.
 */
const httpUrl = (name: string, example: string) =>
  Config.string(name).pipe(
    Config.mapOrFail((raw) => {
      const value = raw.trim()
      const url = URL.canParse(value) ? new URL(value) : undefined
      return url !== undefined && (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== ""
        ? Either.right(url)
        : Either.left(
            ConfigError.InvalidData(
              [],
              `${name} must be an http:// or https:// URL such as ${example}; got ${JSON.stringify(raw)}`
            )
          )
    })
  )

/** `BASE_URL`: the public address links and issued tokens name (src/Domain/BaseUrl.ts); unset → from the request. */
export const BaseUrlConfig = Config.option(httpUrl("BASE_URL", "https://api.example.com"))

/** An address, or a CIDR range (`address/prefix`), of a proxy in front of the server. */
export interface TrustedProxy {
  readonly address: string
  readonly prefix: number | undefined
}

/** `TRUSTED_PROXIES`: comma-separated IPv4/IPv6 addresses or CIDR ranges; empty by default. */
export const parseTrustedProxies = (raw: string): ReadonlyArray<TrustedProxy> | string => {
  const entries: Array<TrustedProxy> = []
  for (const part of raw.split(",")) {
    const text = part.trim()
    if (text === "") continue
    const [address = "", prefixText, extra] = text.split("/")
    const family = isIP(address)
    const prefix = prefixText === undefined ? undefined : Number(prefixText)
    const bits = family === 6 ? 128 : 32
    if (
      family === 0 ||
      extra !== undefined ||
      (prefix !== undefined && (!/^\d+$/.test(prefixText ?? "") || prefix > bits))
    ) {
      return `TRUSTED_PROXIES must be IP addresses or CIDR ranges separated by commas (e.g. 127.0.0.1,10.0.0.0/8); got ${JSON.stringify(text)}`
    }
    entries.push({ address, prefix })
  }
  return entries
}

export const ServerConfig = Config.all({
  /** 0 picks a free port (the tests use it). */
  port: Config.integer("PORT").pipe(
    Config.validate({ message: "PORT must be an integer from 0 to 65535", validation: (n) => n >= 0 && n <= 65535 }),
    Config.withDefault(3000)
  ),
  host: Config.string("HOST").pipe(Config.withDefault("0.0.0.0")),
  baseUrl: BaseUrlConfig,
  /**
   * Proxies whose `X-Forwarded-For` names the client (src/Http/ClientAddress.ts), for the per-IP rate limits: the
   * load balancer in front of the replicas. Empty: the socket's peer is the client.
   */
  trustedProxies: Config.string("TRUSTED_PROXIES").pipe(
    Config.withDefault(""),
    Config.mapOrFail((raw) => {
      const parsed = parseTrustedProxies(raw)
      return typeof parsed === "string"
        ? Either.left(ConfigError.InvalidData(["TRUSTED_PROXIES"], parsed))
        : Either.right(parsed)
    })
  ),
  /** How long in-flight requests get to finish after SIGTERM. */
  shutdownTimeout: Config.string("SHUTDOWN_TIMEOUT").pipe(
    Config.withDefault("20s"),
    Config.mapOrFail(durationSetting("SHUTDOWN_TIMEOUT"))
  ),
  /**
   * A connection with no request completed and no answer written for this long is closed: headers sent slowly, an
   * idle keep-alive connection, a request still unanswered (src/Http.ts).
   */
  idleTimeout: Config.string("HTTP_IDLE_TIMEOUT").pipe(
    Config.withDefault("10s"),
    Config.mapOrFail(durationSetting("HTTP_IDLE_TIMEOUT")),
    Config.mapOrFail((idle) =>
      Duration.toMillis(idle) > 0
        ? Either.right(idle)
        : Either.left(ConfigError.InvalidData(["HTTP_IDLE_TIMEOUT"], "HTTP_IDLE_TIMEOUT must be more than 0"))
    )
  )
})

const logLevels: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warning: LogLevel.Warning,
  warn: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
  off: LogLevel.None
}

/** `trace`, `debug`, `info`, `warning` (or `warn`), `error`, `fatal`, `none` (or `off`); any case. */
export const LogLevelConfig = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapOrFail((raw) => {
    const level = logLevels[raw.trim().toLowerCase()]
    return level === undefined
      ? Either.left(
          ConfigError.InvalidData(
            ["LOG_LEVEL"],
            `LOG_LEVEL must be one of trace, debug, info, warning, error, fatal, none; got ${JSON.stringify(raw)}`
          )
        )
      : Either.right(level)
  })
)

/** Rate limits on `/v1`: a token bucket per credential, and one per client IP for requests without a valid one. */
export const RateLimitConfig = Config.all({
  /** `false` turns the limits and their headers off (benchmarks, emergencies). */
  enabled: Config.boolean("RATE_LIMIT_ENABLED").pipe(Config.withDefault(true)),
  /** Requests per credential per window (the window is a minute unless `RATE_LIMIT_WINDOW` says otherwise). */
  perCredential: positiveInteger("RATE_LIMIT_PER_MINUTE", 1000),
  /** Requests per client IP per window that carry no valid credential (401, 404, 405, …). */
  perClientIp: positiveInteger("RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE", 100),
  window: Config.string("RATE_LIMIT_WINDOW").pipe(
    Config.withDefault("1m"),
    Config.mapOrFail(durationSetting("RATE_LIMIT_WINDOW"))
  ),
  /** Shared counts for every replica; unset → counted in this process. */
  redisUrl: Config.option(Config.redacted("REDIS_URL"))
})

/**
 * `PASSWORD_HASH_MEMORY_KIB`: the memory (KiB) argon2id uses for a new password hash, with two passes; a sign-in
 * verifies a hash at the cost it was made with. At least OWASP's 19 MiB for two passes; at most 4 GiB.
 */
export const PasswordHashMemoryConfig = Config.integer("PASSWORD_HASH_MEMORY_KIB").pipe(
  Config.validate({
    message: "PASSWORD_HASH_MEMORY_KIB must be an integer from 19456 to 4194304",
    validation: (n) => n >= 19_456 && n <= 4_194_304
  }),
  Config.withDefault(65_536)
)

/** OAuth 2.0 and JWT sessions. */
export const AuthConfig = Config.all({
  /** An Ed25519 private key (PKCS#8 PEM or JWK JSON) to sign JWTs with; unset → a key kept in the database. */
  jwtPrivateKey: Config.option(Config.redacted("JWT_PRIVATE_KEY")),
  /**
   * Requests a minute per client IP on each of `{auth_url}/login` and the sign-in form; on `{auth_url}/token`,
   * `/revoke` and `/introspect`, the calls whose client authentication fails.
   */
  ipLimitPerMinute: positiveInteger("AUTH_IP_LIMIT_PER_MINUTE", 20),
  /** Calls a minute per authenticated OAuth client on `{auth_url}/token` and `/revoke` together. */
  clientLimitPerMinute: positiveInteger("OAUTH_CLIENT_LIMIT_PER_MINUTE", 600),
  /** Failed sign-ins per account (email) in 15 minutes before further attempts are refused. */
  failedLoginLimit: positiveInteger("AUTH_FAILED_LOGIN_LIMIT", 10)
})

/**
 * `SECRETS_KEY`: one or more base64 keys of 32 bytes, separated by commas. Answers the keys' bytes, or what is wrong
 * (never the value itself).
 */
export const parseSecretsKeys = (raw: string): ReadonlyArray<Uint8Array> | string => {
  const parts = raw.split(",").map((part) => part.trim())
  const keys: Array<Uint8Array> = []
  for (const [i, part] of parts.entries()) {
    const bytes = /^[A-Za-z0-9+/_-]{43}=?$/.test(part) ? Buffer.from(part, "base64") : undefined
    if (bytes === undefined || bytes.length !== 32) {
      return `SECRETS_KEY must be one or more base64 keys of 32 bytes separated by commas (openssl rand -base64 32); key ${
        i + 1
      } of ${parts.length} is not one`
    }
    keys.push(new Uint8Array(bytes))
  }
  return keys
}

/**
 * The key ring secrets at rest are encrypted with (src/Secrets/KeyRing.ts): the first key encrypts, every one
 * decrypts. Unset or empty: none given, which PostgreSQL refuses (every replica must share the keys); SQLite then keeps
 * one in `secrets.key` beside the database file.
 */
export const SecretsConfig = Config.all({
  keys: Config.redacted("SECRETS_KEY").pipe(
    Config.withDefault(Redacted.make("")),
    Config.mapOrFail((raw) => {
      const text = Redacted.value(raw).trim()
      if (text === "") return Either.right(Option.none<Redacted.Redacted<ReadonlyArray<Uint8Array>>>())
      const parsed = parseSecretsKeys(text)
      return typeof parsed === "string"
        ? Either.left(ConfigError.InvalidData(["SECRETS_KEY"], parsed))
        : Either.right(Option.some(Redacted.make(parsed)))
    })
  ),
  database: DatabaseUrl
}).pipe(
  Config.mapOrFail((c) =>
    c.database._tag === "pg" && Option.isNone(c.keys)
      ? Either.left(
          ConfigError.InvalidData(
            ["SECRETS_KEY"],
            "SECRETS_KEY is required with PostgreSQL: one or more base64 keys of 32 bytes separated by commas " +
              "(openssl rand -base64 32), the same on every replica"
          )
        )
      : Either.right(c)
  )
)

/** Webhook delivery. Defaults are the spec's: waits of 1m, 5m, 30m, 2h before attempts 2–5; a 10 s time-out. */
export const WebhookConfig = Config.all({
  retryDelays: Config.string("WEBHOOK_RETRY_DELAYS").pipe(
    Config.withDefault("1m,5m,30m,2h"),
    Config.mapOrFail((raw) => {
      const delays = raw.split(",").map((part) => parseDuration(part.trim()))
      return delays.length === 4 && delays.every((d) => d !== undefined)
        ? Either.right(delays.filter((d) => d !== undefined))
        : Either.left(
            ConfigError.InvalidData(
              ["WEBHOOK_RETRY_DELAYS"],
              "WEBHOOK_RETRY_DELAYS must be four durations such as 1m,5m,30m,2h"
            )
          )
    })
  ),
  timeout: Config.string("WEBHOOK_TIMEOUT").pipe(
    Config.withDefault("10s"),
    Config.mapOrFail(durationSetting("WEBHOOK_TIMEOUT"))
  ),
  claimTimeout: Config.string("WEBHOOK_CLAIM_TIMEOUT").pipe(
    Config.withDefault("60s"),
    Config.mapOrFail(durationSetting("WEBHOOK_CLAIM_TIMEOUT"))
  ),
  concurrency: Config.integer("WEBHOOK_CONCURRENCY").pipe(
    Config.validate({ message: "WEBHOOK_CONCURRENCY must be from 1 to 1000", validation: (n) => n >= 1 && n <= 1000 }),
    Config.withDefault(32)
  ),
  /** How often the worker looks for due deliveries when nothing wakes it. */
  pollInterval: Config.string("WEBHOOK_POLL_INTERVAL").pipe(
    Config.withDefault("1s"),
    Config.mapOrFail(durationSetting("WEBHOOK_POLL_INTERVAL"))
  ),
  allowPrivateTargets: Config.boolean("WEBHOOK_ALLOW_PRIVATE_TARGETS").pipe(Config.withDefault(false)),
  /** How long a secret taken out by `rotate-secret` still signs deliveries (beside the new one). */
  secretOverlap: Config.string("WEBHOOK_SECRET_OVERLAP").pipe(
    Config.withDefault("24h"),
    Config.mapOrFail(durationSetting("WEBHOOK_SECRET_OVERLAP"))
  )
}).pipe(
  Config.mapOrFail((c) =>
    Duration.greaterThan(c.claimTimeout, c.timeout)
      ? Either.right(c)
      : Either.left(
          ConfigError.InvalidData(
            ["WEBHOOK_CLAIM_TIMEOUT"],
            `WEBHOOK_CLAIM_TIMEOUT must exceed WEBHOOK_TIMEOUT (they are ${Duration.format(c.claimTimeout)} and ${Duration.format(
              c.timeout
            )})`
          )
        )
  )
)

/** Teams: how long an invitation stays open (seven days unless `INVITATION_TTL` says otherwise). */
export const TeamsConfig = Config.all({
  invitationTtl: Config.string("INVITATION_TTL").pipe(
    Config.withDefault("7d"),
    Config.mapOrFail(durationSetting("INVITATION_TTL")),
    Config.validate({ message: "INVITATION_TTL must be more than 0", validation: (d) => Duration.toMillis(d) > 0 })
  )
})

/** A duration setting of more than 0. */
const positiveDuration = (name: string, fallback: string) =>
  Config.string(name).pipe(
    Config.withDefault(fallback),
    Config.mapOrFail(durationSetting(name)),
    Config.validate({ message: `${name} must be more than 0`, validation: (d) => Duration.toMillis(d) > 0 })
  )

/**
 * Retention: what the background sweep deletes and how often it runs (one sweep at a time across replicas).
 * Idempotency keys go after `IDEMPOTENCY_TTL`, OAuth codes and tokens a day after they expire.
 */
export const RetentionConfig = Config.all({
  /** Deliveries that ended (delivered or failed) this long ago go, with their attempts. */
  deliveryRetention: positiveDuration("DELIVERY_RETENTION", "30d"),
  /** Events older than this go once none of their deliveries is pending. */
  eventRetention: positiveDuration("EVENT_RETENTION", "30d"),
  /** Audit records older than this go (nothing else deletes one). */
  auditRetention: positiveDuration("AUDIT_RETENTION", "365d"),
  sweepInterval: positiveDuration("RETENTION_SWEEP_INTERVAL", "1h"),
  /** Rows deleted by one statement at most: short statements, short locks. */
  batchSize: Config.integer("RETENTION_BATCH_SIZE").pipe(
    Config.validate({
      message: "RETENTION_BATCH_SIZE must be from 1 to 1000",
      validation: (n) => n >= 1 && n <= 1000
    }),
    Config.withDefault(1000)
  )
})

/** `Idempotency-Key` on `POST` (src/Idempotency/Http.ts). */
export const IdempotencyConfig = Config.all({
  /** How long a key, and the answer recorded with it, is kept from its first use (a day unless given). */
  ttl: Config.string("IDEMPOTENCY_TTL").pipe(
    Config.withDefault("24h"),
    Config.mapOrFail(durationSetting("IDEMPOTENCY_TTL")),
    Config.mapOrFail((ttl) =>
      Duration.toMillis(ttl) > 0
        ? Either.right(ttl)
        : Either.left(ConfigError.InvalidData(["IDEMPOTENCY_TTL"], "IDEMPOTENCY_TTL must be more than 0"))
    )
  )
})

/**
 * The measured fast paths (docs/fast-paths.md), each a second implementation of an interface whose idiomatic
 * implementation sits beside it under the same tests. `all` (the default) uses every one; `none`, or a list that
 * leaves one out, runs the idiomatic twin instead: to compare them in one build, or to rule a fast path out.
 */
export const FAST_PATH_NAMES = [
  "request-wrapper",
  "delivery-recorder",
  "prepared-statements",
  "pg-statements",
  "credential-cache",
  "sqlite-statements",
  "group-commit"
] as const
export type FastPath = (typeof FAST_PATH_NAMES)[number]

export const parseFastPaths = (raw: string): ReadonlySet<FastPath> | string => {
  const text = raw.trim().toLowerCase()
  if (text === "all") return new Set(FAST_PATH_NAMES)
  if (text === "none" || text === "") return new Set()
  const chosen = new Set<FastPath>()
  for (const name of text.split(",").map((part) => part.trim())) {
    const known = FAST_PATH_NAMES.find((fast) => fast === name)
    if (known === undefined) {
      return `FAST_PATHS must be all, none or a comma-separated list of ${FAST_PATH_NAMES.join(", ")} (got ${name})`
    }
    chosen.add(known)
  }
  return chosen
}

export const FastPathsConfig: Config.Config<ReadonlySet<FastPath>> = Config.string("FAST_PATHS").pipe(
  Config.withDefault("all"),
  Config.mapOrFail((raw) => {
    const parsed = parseFastPaths(raw)
    return typeof parsed === "string"
      ? Either.left(ConfigError.InvalidData(["FAST_PATHS"], parsed))
      : Either.right(parsed)
  })
)

/** `otlp` (the default) or `none`, per signal. */
const exporterSetting = (name: string) =>
  Config.literal(
    "otlp",
    "none"
  )(name).pipe(
    Config.withDefault("otlp" as const),
    Config.map((value) => value === "otlp")
  )

/** `key=value,key2=value2`, as the OpenTelemetry specification writes such lists (percent-decoded). */
const keyValueList = (name: string) =>
  Config.string(name).pipe(
    Config.withDefault(""),
    Config.map(
      (raw): Record<string, string> =>
        Object.fromEntries(
          raw
            .split(",")
            .map((pair) => pair.trim())
            .filter((pair) => pair.includes("="))
            .map((pair) => {
              const at = pair.indexOf("=")
              return [decodeURIComponent(pair.slice(0, at).trim()), decodeURIComponent(pair.slice(at + 1).trim())]
            })
        )
    )
  )

/** OpenTelemetry, through the standard variables. No endpoint: nothing is exported and spans are not made. */
export const TelemetryConfig = Config.all({
  endpoint: Config.option(httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4318")),
  protocol: Config.literal(
    "http/protobuf",
    "http/json"
  )("OTEL_EXPORTER_OTLP_PROTOCOL").pipe(Config.withDefault("http/protobuf" as const)),
  serviceName: Config.string("OTEL_SERVICE_NAME").pipe(Config.withDefault("project-collaboration-service")),
  traces: exporterSetting("OTEL_TRACES_EXPORTER"),
  /** The standard head samplers; `parentbased_always_on` by default. */
  sampler: Config.literal(
    "always_on",
    "always_off",
    "traceidratio",
    "parentbased_always_on",
    "parentbased_always_off",
    "parentbased_traceidratio"
  )("OTEL_TRACES_SAMPLER").pipe(Config.withDefault("parentbased_always_on" as const)),
  samplerRatio: Config.number("OTEL_TRACES_SAMPLER_ARG").pipe(
    Config.validate({ message: "OTEL_TRACES_SAMPLER_ARG must be from 0 to 1", validation: (n) => n >= 0 && n <= 1 }),
    Config.withDefault(1)
  ),
  /** The standard batch span processor settings (milliseconds and span counts), with defaults sized for a busy server. */
  batch: Config.all({
    scheduleDelay: positiveInteger("OTEL_BSP_SCHEDULE_DELAY", 1000),
    exportTimeout: positiveInteger("OTEL_BSP_EXPORT_TIMEOUT", 30_000),
    maxQueueSize: positiveInteger("OTEL_BSP_MAX_QUEUE_SIZE", 32_768),
    // Unset: no default here; it is derived below from the queue size.
    maxExportBatchSize: Config.option(
      Config.integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").pipe(
        Config.validate({ message: "OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be at least 1", validation: (n) => n >= 1 })
      )
    )
  }).pipe(
    Config.mapOrFail(({ maxExportBatchSize, ...rest }) =>
      Option.match(maxExportBatchSize, {
        // Unset: 4096, or the whole queue when the queue is smaller.
        onNone: () => Either.right({ ...rest, maxExportBatchSize: Math.min(4096, rest.maxQueueSize) }),
        onSome: (size) =>
          size <= rest.maxQueueSize
            ? Either.right({ ...rest, maxExportBatchSize: size })
            : Either.left(
                ConfigError.InvalidData(
                  ["OTEL_BSP_MAX_EXPORT_BATCH_SIZE"],
                  `OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE (they are ${size} and ${rest.maxQueueSize})`
                )
              )
      })
    )
  ),
  metrics: exporterSetting("OTEL_METRICS_EXPORTER"),
  /** The standard metric reader interval (milliseconds): how often the metrics are exported. */
  metricExportInterval: positiveInteger("OTEL_METRIC_EXPORT_INTERVAL", 10_000),
  logs: exporterSetting("OTEL_LOGS_EXPORTER"),
  resourceAttributes: keyValueList("OTEL_RESOURCE_ATTRIBUTES"),
  /** Headers sent with every export (a collector's API key, say); never logged. */
  headers: keyValueList("OTEL_EXPORTER_OTLP_HEADERS")
})
