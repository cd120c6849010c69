/** Telemetry settings that cannot work stop start-up with a message naming the setting. */
import { expect, test } from "bun:test"
import { startupFailure } from "../support/server.ts"

test.each([
  [
    { OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "5000", OTEL_BSP_MAX_QUEUE_SIZE: "100" },
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE must not exceed OTEL_BSP_MAX_QUEUE_SIZE (they are 5000 and 100)"
  ],
  [{ OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "0" }, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE must be at least 1"],
  [{ OTEL_BSP_SCHEDULE_DELAY: "0" }, "OTEL_BSP_SCHEDULE_DELAY must be an integer of at least 1"],
  [{ OTEL_BSP_EXPORT_TIMEOUT: "soon" }, "OTEL_BSP_EXPORT_TIMEOUT"],
  [{ OTEL_METRIC_EXPORT_INTERVAL: "0" }, "OTEL_METRIC_EXPORT_INTERVAL must be an integer of at least 1"],
  [{ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, "OTEL_EXPORTER_OTLP_PROTOCOL"],
  [{ OTEL_TRACES_SAMPLER_ARG: "2" }, "OTEL_TRACES_SAMPLER_ARG must be from 0 to 1"],
  [{ OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" }, "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL"],
  [
    { OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://collector:4317" },
    "OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL"
  ]
])(
  "%o stops start-up with a message naming the setting",
  async (env, message) => {
    const error = await startupFailure({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", ...env })
    expect(error).toBeInstanceOf(Error)
    expect(String(error)).toContain("exited")
    expect(String(error)).toContain(message)
  },
  25_000
)
