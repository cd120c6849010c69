import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { Principal } from "../Domain/Principal.js"
import { Conflict, NotFound, ValidationFailed } from "../Domain/Errors.js"
import { makeId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import { nowIso } from "../Domain/Time.js"
import { isUniqueViolation } from "../Sql/Errors.js"
import { Users } from "../Users/Users.js"
import type { TeamRole } from "./Api.js"
import { TeamsRepo } from "./Repo.js"

export class Teams extends Effect.Service<Teams>()("Teams", {
  dependencies: [TeamsRepo.Default, Users.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* TeamsRepo
    const users = yield* Users

    /** A team in its owner's organisation, with the owner as its first member. */
    const create = Effect.fn("Teams.create", { captureStackTrace: false })(function*(input: { readonly name: string; readonly ownerId: string }) {
      const name = input.name.trim()
      if (name.length < 1 || name.length > 100) return yield* ValidationFailed.field("name", "must be 1 to 100 characters")
      const owner = yield* users.get(input.ownerId)
      const team = { id: makeId("team"), org_id: owner.org_id, name, created_at: nowIso() }
      yield* Effect.zipRight(
        repo.insert(team),
        repo.addMember({ team_id: team.id, user_id: owner.id, role: "owner", joined_at: team.created_at })
      ).pipe(sql.withTransaction, Effect.orDie)
      return { id: team.id, name: team.name, created_at: team.created_at }
    })

    const addMember = Effect.fn("Teams.addMember", { captureStackTrace: false })(
      function*(input: { readonly teamId: string; readonly userId: string; readonly role: TeamRole }) {
        const team = yield* Effect.orDie(repo.findById(input.teamId))
        if (Option.isNone(team)) return yield* NotFound.resource("team", input.teamId)
        yield* users.get(input.userId)
        yield* repo.addMember({
          team_id: input.teamId,
          user_id: input.userId,
          role: input.role,
          joined_at: nowIso()
        }).pipe(
          Effect.catchTag("SqlError", (error) =>
            isUniqueViolation(error)
              ? Effect.fail(new Conflict({ message: `User ${input.userId} is already a member of ${input.teamId}` }))
              : Effect.die(error))
        )
        const member = yield* Effect.orDie(repo.member(input.teamId, input.userId))
        return yield* Option.match(member, {
          onNone: () => Effect.dieMessage("member vanished after insert"),
          onSome: Effect.succeed
        })
      }
    )

    const listMine = Effect.fn("Teams.list", { captureStackTrace: false })(function*(principal: Principal, query: ListQuery<"created_at" | "name">) {
      return yield* Effect.orDie(repo.listForUser(principal.userId, query))
    })

    /** A caller's role in a team; none when they are not a member (and then the team is not theirs to see). */
    const roleOf = (teamId: string, userId: string) => Effect.orDie(repo.roleOf(teamId, userId))

    const members = Effect.fn("Teams.members", { captureStackTrace: false })(
      function*(principal: Principal, teamId: string, query: ListQuery<"joined_at" | "name">) {
        const role = yield* roleOf(teamId, principal.userId)
        if (Option.isNone(role)) return yield* NotFound.resource("team", teamId)
        return yield* Effect.orDie(repo.listMembers(teamId, query))
      }
    )

    const managersOf = (teamId: string) => Effect.orDie(repo.managersOf(teamId))

    return { create, addMember, listMine, members, roleOf, managersOf } as const
  })
}) {}
