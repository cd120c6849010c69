/**
 * The spans our tracer makes. A span records as little as it can while it is open (ids, times, attribute pairs)
 * and is handed to the exporter when it ends, which encodes it at once: nothing of it outlives the request.
 * Ended spans are not kept as objects until the next export, which would make the garbage collector's work grow
 * with the request rate. See `Tracer.ts` for why this tracer is ours.
 */
import { Cause, type Context, type Exit, type Option, type Tracer } from "effect"

/** OTLP `Span.SpanKind`. */
export const spanKind: Record<Tracer.SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"))
const pool = new Uint8Array(16 * 1024)
let poolAt = pool.length

/** A random id of `bytes` bytes as lower-case hex, never all zeros (W3C trace context calls that invalid). */
const randomId = (bytes: number): string => {
  for (;;) {
    if (poolAt + bytes > pool.length) {
      crypto.getRandomValues(pool)
      poolAt = 0
    }
    let id = ""
    let zero = true
    for (let i = 0; i < bytes; i++) {
      const byte = pool[poolAt++] ?? 0
      if (byte !== 0) zero = false
      id += HEX[byte]
    }
    if (!zero) return id
  }
}

type SpanEvent = readonly [name: string, time: bigint, attributes: Record<string, unknown> | undefined]

export class OtlpSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = true
  readonly traceId: string
  readonly spanId: string
  /** Attributes as `key, value, key, value, …`: a span has a handful, too few to be worth a Map per span. */
  readonly pairs: Array<unknown> = []
  links: ReadonlyArray<Tracer.SpanLink>
  events: Array<SpanEvent> | undefined = undefined
  status: Tracer.SpanStatus

  constructor(
    readonly name: string,
    readonly parent: Option.Option<Tracer.AnySpan>,
    readonly context: Context.Context<never>,
    links: ReadonlyArray<Tracer.SpanLink>,
    startTime: bigint,
    readonly kind: Tracer.SpanKind,
    private readonly onEnd: (span: EndedSpan) => void
  ) {
    this.traceId = parent._tag === "Some" ? parent.value.traceId : randomId(16)
    this.spanId = randomId(8)
    this.links = links
    this.status = { _tag: "Started", startTime }
  }

  get attributes(): ReadonlyMap<string, unknown> {
    const map = new Map<string, unknown>()
    for (let i = 0; i < this.pairs.length; i += 2) map.set(this.pairs[i] as string, this.pairs[i + 1])
    return map
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Ended") return
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
    this.onEnd(this as EndedSpan)
  }

  attribute(key: string, value: unknown): void {
    const pairs = this.pairs
    for (let i = 0; i < pairs.length; i += 2) {
      if (pairs[i] === key) {
        pairs[i + 1] = value
        return
      }
    }
    pairs.push(key, value)
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    this.events ??= []
    this.events.push([name, startTime, attributes])
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    this.links = [...this.links, ...links]
  }
}

/** A span whose `end` has run: what the exporter receives. */
export interface EndedSpan extends OtlpSpan {
  readonly status: Extract<Tracer.SpanStatus, { _tag: "Ended" }>
}

/** OTLP status codes. */
const StatusCode = { Unset: 0, Ok: 1, Error: 2 } as const

interface Outcome {
  readonly code: number
  readonly message: string | undefined
  /** Attributes the outcome adds to the span, as `key, value, …`. */
  readonly pairs: ReadonlyArray<unknown>
  /** The `exception` event of a failed span (OpenTelemetry semantic conventions). */
  readonly exception: Record<string, string> | undefined
}

const succeeded: Outcome = { code: StatusCode.Ok, message: undefined, pairs: [], exception: undefined }
const interrupted: Outcome = {
  code: StatusCode.Ok,
  message: undefined,
  pairs: ["span.label", "⚠︎ Interrupted", "status.interrupted", true],
  exception: undefined
}

/** Status and exception of an ended span: Ok on success or interruption alone, Error with the first error otherwise. */
export const outcomeOf = (span: EndedSpan): Outcome => {
  const exit = span.status.exit
  if (exit._tag === "Success") return succeeded
  if (Cause.isInterruptedOnly(exit.cause)) return interrupted
  const first = Cause.prettyErrors(exit.cause)[0]
  return {
    code: StatusCode.Error,
    message: first?.message,
    pairs: [],
    exception:
      first === undefined
        ? undefined
        : {
            "exception.type": first.name,
            "exception.message": first.message,
            "exception.stacktrace": Cause.pretty(exit.cause, { renderErrorCause: true })
          }
  }
}
