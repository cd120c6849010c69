/**
 * Teams and their members: the records as the API shows them, and the roles with what each may do.
 */
import { Schema } from "effect"
import { Stored } from "./Ids.js"
import { oneOf } from "./Lists.js"
import { TrimmedName } from "./Payload.js"
import { Timestamp } from "./Time.js"

export const TeamRole = oneOf("owner", "admin", "member")
export type TeamRole = typeof TeamRole.Type

export const TeamName = TrimmedName

/** A team as one of its members sees it: `role` is the caller's own role in it. */
export const Team = Schema.Struct({
  id: Stored.TeamId,
  name: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp,
  role: TeamRole.annotations({ description: "Your role in the team" })
}).annotations({ identifier: "Team" })
export type Team = typeof Team.Type

export const TeamMember = Schema.Struct({
  user_id: Stored.UserId,
  name: Schema.String,
  email: Schema.String,
  avatar_url: Schema.NullOr(Schema.String),
  role: TeamRole,
  joined_at: Timestamp
}).annotations({ identifier: "TeamMember" })
export type TeamMember = typeof TeamMember.Type

/** Owners and admins manage a team; members read it. */
export const manages = (role: TeamRole): boolean => role === "owner" || role === "admin"

/** `member.*` event data. `user_id` is null in `member.invited` when no account has the email yet. */
export const MemberEvent = Schema.Struct({
  team_id: Stored.TeamId,
  user_id: Schema.NullOr(Stored.UserId),
  email: Schema.String,
  role: TeamRole
}).annotations({ identifier: "MemberEvent" })
export type MemberEvent = typeof MemberEvent.Type
