/** A project: the record services take and return, the row repositories decode, and its field rules. */
import { Schema } from "effect"
import { Stored, TeamId } from "./Ids.js"
import { oneOf } from "./Lists.js"
import { optional, TrimmedName } from "./Payload.js"
import { Timestamp } from "./Time.js"

export const Visibility = oneOf("private", "team", "public")
export type Visibility = typeof Visibility.Type
export const ProjectStatus = oneOf("active", "archived")
export type ProjectStatus = typeof ProjectStatus.Type

export const Project = Schema.Struct({
  id: Stored.ProjectId,
  name: Schema.String,
  description: Schema.String,
  visibility: Visibility,
  status: ProjectStatus,
  owner_id: Stored.UserId,
  team_id: Schema.NullOr(Stored.TeamId),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Project" })
export type Project = typeof Project.Type

/**
 * The team a project is shared with: its `team_id` when it is `team`-visible, else none (a project of any other
 * visibility is its owner's alone, whatever team it names). Who hears of its events and which team's audit log
 * holds its records both follow it.
 */
export const sharedTeam = (project: Pick<Project, "visibility" | "team_id">): Project["team_id"] =>
  project.visibility === "team" ? project.team_id : null

export const ProjectName = TrimmedName
export const ProjectDescription = Schema.String.pipe(
  Schema.maxLength(2000, { message: () => "must be at most 2000 characters" })
)

export type ProjectSort = "created_at" | "updated_at" | "name"

/** What creating a project takes (the body of `POST /v1/projects`). */
export const NewProject = Schema.Struct({
  name: ProjectName,
  description: optional(ProjectDescription),
  visibility: optional(Visibility),
  team_id: optional(TeamId)
})
export type NewProject = typeof NewProject.Type

/** What may change in a project (the body of `PUT /v1/projects/:id`). */
export const ProjectPatch = Schema.Struct({
  name: optional(ProjectName),
  description: optional(ProjectDescription),
  visibility: optional(Visibility),
  status: optional(ProjectStatus)
})
export type ProjectPatch = typeof ProjectPatch.Type
