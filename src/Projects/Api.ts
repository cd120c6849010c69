import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { List, Success } from "../Contract/Envelope.js"
import { withBodyErrors, withParamErrors } from "../Contract/Errors.js"
import { IdempotencyKeyHeader } from "../Contract/Idempotency.js"
import { listParams } from "../Contract/ListParams.js"
import { strictBody } from "../Contract/Payload.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { ProjectId } from "../Domain/Ids.js"
import { NewProject, Project, ProjectPatch } from "../Domain/Project.js"

export const CreateProject = strictBody(NewProject.fields, "CreateProject", {
  example: { name: "Website", description: "The public site", visibility: "private" }
})
export const UpdateProject = strictBody(ProjectPatch.fields, "UpdateProject", {
  nonEmpty: true,
  example: { name: "Website", description: "The public site, rebuilt" }
})

export const ProjectListParams = listParams({
  sort: ["created_at", "updated_at", "name"],
  status: ["active", "archived"]
})

const id = HttpApiSchema.param("id", ProjectId)

export class ProjectsApi extends HttpApiGroup.make("projects")
  .annotate(OpenApi.Description, "Projects: private, a team's, or public")
  .add(
    HttpApiEndpoint.get("list", "/projects")
      .setUrlParams(ProjectListParams)
      .addSuccess(List(Project))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read", "projects:read"])
      .annotate(OpenApi.Summary, "List the projects you own and those of your teams")
  )
  .add(
    HttpApiEndpoint.post("create", "/projects")
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateProject)
      .addSuccess(Success(Project), { status: 201 })
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, ["write", "projects:write"])
      .annotate(OpenApi.Summary, "Create a project")
  )
  .add(
    HttpApiEndpoint.get("get")`/projects/${id}`
      .addSuccess(Success(Project))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read", "projects:read"])
      .annotate(OpenApi.Summary, "Read a project")
  )
  .add(
    HttpApiEndpoint.put("update")`/projects/${id}`
      .setPayload(UpdateProject)
      .addSuccess(Success(Project))
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, ["write", "projects:write"])
      .annotate(OpenApi.Summary, "Change a project's name, description, visibility or status")
  )
  .add(
    HttpApiEndpoint.del("delete")`/projects/${id}`
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["write", "projects:write"])
      .annotate(OpenApi.Summary, "Delete a project, for good")
  )
  .middleware(Authentication) {}
