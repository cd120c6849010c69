/**
 * While the process drains, new `/v1` work is refused with 503 `unavailable`: health answers for itself, OAuth in
 * its own RFC form.
 */
import { HttpServerRequest } from "@effect/platform"
import { Effect } from "effect"
import { Unavailable } from "../Domain/Errors.js"
import type { Lifecycle } from "./Lifecycle.js"

export const refuseWhileDraining = (lifecycle: Lifecycle) =>
  Effect.flatMap(Effect.zip(lifecycle.isDraining, HttpServerRequest.HttpServerRequest), ([draining, request]) =>
    draining && request.url.startsWith("/v1/")
      ? Effect.fail(new Unavailable({ message: "The server is shutting down; retry shortly" }))
      : Effect.void
  )
