/**
 * The delivery recorder the worker runs (src/Webhooks/Delivery/Worker.ts): on PostgreSQL the fast one when
 * `FAST_PATHS` (src/Config.ts) names `delivery-recorder` (the default, `all`, does), its idiomatic twin otherwise;
 * on SQLite always the twin, where the fast one earned nothing (bench/README.md, "Fast paths"). The interface
 * (src/Webhooks/Recorder.ts) knows neither implementation; this module alone chooses between them.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import { FastPathsConfig } from "../Config.js"
import { FastRecorderLive } from "./RecorderFast.js"
import { IdiomaticRecorderLive } from "./RecorderIdiomatic.js"

export const DeliveryRecorderLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const fast = yield* Effect.orDie(FastPathsConfig)
    const sql = yield* SqlClient.SqlClient
    const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    return pg && fast.has("delivery-recorder") ? FastRecorderLive : IdiomaticRecorderLive
  })
)
