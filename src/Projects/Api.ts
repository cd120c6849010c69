import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Authentication } from "../Auth/Api.js"
import { RequiredScopes } from "../Auth/Principal.js"
import { List, Success } from "../Domain/Envelope.js"
import { ProjectId, TeamId, UserId } from "../Domain/Ids.js"
import { listParams, oneOf } from "../Domain/Lists.js"
import { optional, strictBody, TrimmedName } from "../Domain/Payload.js"
import { Timestamp } from "../Domain/Time.js"

export const Visibility = oneOf("private", "team", "public")
export const ProjectStatus = oneOf("active", "archived")

export const Project = Schema.Struct({
  id: ProjectId,
  name: Schema.String,
  description: Schema.String,
  visibility: Visibility,
  status: ProjectStatus,
  owner_id: UserId,
  team_id: Schema.NullOr(TeamId),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Project" })
export type Project = typeof Project.Type

const Name = TrimmedName
const Description = Schema.String.pipe(Schema.maxLength(2000, { message: () => "must be at most 2000 characters" }))

export const CreateProject = strictBody({
  name: Name,
  description: optional(Description),
  visibility: optional(Visibility),
  team_id: optional(TeamId)
}, "CreateProject")
export type CreateProject = typeof CreateProject.Type

export const UpdateProject = strictBody({
  name: optional(Name),
  description: optional(Description),
  visibility: optional(Visibility),
  status: optional(ProjectStatus)
}, "UpdateProject", { nonEmpty: true })
export type UpdateProject = typeof UpdateProject.Type

export const ProjectListParams = listParams({
  sort: ["created_at", "updated_at", "name"],
  status: ["active", "archived"]
})

const id = HttpApiSchema.param("id", ProjectId)

export class ProjectsApi extends HttpApiGroup.make("projects")
  .add(
    HttpApiEndpoint.get("list", "/projects")
      .setUrlParams(ProjectListParams)
      .addSuccess(List(Project))
      .annotate(RequiredScopes, ["read", "projects:read"])
      .annotate(OpenApi.Summary, "List the projects you own and those of your teams")
  )
  .add(
    HttpApiEndpoint.post("create", "/projects")
      .setPayload(CreateProject)
      .addSuccess(Success(Project), { status: 201 })
      .annotate(RequiredScopes, ["write", "projects:write"])
      .annotate(OpenApi.Summary, "Create a project")
  )
  .add(
    HttpApiEndpoint.get("get")`/projects/${id}`
      .addSuccess(Success(Project))
      .annotate(RequiredScopes, ["read", "projects:read"])
      .annotate(OpenApi.Summary, "Read a project")
  )
  .add(
    HttpApiEndpoint.put("update")`/projects/${id}`
      .setPayload(UpdateProject)
      .addSuccess(Success(Project))
      .annotate(RequiredScopes, ["write", "projects:write"])
      .annotate(OpenApi.Summary, "Change a project's name, description, visibility or status")
  )
  .add(
    HttpApiEndpoint.del("delete")`/projects/${id}`
      .addSuccess(HttpApiSchema.NoContent)
      .annotate(RequiredScopes, ["write", "projects:write"])
      .annotate(OpenApi.Summary, "Delete a project, for good")
  )
  .middleware(Authentication)
{}
