/**
 * OpenTelemetry export (traces, metrics, logs) over OTLP/HTTP, configured by the standard variables. With no
 * `OTEL_EXPORTER_OTLP_ENDPOINT` nothing is exported and the tracer is switched off, so spans cost nothing.
 * `OTEL_{TRACES,METRICS,LOGS}_EXPORTER=none` turns one signal off (Jaeger, for one, takes only traces).
 */
import { FetchHttpClient } from "@effect/platform"
import { OtlpLogger, OtlpMetrics, OtlpSerialization, OtlpTracer } from "@effect/opentelemetry"
import { Effect, Layer, Option } from "effect"
import { TelemetryConfig } from "../Config.js"
import pkg from "../../package.json" with { type: "json" }
import * as FastProtobuf from "./OtlpProtobuf.js"

export const TelemetryLive = Layer.unwrapEffect(
  Effect.map(Effect.orDie(TelemetryConfig), (config) =>
    Option.match(config.endpoint, {
      onNone: () => Layer.empty,
      onSome: (endpoint) => {
        const base = endpoint.toString().replace(/\/$/, "")
        const common = {
          resource: { serviceName: config.serviceName, serviceVersion: pkg.version, attributes: config.resourceAttributes },
          shutdownTimeout: "5 seconds"
        } as const
        return Layer.mergeAll(
          config.traces ? OtlpTracer.layer({ ...common, url: `${base}/v1/traces`, exportInterval: "1 second" }) : Layer.empty,
          config.metrics ? OtlpMetrics.layer({ ...common, url: `${base}/v1/metrics`, exportInterval: "10 seconds" }) : Layer.empty,
          config.logs ? OtlpLogger.layer({ ...common, url: `${base}/v1/logs`, exportInterval: "1 second" }) : Layer.empty
        ).pipe(
          Layer.provide(config.protocol === "http/json" ? OtlpSerialization.layerJson : FastProtobuf.layerProtobuf),
          Layer.provide(FetchHttpClient.layer)
        )
      }
    }))
)

/** Whether spans are made at all: only when they go somewhere. */
export const tracingEnabled = Effect.map(
  Effect.orDie(TelemetryConfig),
  (config) => Option.isSome(config.endpoint) && config.traces
)
