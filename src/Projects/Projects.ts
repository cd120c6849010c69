import { Effect, Option } from "effect"
import { type AuditAction, changesOf } from "../Domain/Audit.js"
import { Forbidden, NotFound, ValidationFailed } from "../Domain/Errors.js"
import type { EventType } from "../Domain/EventTypes.js"
import { makeId, ProjectId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import type { Principal } from "../Domain/Principal.js"
import {
  type NewProject,
  Project,
  type ProjectPatch,
  type ProjectSort,
  type ProjectStatus,
  sharedTeam
} from "../Domain/Project.js"
import { nowIso, nowOrLater } from "../Domain/Time.js"
import { type AuditOptions, Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { readForWrite } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { Teams } from "../Teams/Teams.js"
import { ProjectsRepo } from "./Repo.js"

export class Projects extends Effect.Service<Projects>()("Projects", {
  dependencies: [ProjectsRepo.Default, Teams.Default, Events.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* ProjectsRepo)
    const teams = yield* Teams
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))

    /** Who hears about a project: its owner and, for a team project, the team's owners and admins. */
    const audience = (project: Project) => {
      const team = sharedTeam(project)
      return Effect.map(
        team !== null ? teams.managersOf(team) : Effect.succeed<ReadonlyArray<string>>([]),
        (managers) => Array.from(new Set([project.owner_id, ...managers]))
      )
    }

    const announce = (type: EventType, project: Project) =>
      Effect.flatMap(audience(project), (recipients) => events.emit(type, recipients, project))

    /**
     * The audit record of a change to `project`: in its owner's log, and in its team's log when it is a team project
     * (`teamId`: an update's record is the team's when the project was or becomes one, see `update`).
     */
    const audit = (
      action: AuditAction,
      project: Project,
      changes?: AuditOptions["changes"],
      teamId: string | null = sharedTeam(project)
    ) =>
      events.record(
        action,
        { type: "project", id: project.id },
        { user: project.owner_id, teamId, name: project.name, changes }
      )

    /** An update's action: a change of status is an archive or unarchive, anything else an update. */
    const updateAction = (before: Project, after: Project): AuditAction =>
      before.status === after.status
        ? "project.updated"
        : after.status === "archived"
          ? "project.archived"
          : "project.unarchived"

    const findVisible = (principal: Principal, id: ProjectId) =>
      Effect.flatMap(
        repo.findVisible(principal.userId, id),
        Option.match({
          onNone: () => Effect.fail(NotFound.resource("project", id)),
          onSome: Effect.succeed
        })
      )

    /**
     * Who may do what to a team's project (decisions.md "Who may do what to a team's projects"): its `owner_id`,
     * the team's owners and admins may do anything; a plain member reads, renames, describes and deploys it, and
     * gets 403 naming the role needed for anything else (`act` says what: "deleting a team project"). A project
     * of any other visibility is reached only by its owner (`findVisible`).
     */
    const mayManage = (principal: Principal, project: Project, act: string) =>
      project.owner_id === principal.userId || project.visibility !== "team" || project.team_id === null
        ? Effect.void
        : Effect.flatMap(teams.roleOf(project.team_id, principal.userId), (role) =>
            Option.isSome(role) && (role.value === "owner" || role.value === "admin")
              ? Effect.void
              : Effect.fail(new Forbidden({ message: `${act} needs the team role admin or owner` }))
          )

    /**
     * Refuses a team the caller is not in now (decisions.md: `team_id` "caller must be a member"): 400 on `team_id`,
     * at create and when a `PUT` shares a project into its team, whose owner may have left it since.
     */
    const mustBelong = (principal: Principal, teamId: string) =>
      Effect.flatMap(teams.roleOf(teamId, principal.userId), (role) =>
        Option.isSome(role)
          ? Effect.void
          : Effect.fail(ValidationFailed.field("team_id", "is not a team you belong to"))
      )

    /** What of a patch needs a manager, named as the refusal says it; none when only name and description change. */
    const managedChange = (current: Project, patch: ProjectPatch): string | undefined => {
      if (patch.status !== undefined && patch.status !== current.status) {
        return patch.status === "archived" ? "archiving a team project" : "unarchiving a team project"
      }
      if (patch.visibility !== undefined && patch.visibility !== current.visibility) {
        return "changing a team project's visibility"
      }
      return undefined
    }

    const list = traced("Projects.list")(function* (
      principal: Principal,
      query: ListQuery<ProjectSort, ProjectStatus>
    ) {
      return yield* repo.list(principal.userId, query)
    })

    const create = traced("Projects.create")(function* (principal: Principal, input: NewProject) {
      const visibility = input.visibility ?? "private"
      if (input.team_id !== undefined) {
        yield* mustBelong(principal, input.team_id)
      } else if (visibility === "team") {
        return yield* ValidationFailed.field("team_id", "is required when visibility is team")
      }
      const now = nowIso()
      const project: Project = {
        id: ProjectId.make(makeId("project")),
        name: input.name,
        description: input.description ?? "",
        visibility,
        status: "active",
        owner_id: principal.userId,
        team_id: input.team_id ?? null,
        created_at: now,
        updated_at: now
      }
      // The row last: its insert locks the owner's counter row (docs/lists.md), which every create of the owner
      // shares, until the commit.
      yield* Effect.zipRight(
        Effect.zipRight(announce("project.created", project), audit("project.created", project)),
        repo.insert(project)
      ).pipe(transaction)
      return project
    })

    const get = traced("Projects.get")(function* (principal: Principal, id: ProjectId) {
      return yield* findVisible(principal, id)
    })

    const update = traced("Projects.update")(function* (principal: Principal, id: ProjectId, patch: ProjectPatch) {
      const current = yield* readForWrite(Project, "projects", id, findVisible(principal, id))
      const managed = managedChange(current, patch)
      if (managed !== undefined) yield* mayManage(principal, current, managed)
      const next: Project = {
        ...current,
        name: patch.name ?? current.name,
        description: patch.description ?? current.description,
        visibility: patch.visibility ?? current.visibility,
        status: patch.status ?? current.status,
        // Never before the time stored (a replica whose clock is ahead wrote it last), as the row keeps the later:
        // the answer, its `ETag` and the event are the record as stored.
        updated_at: nowOrLater(current.updated_at)
      }
      if (next.visibility === "team" && next.team_id === null) {
        return yield* ValidationFailed.field("visibility", "can be team only for a project created with a team_id")
      }
      // Sharing it into its team: the caller must be in the team now (the owner passes `mayManage` as any role).
      const sharing = sharedTeam(current) === null ? sharedTeam(next) : null
      if (sharing !== null) yield* mustBelong(principal, sharing)
      yield* repo.update(next)
      yield* announce("project.updated", next)
      // A change into or out of team visibility is the team's record too: it was, or becomes, the team's project.
      yield* audit(
        updateAction(current, next),
        next,
        changesOf(current, next, ["name", "description", "visibility", "status"]),
        sharedTeam(current) ?? sharedTeam(next)
      )
      return next
    }, transaction)

    const remove = traced("Projects.remove")(function* (principal: Principal, id: ProjectId) {
      const current = yield* readForWrite(Project, "projects", id, findVisible(principal, id))
      yield* mayManage(principal, current, "deleting a team project")
      yield* repo.remove(current.id)
      yield* announce("project.deleted", current)
      yield* audit("project.deleted", current)
    }, transaction)

    /**
     * A project the caller may deploy (and so read, rename and describe), for other services; 404 otherwise. Every
     * member of a team project's team may; archiving, visibility and deletion need more (`mayManage`).
     */
    const changeable = (principal: Principal, id: ProjectId) => findVisible(principal, id)

    return { list, create, get, update, remove, changeable, audience } as const
  })
}) {}
