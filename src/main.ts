/**
 * Launch: logging, storage (migrated), the domain services, and the HTTP server.
 */
import { BunRuntime } from "@effect/platform-bun"
import { Effect, Layer } from "effect"
import { ApiKeys } from "./ApiKeys/ApiKeys.js"
import { HttpLive } from "./Http.js"
import { LoggingLive } from "./Observability/Logging.js"
import { Projects } from "./Projects/Projects.js"
import { SqlLive } from "./Sql/Client.js"
import { Teams } from "./Teams/Teams.js"
import { Users } from "./Users/Users.js"
import { DeliveryDoorbell } from "./Events/Events.js"
import { DeliveryWorker } from "./Webhooks/Delivery/Worker.js"
import { WebhooksRepo } from "./Webhooks/Repo.js"
import { Webhooks } from "./Webhooks/Webhooks.js"

export const ServicesLive = Layer.mergeAll(
  Projects.Default,
  Teams.Default,
  Users.Default,
  ApiKeys.Default,
  Webhooks.Default,
  DeliveryWorker.pipe(Layer.provide([WebhooksRepo.Default, DeliveryDoorbell.Default]))
).pipe(
  Layer.provideMerge(SqlLive)
)

export const MainLive = HttpLive.pipe(Layer.provide(ServicesLive))

if (import.meta.main) {
  BunRuntime.runMain(Layer.launch(MainLive).pipe(Effect.provide(LoggingLive)), { disablePrettyLogger: true })
}
