import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { List } from "../Contract/Envelope.js"
import { listParamsNoStatus } from "../Contract/ListParams.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { TeamId, UserId } from "../Domain/Ids.js"
import { oneOf } from "../Domain/Lists.js"
import { Timestamp } from "../Domain/Time.js"

export const TeamRole = oneOf("owner", "admin", "member")
export type TeamRole = typeof TeamRole.Type

export const Team = Schema.Struct({
  id: TeamId,
  name: Schema.String,
  created_at: Timestamp
}).annotations({ identifier: "Team" })
export type Team = typeof Team.Type

export const TeamMember = Schema.Struct({
  user_id: UserId,
  name: Schema.String,
  email: Schema.String,
  avatar_url: Schema.NullOr(Schema.String),
  role: TeamRole,
  joined_at: Timestamp
}).annotations({ identifier: "TeamMember" })
export type TeamMember = typeof TeamMember.Type

export const TeamListParams = listParamsNoStatus({ sort: ["created_at", "name"] })
/** Members sort by when they joined (the default) or by name. */
export const MemberListParams = listParamsNoStatus({ sort: ["joined_at", "name"] })

export class TeamsApi extends HttpApiGroup.make("teams")
  .add(
    HttpApiEndpoint.get("list", "/teams")
      .setUrlParams(TeamListParams)
      .addSuccess(List(Team))
      .annotate(RequiredScopes, ["read"])
      .annotate(OpenApi.Summary, "List the teams you belong to")
  )
  .add(
    HttpApiEndpoint.get("members")`/teams/${HttpApiSchema.param("team_id", TeamId)}/members`
      .setUrlParams(MemberListParams)
      .addSuccess(List(TeamMember))
      .annotate(RequiredScopes, ["read", "team:manage"])
      .annotate(OpenApi.Summary, "List a team's members (members of the team only)")
  )
  .middleware(Authentication)
{}
