/**
 * OpenTelemetry export (traces, metrics, logs) over OTLP/HTTP, configured by the standard variables. With no
 * `OTEL_EXPORTER_OTLP_ENDPOINT` nothing is exported and the tracer is switched off, so spans cost nothing.
 * `OTEL_{TRACES,METRICS,LOGS}_EXPORTER=none` turns one signal off (Jaeger, for one, takes only traces).
 * Traces go through our tracer (`Tracer.ts`); metrics and logs through @effect/opentelemetry.
 */

import * as OtlpLogger from "@effect/opentelemetry/OtlpLogger"
import * as OtlpMetrics from "@effect/opentelemetry/OtlpMetrics"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { Duration, Effect, Layer, Option } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { TelemetryConfig } from "../Config.js"
import * as OtlpTracer from "./Tracer.js"

export const TelemetryLive = Layer.unwrapEffect(
  Effect.map(Effect.orDie(TelemetryConfig), (config) =>
    Option.match(config.endpoint, {
      onNone: () => Layer.empty,
      onSome: (endpoint) => {
        const base = endpoint.toString().replace(/\/$/, "")
        const resource = {
          serviceName: config.serviceName,
          serviceVersion: pkg.version,
          attributes: config.resourceAttributes
        }
        const shutdownTimeout = "5 seconds"
        const headers = config.headers
        return Layer.mergeAll(
          config.traces
            ? OtlpTracer.layer({
                url: `${base}/v1/traces`,
                protocol: config.protocol,
                resource,
                headers,
                scheduleDelay: Duration.millis(config.batch.scheduleDelay),
                exportTimeout: Duration.millis(config.batch.exportTimeout),
                maxQueueSize: config.batch.maxQueueSize,
                maxExportBatchSize: config.batch.maxExportBatchSize,
                shutdownTimeout
              })
            : Layer.empty,
          config.metrics
            ? OtlpMetrics.layer({
                url: `${base}/v1/metrics`,
                resource,
                headers,
                exportInterval: Duration.millis(config.metricExportInterval),
                shutdownTimeout
              })
            : Layer.empty,
          config.logs
            ? OtlpLogger.layer({
                url: `${base}/v1/logs`,
                resource,
                headers,
                exportInterval: "1 second",
                shutdownTimeout
              })
            : Layer.empty
        ).pipe(
          Layer.provide(
            config.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf
          ),
          Layer.provide(FetchHttpClient.layer)
        )
      }
    })
  )
)

/** Whether spans are made at all: only when they go somewhere. */
export const tracingEnabled = Effect.map(
  Effect.orDie(TelemetryConfig),
  (config) => Option.isSome(config.endpoint) && config.traces
)
