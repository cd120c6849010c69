/**
 * The contract: one HttpApi, the single source of routes, schemas, statuses, errors and security. The OpenAPI
 * document and the typed client both come from it.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { ApiKeysApi } from "./ApiKeys/Api.js"
import { DeploymentsApi } from "./Deployments/Api.js"
import { ApiErrors } from "./Domain/Errors.js"
import { ProjectsApi } from "./Projects/Api.js"
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
    item !== null && typeof item === "object" && "$ref" in item &&
    item.$ref === "#/components/schemas/HttpApiDecodeError"
  const result = strip(spec)
  return result !== null && typeof result === "object" && !Array.isArray(result) ? { ...result } : spec
}

export class Api extends HttpApi.make("api")
  .add(ProjectsApi)
  .add(UsersApi)
  .add(TeamsApi)
  .add(InvitationsApi)
  .add(DeploymentsApi)
  .add(ApiKeysApi)
  .add(WebhooksApi)
  .addError(ApiErrors.BadRequest)
  .addError(ApiErrors.Unauthorized)
  .addError(ApiErrors.Forbidden)
  .addError(ApiErrors.NotFound)
  .addError(ApiErrors.Conflict)
  .addError(ApiErrors.ValidationFailed)
  .addError(ApiErrors.MethodNotAllowed)
  .addError(ApiErrors.PayloadTooLarge)
  .addError(ApiErrors.UnsupportedMediaType)
  .addError(ApiErrors.RateLimited)
  .addError(ApiErrors.InternalError)
  .addError(ApiErrors.Unavailable)
  .prefix("/v1")
  .annotate(OpenApi.Title, "Project Collaboration Service")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(
    OpenApi.Description,
    "Projects and their deployments, users, teams and invitations, API keys and webhooks. Every response wears an envelope: `{data, meta}` on success, " +
      "`{data: [...], meta: {total, page, per_page}}` for lists, `{error: {code, message, status, request_id}}` on failure."
  )
  .annotate(OpenApi.Transform, withoutFrameworkDecodeError)
{}
