import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { List, Success } from "../Contract/Envelope.js"
import { withBodyErrors, withParamErrors } from "../Contract/Errors.js"
import { IdempotencyKeyHeader } from "../Contract/Idempotency.js"
import { listParams, listParamsNoStatus } from "../Contract/ListParams.js"
import { strictBody } from "../Contract/Payload.js"
import { Authentication, RequiredScopes } from "../Contract/Security.js"
import { ApiErrors } from "../Domain/Errors.js"
import { InvitationId, TeamId, UserId } from "../Domain/Ids.js"
import { Invitation, InviteeEmail, invitationStatuses } from "../Domain/Invitation.js"
import { oneOf } from "../Domain/Lists.js"
import { optional } from "../Domain/Payload.js"
import { Team, TeamMember, TeamName, TeamRole } from "../Domain/Team.js"

// The records live in Domain; re-exported for the CLI, which reads the role schema from here.
export { Team, TeamMember, TeamRole }

export const TeamListParams = listParamsNoStatus({ sort: ["created_at", "updated_at", "name"] })
/** Members sort by when they joined (the default) or by name. */
export const MemberListParams = listParamsNoStatus({ sort: ["joined_at", "name"] })
export const InvitationListParams = listParams({ sort: ["created_at"], status: invitationStatuses })
/**
 * The caller's own invitations: `pending` ones unless `status` says otherwise (so a client that never sends it sees
 * what it always saw), `all` for every status — GitHub's `state=open|closed|all` habit.
 */
export const MyInvitationListParams = Schema.Struct({
  ...listParamsNoStatus({ sort: ["created_at"] }).fields,
  status: optional(
    oneOf(...invitationStatuses, "all").annotations({
      description: "Which invitations: `pending` (the default), `accepted`, `declined`, `revoked`, `expired` or `all`"
    })
  )
})

export const CreateTeam = strictBody({ name: TeamName }, "CreateTeam", { example: { name: "Platform" } })
export const UpdateTeam = strictBody({ name: TeamName }, "UpdateTeam", { example: { name: "Platform team" } })
export const UpdateMember = strictBody({ role: TeamRole }, "UpdateMember", { example: { role: "admin" } })
export const CreateInvitation = strictBody({ email: InviteeEmail, role: TeamRole }, "CreateInvitation", {
  example: { email: "grace@example.com", role: "member" }
})

const teamId = HttpApiSchema.param("team_id", TeamId)
const userId = HttpApiSchema.param("user_id", UserId)
const invitationId = HttpApiSchema.param("invitation_id", InvitationId)

const READ = ["read", "team:manage"] as const
const MANAGE = ["team:manage"] as const

/** Teams, their members and their invitations. A non-member gets 404 for the team and everything under it. */
export class TeamsApi extends HttpApiGroup.make("teams")
  .annotate(OpenApi.Description, "Teams, their members and roles, and the invitations they send")
  .add(
    HttpApiEndpoint.get("list", "/teams")
      .setUrlParams(TeamListParams)
      .addSuccess(List(Team))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, READ)
      .annotate(OpenApi.Summary, "List the teams you belong to, with your role in each")
  )
  .add(
    HttpApiEndpoint.post("create", "/teams")
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateTeam)
      .addSuccess(Success(Team), { status: 201 })
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, MANAGE)
      .annotate(OpenApi.Summary, "Create a team; you become its owner")
  )
  .add(
    HttpApiEndpoint.get("get")`/teams/${teamId}`
      .addSuccess(Success(Team))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, READ)
      .annotate(OpenApi.Summary, "Read a team (members only), with your role in it")
  )
  .add(
    HttpApiEndpoint.put("update")`/teams/${teamId}`
      .setPayload(UpdateTeam)
      .addSuccess(Success(Team))
      .pipe(withBodyErrors)
      .annotate(RequiredScopes, MANAGE)
      .annotate(OpenApi.Summary, "Rename a team (owners and admins)")
  )
  .add(
    HttpApiEndpoint.del("delete")`/teams/${teamId}`
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(withParamErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, MANAGE)
      .annotate(OpenApi.Summary, "Delete a team (owners); 409 while projects still belong to it")
  )
  .add(
    HttpApiEndpoint.get("members")`/teams/${teamId}/members`
      .setUrlParams(MemberListParams)
      .addSuccess(List(TeamMember))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, READ)
      .annotate(OpenApi.Summary, "List a team's members (members of the team only)")
  )
  .add(
    HttpApiEndpoint.put("updateMember")`/teams/${teamId}/members/${userId}`
      .setPayload(UpdateMember)
      .addSuccess(Success(TeamMember))
      .pipe(withBodyErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, MANAGE)
      .annotate(
        OpenApi.Summary,
        "Change a member's role (owners: any role; admins: between member and admin); the last owner stays (409)"
      )
  )
  .add(
    HttpApiEndpoint.del("removeMember")`/teams/${teamId}/members/${userId}`
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(withParamErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, MANAGE)
      .annotate(
        OpenApi.Summary,
        "Remove a member (owners; admins, not an owner), or leave with your own user id; emits member.removed"
      )
  )
  .add(
    HttpApiEndpoint.post("invite")`/teams/${teamId}/invitations`
      .setHeaders(IdempotencyKeyHeader)
      .setPayload(CreateInvitation)
      .addSuccess(Success(Invitation), { status: 201 })
      .pipe(withBodyErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, MANAGE)
      .annotate(
        OpenApi.Summary,
        "Invite someone by email (owners and admins; only an owner invites an owner); emits member.invited"
      )
  )
  .add(
    HttpApiEndpoint.get("invitations")`/teams/${teamId}/invitations`
      .setUrlParams(InvitationListParams)
      .addSuccess(List(Invitation))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, READ)
      .annotate(OpenApi.Summary, "List a team's invitations (members of the team only)")
  )
  .add(
    HttpApiEndpoint.del("revokeInvitation")`/teams/${teamId}/invitations/${invitationId}`
      .addSuccess(HttpApiSchema.NoContent)
      .pipe(withParamErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, MANAGE)
      .annotate(OpenApi.Summary, "Revoke a pending invitation (owners and admins); 409 once it is answered or expired")
  )
  .middleware(Authentication) {}

/** The caller's own invitations: those addressed to their email. */
export class InvitationsApi extends HttpApiGroup.make("invitations")
  .annotate(OpenApi.Description, "Invitations addressed to you: list, accept or decline")
  .add(
    HttpApiEndpoint.get("list", "/invitations")
      .setUrlParams(MyInvitationListParams)
      .addSuccess(List(Invitation))
      .pipe(withParamErrors)
      .annotate(RequiredScopes, ["read"])
      .annotate(
        OpenApi.Summary,
        "List the invitations addressed to your email: the pending ones, or those of another `status` (`all` for every one)"
      )
  )
  .add(
    HttpApiEndpoint.post("accept")`/invitations/${invitationId}/accept`
      .setHeaders(IdempotencyKeyHeader)
      .addSuccess(Success(TeamMember))
      .pipe(withParamErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, ["write", "team:manage"])
      .annotate(OpenApi.Summary, "Accept an invitation addressed to you: you join the team; emits member.joined")
  )
  .add(
    HttpApiEndpoint.post("decline")`/invitations/${invitationId}/decline`
      .setHeaders(IdempotencyKeyHeader)
      .addSuccess(Success(Invitation))
      .pipe(withParamErrors)
      .addError(ApiErrors.Conflict)
      .annotate(RequiredScopes, ["write", "team:manage"])
      .annotate(OpenApi.Summary, "Decline an invitation addressed to you")
  )
  .middleware(Authentication) {}
