/**
 * Invitations: owners and admins invite by email; the person with that email (any case) accepts or declines.
 * An invitation lasts `INVITATION_TTL` (seven days); one past its expiry is `expired` and can no longer be answered.
 */
import { Duration, Effect, Option } from "effect"
import { TeamsConfig } from "../Config.js"
import { Conflict, NotFound } from "../Domain/Errors.js"
import { makeId } from "../Domain/Ids.js"
import type { Invitation, InvitationStatus } from "../Domain/Invitation.js"
import type { ListQuery } from "../Domain/Lists.js"
import type { Principal } from "../Domain/Principal.js"
import { manages, type TeamRole } from "../Domain/Team.js"
import { nowIso } from "../Domain/Time.js"
import { Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { isUniqueViolation } from "../Sql/Errors.js"
import { untaggedIfMatch } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { Users } from "../Users/Users.js"
import { type InvitationSort, InvitationsRepo, TeamsRepo } from "./Repo.js"
import { needsRole, Teams } from "./Teams.js"

const notAnswerable = (invitation: Invitation) =>
  new Conflict({
    message: `The invitation of ${invitation.email} to team ${invitation.team_name} is ${invitation.status}, no longer pending`
  })

export class Invitations extends Effect.Service<Invitations>()("Invitations", {
  dependencies: [InvitationsRepo.Default, TeamsRepo.Default, Teams.Default, Users.Default, Events.Default],
  effect: Effect.gen(function* () {
    const invitationsRepo = yield* InvitationsRepo
    const repo = orDie(invitationsRepo)
    const teamsRepo = orDie(yield* TeamsRepo)
    const teams = yield* Teams
    const users = yield* Users
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))
    const { invitationTtl } = yield* Effect.orDie(TeamsConfig)

    const find = (id: string) =>
      Effect.flatMap(
        repo.find({ id, now: nowIso() }),
        Option.match({ onNone: () => Effect.fail(NotFound.resource("invitation", id)), onSome: Effect.succeed })
      )

    /** An invitation addressed to the caller; someone else's is 404. */
    const findMine = Effect.fnUntraced(function* (principal: Principal, id: string) {
      const me = yield* users.get(principal.userId)
      const invitation = yield* find(id)
      if (invitation.email !== me.email.toLowerCase()) return yield* NotFound.resource("invitation", id)
      return { me, invitation }
    })

    const create = traced("Invitations.create")(function* (
      principal: Principal,
      teamId: string,
      input: { readonly email: string; readonly role: TeamRole }
    ) {
      yield* teamsRepo.lock({ teamId })
      const mine = yield* teams.roleIn(teamId, principal.userId)
      if (!manages(mine)) return yield* needsRole("Inviting someone", "owner or admin", mine)
      if (input.role === "owner" && mine !== "owner") return yield* needsRole("Inviting an owner", "owner", mine)
      const email = input.email.toLowerCase()
      const teamName = yield* teams.nameOf(teamId)
      if (Option.isSome(yield* teamsRepo.memberByEmail({ teamId, email }))) {
        return yield* new Conflict({ message: `${email} is already a member of team ${teamName}` })
      }
      const now = new Date()
      const at = now.toISOString()
      yield* repo.expireLapsed({ teamId, email, now: at })
      if (Option.isSome(yield* repo.pendingFor({ teamId, email, now: at }))) {
        return yield* new Conflict({ message: `${email} already has a pending invitation to team ${teamName}` })
      }
      const invitation = {
        id: makeId("invitation"),
        team_id: teamId,
        email,
        role: input.role,
        status: "pending" as const,
        invited_by: principal.userId,
        created_at: at,
        expires_at: new Date(now.getTime() + Duration.toMillis(invitationTtl)).toISOString(),
        answered_at: null
      }
      // The repository as it is, for its unique-key clash is the caller's 409.
      yield* invitationsRepo.insert(invitation).pipe(
        Effect.catchTags({
          SqlError: (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: `${email} already has a pending invitation to team ${teamName}` }))
              : Effect.die(error),
          ParseError: Effect.die
        })
      )
      const invitee = yield* repo.userByEmail({ email })
      yield* teams.announce("member.invited", {
        team_id: teamId,
        user_id: Option.getOrNull(Option.map(invitee, (user) => user.id)),
        email,
        role: input.role
      })
      yield* events.record(
        "member.invited",
        { type: "invitation", id: invitation.id },
        { teamId, name: email, user: Option.getOrNull(Option.map(invitee, (user) => user.id)) }
      )
      return yield* find(invitation.id)
    }, transaction)

    const listForTeam = traced("Invitations.listForTeam")(function* (
      principal: Principal,
      teamId: string,
      query: ListQuery<InvitationSort, InvitationStatus>
    ) {
      yield* teams.roleIn(teamId, principal.userId)
      return yield* repo.listForTeam(teamId, query, nowIso())
    })

    /** Revoking a pending invitation; one already answered (or expired) is 409. */
    const revoke = traced("Invitations.revoke")(function* (principal: Principal, teamId: string, invitationId: string) {
      const mine = yield* teams.roleIn(teamId, principal.userId)
      const invitation = yield* find(invitationId)
      if (invitation.team_id !== teamId) return yield* NotFound.resource("invitation", invitationId)
      if (!manages(mine)) return yield* needsRole("Revoking an invitation", "owner or admin", mine)
      // `answered_at` of a revoked invitation is when it was revoked: the team answered it.
      const at = nowIso()
      const closed = yield* repo.close({ id: invitationId, to: "revoked", answeredAt: at, now: at })
      if (Option.isNone(closed)) return yield* notAnswerable(yield* find(invitationId))
      yield* untaggedIfMatch
      yield* events.record(
        "invitation.revoked",
        { type: "invitation", id: invitationId },
        { teamId, name: invitation.email }
      )
    }, transaction)

    /** The invitations addressed to the caller's email: the pending ones unless another status (or `all`) is asked. */
    const listMine = traced("Invitations.listMine")(function* (
      principal: Principal,
      query: ListQuery<InvitationSort, InvitationStatus | "all">
    ) {
      const me = yield* users.get(principal.userId)
      return yield* repo.listAddressedTo(me.email, query.status ?? "pending", query, nowIso())
    })

    /** The invitee becomes a member with the invitation's role (`member.joined`); answers the member record. */
    const accept = traced("Invitations.accept")(function* (principal: Principal, invitationId: string) {
      const { invitation } = yield* findMine(principal, invitationId)
      if (invitation.status !== "pending") return yield* notAnswerable(invitation)
      yield* teamsRepo.lock({ teamId: invitation.team_id })
      const at = nowIso()
      const closed = yield* repo.close({ id: invitationId, to: "accepted", answeredAt: at, now: at })
      if (Option.isNone(closed)) return yield* notAnswerable(yield* find(invitationId))
      return yield* teams.join(invitation.team_id, principal.userId, invitation.role)
    }, transaction)

    const decline = traced("Invitations.decline")(function* (principal: Principal, invitationId: string) {
      const { invitation } = yield* findMine(principal, invitationId)
      if (invitation.status !== "pending") return yield* notAnswerable(invitation)
      const at = nowIso()
      const closed = yield* repo.close({ id: invitationId, to: "declined", answeredAt: at, now: at })
      if (Option.isSome(closed)) {
        yield* events.record(
          "invitation.declined",
          { type: "invitation", id: invitationId },
          { teamId: invitation.team_id, user: principal.userId, name: invitation.email }
        )
      }
      return yield* Option.match(closed, {
        onNone: () => Effect.flatMap(find(invitationId), (now) => Effect.fail(notAnswerable(now))),
        onSome: () => find(invitationId)
      })
    }, transaction)

    return { create, listForTeam, revoke, listMine, accept, decline } as const
  })
}) {}
