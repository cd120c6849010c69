/**
 * While the process drains, new `/v1` work is refused with 503 `unavailable`: health answers for itself, OAuth in
 * its own RFC form.
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect } from "effect"
import { Unavailable } from "../Domain/Errors.js"
import type { Lifecycle } from "./Lifecycle.js"

/** Whether this request is refused because the process is draining. */
export const isDrainRefused = (lifecycle: Lifecycle, request: HttpServerRequest.HttpServerRequest): boolean =>
  lifecycle.unsafe.isDraining() && request.url.startsWith("/v1/")

/** A fresh error per refusal (an error carries the span it failed in). */
export const refusedWhileDraining = Effect.failSync(
  () => new Unavailable({ message: "The server is shutting down; retry shortly" })
)
