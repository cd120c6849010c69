/**
 * The spans our tracer makes. A span records as little as it can while it is open (ids, times, attribute pairs)
 * and is handed to the exporter when it ends, which encodes it at once: nothing of it outlives the request.
 * Keeping ended spans as objects until the next export made the garbage collector's work grow with the request
 * rate (bench/README.md). See `Tracer.ts` for why this tracer is ours.
 */
import { Cause, type Context, type Exit, type Option, type Tracer } from "effect"

/** OTLP `Span.SpanKind`. */
export const spanKind: Record<Tracer.SpanKind, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }

const words = new Uint32Array(4096)
let wordsAt = words.length

/** 32 random bits, drawn from a pool `crypto.getRandomValues` refills. */
const random32 = (): number => {
  if (wordsAt === words.length) {
    crypto.getRandomValues(words)
    wordsAt = 0
  }
  return words[wordsAt++]!
}

const hex8 = (word: number): string => word.toString(16).padStart(8, "0")

/** The 32-bit words of a hex id (a remote parent's, from `traceparent`). */
const wordsOf = (hex: string, count: number): Array<number> =>
  Array.from({ length: count }, (_, i) => parseInt(hex.slice(i * 8, i * 8 + 8), 16) >>> 0)

export type SpanEvent = readonly [name: string, time: bigint, attributes: Record<string, unknown> | undefined]

/**
 * Ids are kept as 32-bit words (trace `t0`–`t3`, span `s0`–`s1`, parent span `p0`–`p1`): the encoder writes them as
 * bytes, a child copies its parent's, and the hex strings Effect's interface asks for are made only when read
 * (a log line, a `traceparent`). Building and re-parsing hex for every span showed in profiles.
 */
export class OtlpSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly sampled = true
  readonly t0: number
  readonly t1: number
  readonly t2: number
  readonly t3: number
  readonly s0: number
  readonly s1: number
  readonly p0: number = 0
  readonly p1: number = 0
  private hexTraceId: string | undefined = undefined
  private hexSpanId: string | undefined = undefined
  /** Attributes as `key, value, key, value, …`: a span has a handful, and a Map per span showed in profiles. */
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
    if (parent._tag === "Some") {
      const of = parent.value
      if (of instanceof OtlpSpan) {
        this.t0 = of.t0
        this.t1 = of.t1
        this.t2 = of.t2
        this.t3 = of.t3
        this.p0 = of.s0
        this.p1 = of.s1
      } else {
        ;[this.t0, this.t1, this.t2, this.t3] = wordsOf(of.traceId, 4) as [number, number, number, number]
        ;[this.p0, this.p1] = wordsOf(of.spanId, 2) as [number, number]
        this.hexTraceId = of.traceId
      }
    } else {
      do {
        this.t0 = random32()
        this.t1 = random32()
        this.t2 = random32()
        this.t3 = random32()
      } while ((this.t0 | this.t1 | this.t2 | this.t3) === 0) // all zeros is invalid (W3C trace context)
    }
    do {
      this.s0 = random32()
      this.s1 = random32()
    } while ((this.s0 | this.s1) === 0)
    this.links = links
    this.status = { _tag: "Started", startTime }
  }

  get traceId(): string {
    return this.hexTraceId ??= hex8(this.t0) + hex8(this.t1) + hex8(this.t2) + hex8(this.t3)
  }

  get spanId(): string {
    return this.hexSpanId ??= hex8(this.s0) + hex8(this.s1)
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
    ;(this.events ??= []).push([name, startTime, attributes])
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
export const StatusCode = { Unset: 0, Ok: 1, Error: 2 } as const

export interface Outcome {
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
    exception: first === undefined ? undefined : {
      "exception.type": first.name,
      "exception.message": first.message,
      "exception.stacktrace": Cause.pretty(exit.cause, { renderErrorCause: true })
    }
  }
}
