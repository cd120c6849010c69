/**
 * Head sampling of request traces, by the standard `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`. A request
 * that is not sampled runs with the tracer off, so it makes no spans at all: sampling is how an operator trades
 * trace coverage for the cost of tracing.
 */
import { Effect, Option, type Tracer } from "effect"
import { TelemetryConfig } from "../Config.js"

export class TraceSampler extends Effect.Service<TraceSampler>()("TraceSampler", {
  effect: Effect.map(Effect.orDie(TelemetryConfig), ({ sampler, samplerRatio }) => {
    const root = (): boolean => {
      switch (sampler) {
        case "always_on":
        case "parentbased_always_on":
          return true
        case "always_off":
        case "parentbased_always_off":
          return false
        default:
          return samplerRatio >= 1 || Math.random() < samplerRatio
      }
    }
    const parentBased = sampler.startsWith("parentbased_")
    /** Whether a request with this incoming parent (if any) is traced. */
    const shouldSample = (parent: Option.Option<Tracer.ExternalSpan>): boolean =>
      parentBased && Option.isSome(parent) ? parent.value.sampled : root()
    return { shouldSample } as const
  })
}) {}
