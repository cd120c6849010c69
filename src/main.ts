/**
 * Launch: logging, storage (migrated), the domain services, and the HTTP server.
 */

import * as BunRuntime from "@effect/platform-bun/BunRuntime"
import { Effect, Layer } from "effect"
import { ApiKeys } from "./ApiKeys/ApiKeys.js"
import { Audit } from "./Audit/Audit.js"
import { SigningKeys } from "./Auth/Jwt.js"
import { SignIn } from "./Auth/SignIn.js"
import { Deployments } from "./Deployments/Deployments.js"
import { EventFeed } from "./Events/Feed.js"
import { DeliveryInbox } from "./Events/Inbox.js"
import { HttpLive } from "./Http.js"
import { OAuthAuthorizations } from "./OAuth/Authorizations.js"
import { OAuthClients } from "./OAuth/Clients.js"
import { OAuthGrants } from "./OAuth/Grants.js"
import { OAuthLimits } from "./OAuth/Limits.js"
import { OAuthTokens } from "./OAuth/Tokens.js"
import { LoggingLive } from "./Observability/Logging.js"
import { TelemetryLive, tracingEnabled } from "./Observability/Telemetry.js"
import { Projects } from "./Projects/Projects.js"
import { RateLimitLive } from "./RateLimit/RateLimit.js"
import { Retention, RetentionSweeperLive } from "./Retention/Retention.js"
import { Sessions } from "./Sessions/Sessions.js"
import { WalCheckpointerLive } from "./Sql/Checkpointer.js"
import { SqlLive } from "./Sql/Client.js"
import { Invitations } from "./Teams/Invitations.js"
import { Teams } from "./Teams/Teams.js"
import { Users } from "./Users/Users.js"
import { DeliveryWorker } from "./Webhooks/Delivery/Worker.js"
import { WebhooksRepo } from "./Webhooks/Repo.js"
import { Webhooks } from "./Webhooks/Webhooks.js"

export const ServicesLive = Layer.mergeAll(
  Projects.Default,
  Teams.Default,
  Invitations.Default,
  Deployments.Default,
  EventFeed.Default,
  Audit.Default,
  Users.Default,
  ApiKeys.Default,
  OAuthClients.Default,
  OAuthAuthorizations.Default,
  OAuthTokens.Default,
  OAuthGrants.Default,
  OAuthLimits.Default,
  SigningKeys.Default,
  SignIn.Default,
  Sessions.Default,
  Webhooks.Default,
  DeliveryWorker.pipe(Layer.provide([WebhooksRepo.Default, DeliveryInbox.Default])),
  WalCheckpointerLive,
  RetentionSweeperLive.pipe(Layer.provide(Retention.Default))
).pipe(Layer.provideMerge(RateLimitLive), Layer.provideMerge(SqlLive))

export const MainLive = HttpLive.pipe(Layer.provide(ServicesLive))

/**
 * The service, logging through `logging` (JSON lines on stdout for the service itself). The telemetry exporter is
 * built first and released last, so it flushes what the shutdown itself traced.
 */
export const programWith = <E>(logging: Layer.Layer<never, E>) =>
  Effect.flatMap(tracingEnabled, (enabled) =>
    Layer.launch(MainLive).pipe(
      Effect.withTracerEnabled(enabled),
      Effect.provide(TelemetryLive),
      Effect.provide(logging)
    )
  )

export const program = programWith(LoggingLive)

if (import.meta.main) {
  BunRuntime.runMain(program, { disablePrettyLogger: true })
}
