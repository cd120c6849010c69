/**
 * The delivery recorder the worker runs (src/Webhooks/Delivery/Worker.ts): the fast one when `FAST_PATHS`
 * (src/Config.ts) names `delivery-recorder` (the default, `all`, does), its idiomatic twin otherwise. The interface
 * (src/Webhooks/Recorder.ts) knows neither implementation; this module alone chooses between them.
 */
import { Effect, Layer } from "effect"
import { FastPathsConfig } from "../Config.js"
import { FastRecorderLive } from "./RecorderFast.js"
import { IdiomaticRecorderLive } from "./RecorderIdiomatic.js"

export const DeliveryRecorderLive = Layer.unwrapEffect(
  Effect.map(Effect.orDie(FastPathsConfig), (fast) =>
    fast.has("delivery-recorder") ? FastRecorderLive : IdiomaticRecorderLive
  )
)
