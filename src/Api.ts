/**
 * The contract: one HttpApi, the single source of routes, schemas, statuses, errors and security. The OpenAPI
 * document and the typed client both come from it. Errors are declared where they can happen: API-wide here,
 * 401/403/429 by the `Authentication` middleware, the rest per endpoint (see src/Contract/Errors.ts).
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
import { ApiKeysApi } from "./ApiKeys/Api.js"
import { AuditApi } from "./Audit/Api.js"
import { DeploymentsApi } from "./Deployments/Api.js"
import { ApiErrors } from "./Domain/Errors.js"
import { EventsApi } from "./Events/Api.js"
import { EventTypesApi } from "./EventTypes/Api.js"
import { AuthorizationsApi, OAuthClientsApi } from "./OAuth/Api.js"
import { ProjectsApi } from "./Projects/Api.js"
import { SessionsApi } from "./Sessions/Api.js"
import { InvitationsApi, TeamsApi } from "./Teams/Api.js"
import { UsersApi } from "./Users/Api.js"
import { WebhooksApi } from "./Webhooks/Api.js"

/**
 * `HttpApi.make` declares the framework's own `HttpApiDecodeError`; our middleware turns every decode failure
 * into `validation_failed`, so the published document must not show it.
 */
const withoutFrameworkDecodeError = (spec: Record<string, unknown>): Record<string, unknown> => {
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) {
      return node.filter((item) => !isDecodeErrorRef(item)).map(strip)
    }
    if (node !== null && typeof node === "object") {
      const out: Record<string, unknown> = {}
      for (const [key, value] of Object.entries(node)) {
        if (key === "HttpApiDecodeError") continue
        const stripped = strip(value)
        // A union left with one member is that member.
        if ((key === "anyOf" || key === "oneOf") && Array.isArray(stripped) && stripped.length === 1) {
          Object.assign(out, stripped[0])
          continue
        }
        out[key] = stripped
      }
      return out
    }
    return node
  }
  const isDecodeErrorRef = (item: unknown) =>
    item !== null &&
    typeof item === "object" &&
    "$ref" in item &&
    item.$ref === "#/components/schemas/HttpApiDecodeError"
  /** A response whose only schema was the framework's decode error (an endpoint without a body or parameters). */
  const onlyDecodeError = (response: unknown) =>
    response !== null &&
    typeof response === "object" &&
    "content" in response &&
    response.content !== null &&
    typeof response.content === "object" &&
    Object.values(response.content).every(
      (media: unknown) =>
        media !== null && typeof media === "object" && "schema" in media && isDecodeErrorRef(media.schema)
    )
  const withoutDecodeOnlyResponses = (paths: unknown) => {
    if (paths === null || typeof paths !== "object") return
    for (const operations of Object.values(paths)) {
      if (operations === null || typeof operations !== "object") continue
      for (const operation of Object.values(operations)) {
        if (operation === null || typeof operation !== "object" || !("responses" in operation)) continue
        const responses = operation.responses
        if (responses === null || typeof responses !== "object") continue
        for (const [status, response] of Object.entries(responses)) {
          if (onlyDecodeError(response)) Reflect.deleteProperty(responses, status)
        }
      }
    }
  }
  withoutDecodeOnlyResponses(spec.paths)
  const result = strip(spec)
  return result !== null && typeof result === "object" && !Array.isArray(result) ? { ...result } : spec
}

// Each group's tag carries a readable name (what /docs shows as section names); its description is the group's own.
export class Api extends HttpApi.make("api")
  .add(ProjectsApi.annotate(OpenApi.Title, "Projects"))
  .add(UsersApi.annotate(OpenApi.Title, "Your profile"))
  .add(TeamsApi.annotate(OpenApi.Title, "Teams"))
  .add(InvitationsApi.annotate(OpenApi.Title, "Invitations"))
  .add(DeploymentsApi.annotate(OpenApi.Title, "Deployments"))
  .add(ApiKeysApi.annotate(OpenApi.Title, "API keys"))
  .add(WebhooksApi.annotate(OpenApi.Title, "Webhooks"))
  .add(EventsApi.annotate(OpenApi.Title, "Events"))
  .add(EventTypesApi.annotate(OpenApi.Title, "Event types"))
  .add(OAuthClientsApi.annotate(OpenApi.Title, "OAuth clients"))
  .add(AuthorizationsApi.annotate(OpenApi.Title, "Authorized apps"))
  .add(SessionsApi.annotate(OpenApi.Title, "Sessions"))
  .add(AuditApi.annotate(OpenApi.Title, "Audit logs"))
  // What any `/v1` request can get, whatever its route; the rest is declared per endpoint (src/Contract/Errors.ts)
  // and by the `Authentication` middleware (401, 403, 429).
  .addError(ApiErrors.NotFound)
  .addError(ApiErrors.MethodNotAllowed)
  .addError(ApiErrors.InternalError)
  .addError(ApiErrors.Unavailable)
  // A `POST` with `Idempotency-Key` (src/Idempotency/Http.ts); declared API-wide so the server encodes them, and
  // left on the `POST` operations only in the published document (src/Http/OpenApi.ts).
  .addError(ApiErrors.IdempotencyKeyInUse)
  .addError(ApiErrors.IdempotencyKeyReused)
  // `If-Match` on a `PUT` or `DELETE` (src/Sql/Preconditions.ts); left on those operations only in the published
  // document (src/Http/OpenApi.ts).
  .addError(ApiErrors.PreconditionFailed)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Project Collaboration Service")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(
    OpenApi.Description,
    "Projects and their deployments, users, teams and invitations, API keys, webhooks, and OAuth applications and the access you gave them. Every response wears an envelope: `{data, meta}` on success, " +
      "`{data: [...], meta: {total, page, per_page}}` for lists, `{error: {code, message, status, request_id}}` on failure."
  )
  .annotate(OpenApi.Transform, withoutFrameworkDecodeError) {}

/**
 * The same API with every error declared API-wide: the type of what the API-level middleware (src/Http/ApiMiddleware.ts)
 * may fail with. The platform types that middleware by the API-level errors alone, but it answers for every route
 * (body checks, 405 and the per-IP limit before routing; framework failures translated after), and the server
 * encodes an error declared anywhere. Neither served nor documented: only for `HttpApiBuilder.middleware(…)`
 * (which uses its API argument for typing only) and the route table built from `groups`.
 */
export const ApiForMiddleware = Api.addError(ApiErrors.BadRequest)
  .addError(ApiErrors.Unauthorized)
  .addError(ApiErrors.Forbidden)
  .addError(ApiErrors.Conflict)
  .addError(ApiErrors.CursorExpired)
  .addError(ApiErrors.ValidationFailed)
  .addError(ApiErrors.PayloadTooLarge)
  .addError(ApiErrors.UnsupportedMediaType)
  .addError(ApiErrors.RateLimited)
