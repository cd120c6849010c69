/**
 * Logs are JSON lines on stdout: `time`, `level`, `message`, and `request_id`, `trace_id`, `span_id` where they
 * exist, then any annotations. `LOG_LEVEL` sets the minimum level.
 */
import {
  Cause,
  Context,
  Effect,
  FiberRef,
  FiberRefs,
  type HashMap,
  Layer,
  List,
  Logger,
  type LogLevel,
  Option,
  Tracer
} from "effect"
import { LogLevelConfig } from "../Config.js"

const render = (value: unknown): unknown => {
  if (value instanceof Error) return { name: value.name, message: value.message }
  return value
}

interface LogRecord {
  readonly annotations: HashMap.HashMap<string, unknown>
  readonly cause: Cause.Cause<unknown>
  readonly context: FiberRefs.FiberRefs
  readonly date: Date
  readonly logLevel: LogLevel.LogLevel
  readonly message: unknown
}

/** The line for one record, with `fields` (if any) after the annotations, as if they were more of them. */
const lineOf = (
  { annotations, cause, context, date, logLevel, message }: LogRecord,
  fields: Readonly<Record<string, unknown>> | undefined
): string => {
  const line: Record<string, unknown> = {
    time: date.toISOString(),
    level: logLevel.label.toLowerCase()
  }
  const parts = Array.isArray(message) ? message : [message]
  const [first, ...rest] = parts
  line.message = typeof first === "string" ? first : JSON.stringify(render(first))
  for (const extra of rest) {
    if (extra !== null && typeof extra === "object" && !(extra instanceof Error) && !Cause.isCause(extra)) {
      Object.assign(line, extra)
    } else if (Cause.isCause(extra)) {
      line.cause = Cause.pretty(extra)
    } else {
      line.detail = render(extra)
    }
  }
  for (const [key, value] of annotations) line[key] = render(value)
  if (fields !== undefined) for (const key in fields) line[key] = render(fields[key])
  const span = List.head(FiberRefs.getOrDefault(context, FiberRef.currentLogSpan))
  if (Option.isSome(span)) line.log_span = span.value.label
  const parent = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), Tracer.ParentSpan)
  // A span made while tracing is off carries no real ids: leave them out rather than log placeholders.
  if (Option.isSome(parent) && /^[0-9a-f]{32}$/.test(parent.value.traceId)) {
    line.trace_id = parent.value.traceId
    line.span_id = parent.value.spanId
  }
  if (!Cause.isEmpty(cause)) line.cause = Cause.pretty(cause, { renderErrorCause: true })
  return `${JSON.stringify(line)}\n`
}

export const jsonLogger = Logger.make((options) => {
  process.stdout.write(lineOf(options, undefined))
})

/** The lines `jsonLogger` writes, given to `write` instead of stdout (tests that run the server in their process). */
export const jsonLoggerTo = (write: (line: string) => void) =>
  Logger.make<unknown, void>((options) => write(lineOf(options, undefined)))

/**
 * What `jsonLogger` writes for `record` with `fields` added to its annotations, without building a new
 * annotation map for them (the access line, once per request: src/Http/RequestWrapper.ts).
 */
export const writeJsonLine = (record: LogRecord, fields: Readonly<Record<string, unknown>>): void => {
  process.stdout.write(lineOf(record, fields))
}

export const LoggingLive = Layer.unwrapEffect(
  Effect.map(Effect.orDie(LogLevelConfig), (level) =>
    Layer.merge(Logger.replace(Logger.defaultLogger, jsonLogger), Logger.minimumLogLevel(level))
  )
)
