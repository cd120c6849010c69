/**
 * Teams and their members. Owners and admins manage a team, members read it; a non-member is told the team does
 * not exist. A team always keeps an owner. Membership changes are written with their `member.*` event in one
 * transaction (the outbox).
 */
import { Effect, Option, Schema } from "effect"
import { type AuditAction, changesOf } from "../Domain/Audit.js"
import { Conflict, Forbidden, NotFound, ValidationFailed } from "../Domain/Errors.js"
import type { EventType } from "../Domain/EventTypes.js"
import { makeId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import type { Principal } from "../Domain/Principal.js"
import { type MemberEvent, manages, Team, TeamName, type TeamRole } from "../Domain/Team.js"
import { nowIso } from "../Domain/Time.js"
import { type AuditOptions, Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { isUniqueViolation } from "../Sql/Errors.js"
import { checkIfMatch, readForWrite, untaggedIfMatch } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { Users } from "../Users/Users.js"
import { type MemberSort, type TeamSort, TeamsRepo } from "./Repo.js"

/** 403 naming the role an action needs and the caller's own. */
export const needsRole = (action: string, needed: "owner" | "owner or admin", has: TeamRole) =>
  new Forbidden({
    message: `${action} needs the ${needed} role in this team; you are ${has === "admin" ? "an" : "a"} ${has}`
  })

export class Teams extends Effect.Service<Teams>()("Teams", {
  dependencies: [TeamsRepo.Default, Users.Default, Events.Default],
  effect: Effect.gen(function* () {
    const teamsRepo = yield* TeamsRepo
    const repo = orDie(teamsRepo)
    const users = yield* Users
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))

    /** A team's name, for messages that name it (its id only if it is gone). */
    const nameOf = (teamId: string) =>
      Effect.map(repo.exists({ teamId }), Option.match({ onNone: () => teamId, onSome: (team) => team.name }))

    const lastOwner = (teamId: string) =>
      Effect.flatMap(nameOf(teamId), (name) =>
        Effect.fail(
          new Conflict({ message: `Team ${name} must keep at least one owner; make someone else owner first` })
        )
      )

    /** The caller's role in a team; 404 for the team when they are not a member (it is not theirs to see). */
    const roleIn = (teamId: string, userId: string) =>
      Effect.flatMap(
        repo.roleOf({ teamId, userId }),
        Option.match({
          onNone: () => Effect.fail(NotFound.resource("team", teamId)),
          onSome: (row) => Effect.succeed(row.role)
        })
      )

    const teamFor = (teamId: string, userId: string) =>
      Effect.flatMap(
        repo.findFor({ teamId, userId }),
        Option.match({ onNone: () => Effect.fail(NotFound.resource("team", teamId)), onSome: Effect.succeed })
      )

    const memberOf = (teamId: string, userId: string) =>
      Effect.flatMap(
        repo.member({ teamId, userId }),
        Option.match({
          onNone: () =>
            Effect.flatMap(nameOf(teamId), (name) =>
              Effect.fail(new NotFound({ message: `No member ${userId} in team ${name}` }))
            ),
          onSome: Effect.succeed
        })
      )

    /**
     * A `member.*` event to the team's owners and admins (as they are once the change is made) and to `alsoTo`
     * (the user who joined or left). Runs inside the change's transaction.
     */
    const announce = (type: EventType, data: MemberEvent, alsoTo: ReadonlyArray<string> = []) =>
      Effect.flatMap(repo.managersOf(data.team_id), (managers) =>
        events.emit(type, Array.from(new Set([...managers, ...alsoTo])), data)
      )

    /** The audit record of a change to a team's membership, in the team's log and the member's own. */
    const auditMember = (
      action: AuditAction,
      teamId: string,
      member: { readonly user_id: string; readonly name: string },
      changes?: AuditOptions["changes"]
    ) =>
      events.record(
        action,
        { type: "user", id: member.user_id },
        { teamId, user: member.user_id, name: member.name, changes }
      )

    /** The audit record of a change to the team itself. */
    const auditTeam = (action: AuditAction, teamId: string, name: string, changes?: AuditOptions["changes"]) =>
      events.record(action, { type: "team", id: teamId }, { teamId, name, changes })

    /** A new team with `ownerId` as its owner (the API's caller, or the CLI's `--owner`). */
    const create = traced("Teams.create")(function* (input: { readonly name: string; readonly ownerId: string }) {
      const name = yield* Schema.decodeUnknown(TeamName)(input.name).pipe(
        Effect.mapError(() => ValidationFailed.field("name", "must be 1 to 100 characters"))
      )
      const owner = yield* users.get(input.ownerId)
      const now = nowIso()
      const id = makeId("team")
      yield* Effect.zipRight(
        repo.insert({ id, org_id: owner.org_id, name, created_at: now, updated_at: now }),
        repo.addMember({ team_id: id, user_id: owner.id, role: "owner", joined_at: now })
      ).pipe(Effect.zipRight(auditTeam("team.created", id, name)), transaction)
      const team: Team = { id, name, created_at: now, updated_at: now, role: "owner" }
      return team
    })

    const get = traced("Teams.get")(function* (principal: Principal, teamId: string) {
      return yield* teamFor(teamId, principal.userId)
    })

    const rename = traced("Teams.rename")(function* (principal: Principal, teamId: string, name: string) {
      const role = yield* roleIn(teamId, principal.userId)
      if (!manages(role)) return yield* needsRole("Renaming a team", "owner or admin", role)
      const before = yield* readForWrite(Team, "teams", teamId, teamFor(teamId, principal.userId))
      yield* repo.rename({ teamId, name, at: nowIso() })
      const after = yield* teamFor(teamId, principal.userId)
      yield* auditTeam("team.renamed", teamId, after.name, changesOf(before, after, ["name"]))
      return after
    }, transaction)

    const remove = traced("Teams.remove")(function* (principal: Principal, teamId: string) {
      const role = yield* roleIn(teamId, principal.userId)
      if (role !== "owner") return yield* needsRole("Deleting a team", "owner", role)
      yield* checkIfMatch(Team, "teams", teamId, teamFor(teamId, principal.userId))
      yield* repo.lock({ teamId })
      const projects = yield* repo.projectCount(teamId)
      if (projects > 0) {
        return yield* new Conflict({
          message:
            `Team ${yield* nameOf(teamId)} still has ${projects} project${projects === 1 ? "" : "s"}; ` +
            "delete them or move them out first"
        })
      }
      const name = yield* nameOf(teamId)
      yield* repo.remove({ teamId })
      yield* auditTeam("team.deleted", teamId, name)
    }, transaction)

    const listMine = traced("Teams.listMine")(function* (principal: Principal, query: ListQuery<TeamSort>) {
      return yield* repo.listFor(principal.userId, query)
    })

    const members = traced("Teams.members")(function* (
      principal: Principal,
      teamId: string,
      query: ListQuery<MemberSort>
    ) {
      yield* roleIn(teamId, principal.userId)
      return yield* repo.listMembers(teamId, query)
    })

    /** Owners change any role; admins only move people between `member` and `admin`. */
    const setRole = traced("Teams.setRole")(function* (
      principal: Principal,
      teamId: string,
      userId: string,
      role: TeamRole
    ) {
      yield* repo.lock({ teamId })
      const mine = yield* roleIn(teamId, principal.userId)
      if (!manages(mine)) return yield* needsRole("Changing a member's role", "owner or admin", mine)
      const current = yield* memberOf(teamId, userId)
      if (mine === "admin" && (current.role === "owner" || role === "owner")) {
        return yield* needsRole("Making or unmaking an owner", "owner", mine)
      }
      yield* untaggedIfMatch
      if (current.role === role) return current
      yield* repo.setRole({ teamId, userId, role })
      if (current.role === "owner" && (yield* repo.ownerCount(teamId)) === 0) return yield* lastOwner(teamId)
      const after = yield* memberOf(teamId, userId)
      yield* auditMember("member.role_changed", teamId, after, changesOf(current, after, ["role"]))
      return after
    }, transaction)

    /** Removing someone (owners: anyone; admins: not an owner), or leaving (anyone, for themself). */
    const removeMember = traced("Teams.removeMember")(function* (principal: Principal, teamId: string, userId: string) {
      yield* repo.lock({ teamId })
      const mine = yield* roleIn(teamId, principal.userId)
      const leaving = userId === principal.userId
      if (!leaving && !manages(mine)) return yield* needsRole("Removing a member", "owner or admin", mine)
      const current = yield* memberOf(teamId, userId)
      if (!leaving && mine === "admin" && current.role === "owner") {
        return yield* needsRole("Removing an owner", "owner", mine)
      }
      yield* untaggedIfMatch
      yield* repo.removeMember({ teamId, userId })
      if (current.role === "owner" && (yield* repo.ownerCount(teamId)) === 0) return yield* lastOwner(teamId)
      yield* announce(
        "member.removed",
        { team_id: teamId, user_id: userId, email: current.email, role: current.role },
        [userId]
      )
      yield* auditMember("member.removed", teamId, current)
    }, transaction)

    /**
     * Makes a user a member and announces `member.joined`, inside the caller's transaction (an accepted invitation,
     * or the CLI's `teams add-member`). 409 when they already are one.
     */
    const join = traced("Teams.join")(function* (teamId: string, userId: string, role: TeamRole) {
      // Named before the insert: on PostgreSQL nothing more can be read in a transaction once a statement failed.
      const user = yield* Effect.orElseSucceed(users.get(userId), () => ({ name: userId }))
      const already = new Conflict({ message: `${user.name} is already a member of team ${yield* nameOf(teamId)}` })
      // The repository as it is, for its unique-key clash is the caller's 409.
      yield* teamsRepo.addMember({ team_id: teamId, user_id: userId, role, joined_at: nowIso() }).pipe(
        Effect.catchTags({
          SqlError: (error) => (isUniqueViolation(error) ? Effect.fail(already) : Effect.die(error)),
          ParseError: Effect.die
        })
      )
      const member = yield* memberOf(teamId, userId)
      yield* announce("member.joined", { team_id: teamId, user_id: userId, email: member.email, role }, [userId])
      yield* auditMember("member.joined", teamId, member)
      return member
    })

    /** `cli teams add-member`: an operator adds someone directly. */
    const addMember = traced("Teams.addMember")(function* (input: {
      readonly teamId: string
      readonly userId: string
      readonly role: TeamRole
    }) {
      if (Option.isNone(yield* repo.exists({ teamId: input.teamId }))) {
        return yield* NotFound.resource("team", input.teamId)
      }
      yield* users.get(input.userId)
      return yield* Effect.gen(function* () {
        yield* repo.lock({ teamId: input.teamId })
        return yield* join(input.teamId, input.userId, input.role)
      }).pipe(transaction)
    })

    /** A caller's role in a team; none when they are not a member. */
    const roleOf = (teamId: string, userId: string) =>
      Effect.map(
        repo.roleOf({ teamId, userId }),
        Option.map((row) => row.role)
      )

    const managersOf = (teamId: string) => repo.managersOf(teamId)

    /** Every team, oldest first, with its number of members and its first owner (the CLI's `teams list`). */
    const listAll = traced("Teams.listAll")(function* () {
      const rows = yield* repo.listAll()
      return rows.map(({ owner_email, owner_id, ...team }) => ({
        ...team,
        owner: owner_id === null || owner_email === null ? null : { id: owner_id, email: owner_email }
      }))
    })

    return {
      listAll,
      create,
      get,
      rename,
      remove,
      listMine,
      members,
      setRole,
      removeMember,
      addMember,
      join,
      announce,
      roleIn,
      roleOf,
      managersOf,
      nameOf
    } as const
  })
}) {}
