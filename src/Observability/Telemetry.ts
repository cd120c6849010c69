/**
 * OpenTelemetry export (traces, metrics, logs) over OTLP/HTTP, configured by the standard variables. With no
 * `OTEL_EXPORTER_OTLP_ENDPOINT` nothing is exported and the tracer is switched off, so spans cost nothing.
 */
import { FetchHttpClient } from "@effect/platform"
import { Otlp } from "@effect/opentelemetry"
import { Effect, Layer, Option } from "effect"
import { TelemetryConfig } from "../Config.js"
import pkg from "../../package.json" with { type: "json" }

export const TelemetryLive = Layer.unwrapEffect(
  Effect.map(Effect.orDie(TelemetryConfig), (config) =>
    Option.match(config.endpoint, {
      onNone: () => Layer.empty,
      onSome: (endpoint) => {
        const options = {
          baseUrl: endpoint.toString().replace(/\/$/, ""),
          resource: {
            serviceName: config.serviceName,
            serviceVersion: pkg.version,
            attributes: config.resourceAttributes
          },
          tracerExportInterval: "1 second",
          metricsExportInterval: "10 seconds",
          loggerExportInterval: "1 second",
          shutdownTimeout: "5 seconds"
        } as const
        return (config.protocol === "http/json" ? Otlp.layerJson(options) : Otlp.layerProtobuf(options)).pipe(
          Layer.provide(FetchHttpClient.layer)
        )
      }
    }))
)

/** Whether spans are made at all: only when they go somewhere. */
export const tracingEnabled = Effect.map(Effect.orDie(TelemetryConfig), (config) => Option.isSome(config.endpoint))
