import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { List, Success } from "../Contract/Envelope.js"
import { withBodyErrors, withParamErrors } from "../Contract/Errors.js"
import { IdempotencyKeyHeader } from "../Contract/Idempotency.js"
import { listParams } from "../Contract/ListParams.js"
import { strictBody } from "../Contract/Payload.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import {
  Deployment,
  DeploymentDescription,
  DeploymentStatus,
  deploymentStatuses,
  Environment,
  Ref
} from "../Domain/Deployment.js"
import { ApiErrors } from "../Domain/Errors.js"
import { DeploymentId, ProjectId } from "../Domain/Ids.js"
import { optional } from "../Domain/Payload.js"

export const CreateDeployment = strictBody(
  {
    environment: Schema.optionalWith(Environment, { default: () => "production", exact: true }),
    ref: Ref,
    description: Schema.optionalWith(DeploymentDescription, { default: () => "", exact: true })
  },
  "CreateDeployment",
  { example: { environment: "production", ref: "main" } }
)

export const UpdateDeployment = strictBody(
  {
    status: DeploymentStatus.annotations({
      description: "`succeeded` or `failed`: a running deployment finishes, once"
    }),
    description: optional(DeploymentDescription)
  },
  "UpdateDeployment",
  { example: { status: "succeeded" } }
)

const base = listParams({ sort: ["created_at", "updated_at"], status: deploymentStatuses })
export const DeploymentListParams = Schema.Struct({ ...base.fields, environment: optional(Environment) })

const id = HttpApiSchema.param("id", ProjectId)
const deploymentId = HttpApiSchema.param("deployment_id", DeploymentId)

/** Deployments of a project: whoever can change the project can deploy it. */
export class DeploymentsApi extends HttpApiGroup.make("deployments")
  .annotate(OpenApi.Description, "Deployments of a project: started, then finished once (succeeded or failed)")
  .add(
    HttpApiEndpoint.get("list")`/projects/${id}/deployments`
      .setUrlParams(DeploymentListParams)
      .addSuccess(List(Deployment))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read", "projects:read"])
      .annotate(OpenApi.Summary, "List a project's deployments (filters: status, environment)")
  )
  .add(
    HttpApiEndpoint.post("create")`/projects/${id}/deployments`
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateDeployment)
      .addSuccess(Success(Deployment), { status: 201 })
      .pipe(withBodyErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, ["write", "projects:write"])
      .annotate(
        OpenApi.Summary,
        "Start a deployment (status running); emits deployment.started; 409 for an archived project"
      )
  )
  .add(
    HttpApiEndpoint.get("get")`/projects/${id}/deployments/${deploymentId}`
      .addSuccess(Success(Deployment))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read", "projects:read"])
      .annotate(OpenApi.Summary, "Read a deployment")
  )
  .add(
    HttpApiEndpoint.put("update")`/projects/${id}/deployments/${deploymentId}`
      .setPayload(UpdateDeployment)
      .addSuccess(Success(Deployment))
      .pipe(withBodyErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, ["write", "projects:write"])
      .annotate(
        OpenApi.Summary,
        "Finish a running deployment, once: succeeded (deployment.completed) or failed (deployment.failed); " +
          "any other change is 409"
      )
  )
  .middleware(Authentication) {}
