/**
 * Invitations to join a team. `expired` is never written by an answer: a pending invitation whose `expires_at`
 * has passed reads as `expired` (and the store marks it so when a new invitation to the same email is made).
 */
import { Schema } from "effect"
import { Stored } from "./Ids.js"
import { oneOf } from "./Lists.js"
import { trimmedWith } from "./Payload.js"
import { TeamRole } from "./Team.js"
import { Timestamp } from "./Time.js"

export const invitationStatuses = ["pending", "accepted", "declined", "revoked", "expired"] as const
export const InvitationStatus = oneOf(...invitationStatuses)
export type InvitationStatus = typeof InvitationStatus.Type

export const Invitation = Schema.Struct({
  id: Stored.InvitationId,
  team_id: Stored.TeamId,
  email: Schema.String,
  role: TeamRole,
  status: InvitationStatus,
  invited_by: Stored.UserId,
  created_at: Timestamp,
  expires_at: Timestamp,
  answered_at: Schema.NullOr(Timestamp),
  /** The team's and the inviter's names: an invitee, who cannot read the team, sees what and who invited them. */
  team_name: Schema.String,
  invited_by_name: Schema.String
}).annotations({ identifier: "Invitation" })
export type Invitation = typeof Invitation.Type

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

/** An email address as invitations store it: trimmed and lower-cased, at most 254 characters. */
export const InviteeEmail = trimmedWith(
  {
    description: "An email address, at most 254 characters (surrounding spaces trimmed, stored lower-cased)",
    jsonSchema: { minLength: 3, maxLength: 254, format: "email" }
  },
  Schema.Trim.pipe(
    Schema.filter((value) => (EMAIL.test(value) && value.length <= 254) || "must be an email address"),
    Schema.transform(Schema.String, { strict: true, decode: (value) => value.toLowerCase(), encode: (value) => value })
  )
)
