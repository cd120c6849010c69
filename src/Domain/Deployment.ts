/**
 * Deployments of a project. One starts `running` and finishes once, `succeeded` or `failed`.
 */
import { Schema } from "effect"
import { Stored } from "./Ids.js"
import { oneOf } from "./Lists.js"
import { trimmedWith } from "./Payload.js"
import { Timestamp } from "./Time.js"

export const deploymentStatuses = ["running", "succeeded", "failed"] as const
export const DeploymentStatus = oneOf(...deploymentStatuses)
export type DeploymentStatus = typeof DeploymentStatus.Type

/** 1–64 characters of `[a-z0-9_.-]`: `production`, `staging`, `review-42`, … */
export const Environment = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9_.-]{1,64}$/, { message: () => "must be 1 to 64 characters of a-z, 0-9, _, . and -" })
).annotations({ examples: ["production", "staging"] })

/** A commit, tag or branch: 1–200 characters (surrounding blanks dropped). */
export const Ref = trimmedWith(
  {
    description: "A commit, tag or branch: 1 to 200 characters once surrounding spaces are trimmed",
    jsonSchema: {
      minLength: 1,
      maxLength: 200,
      examples: ["main", "v1.4.2", "9fceb02d0ae598e95dc970b74767f19372d61af8"]
    }
  },
  Schema.Trim.pipe(
    Schema.minLength(1, { message: () => "must not be empty" }),
    Schema.maxLength(200, { message: () => "must be at most 200 characters" })
  )
)

export const DeploymentDescription = Schema.String.pipe(
  Schema.maxLength(2000, { message: () => "must be at most 2000 characters" })
)

export const Deployment = Schema.Struct({
  id: Stored.DeploymentId,
  project_id: Stored.ProjectId,
  environment: Schema.String,
  ref: Schema.String,
  description: Schema.String,
  status: DeploymentStatus,
  created_by: Stored.UserId,
  created_at: Timestamp,
  updated_at: Timestamp,
  finished_at: Schema.NullOr(Timestamp)
}).annotations({ identifier: "Deployment" })
export type Deployment = typeof Deployment.Type
