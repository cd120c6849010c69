// engine-independent: no database
/**
 * Telemetry settings that cannot work stop start-up with a message naming the setting: each on the server in this
 * process (the same start-up code `main` runs), and the first as a process too (it exits, saying why).
 */
import { expect, test } from "bun:test"
import { startupFailureInProcess } from "../support/in-process.ts"
import { startupFailure } from "../support/server.ts"

const refused: ReadonlyArray<readonly [Record<string, string>, string]> = [
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
]

test.each(refused)(
  "%o stops start-up with a message naming the setting",
  async (env, message) => {
    const error = await startupFailureInProcess({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", ...env })
    expect(error).toBeInstanceOf(Error)
    expect(String(error)).toContain("stopped before listening")
    expect(String(error)).toContain(message)
  },
  60_000
)

test("a process given the first of them exits, naming the setting", async () => {
  const [env, message] = refused[0]!
  const error = await startupFailure({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9", ...env })
  expect(error).toBeInstanceOf(Error)
  expect(String(error)).toContain("exited")
  expect(String(error)).toContain(message)
}, 60_000)
