/**
 * Deployments of a project. Whoever can change a project can deploy it; creating a deployment means it has started
 * (`deployment.started`), and it finishes once, `succeeded` (`deployment.completed`) or `failed`
 * (`deployment.failed`). Each change is written with its event in one transaction; the receivers are the project's.
 */

import { Effect, Option } from "effect"
import { changesOf } from "../Domain/Audit.js"
import { Deployment, type DeploymentStatus } from "../Domain/Deployment.js"
import { Conflict, NotFound } from "../Domain/Errors.js"
import { DeploymentId, makeId, type ProjectId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import type { Principal } from "../Domain/Principal.js"
import { sharedTeam } from "../Domain/Project.js"
import { nowIso } from "../Domain/Time.js"
import { Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { Projects } from "../Projects/Projects.js"
import { readForWrite } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { type DeploymentFilters, type DeploymentSort, DeploymentsRepo } from "./Repo.js"

export interface StartDeployment {
  readonly environment: string
  readonly ref: string
  readonly description: string
}

export interface FinishDeployment {
  readonly status: DeploymentStatus
  readonly description?: string | undefined
}

export class Deployments extends Effect.Service<Deployments>()("Deployments", {
  dependencies: [DeploymentsRepo.Default, Projects.Default, Events.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* DeploymentsRepo)
    const projects = yield* Projects
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))

    const find = (projectId: ProjectId, id: string) =>
      Effect.flatMap(
        repo.find({ projectId, id }),
        Option.match({ onNone: () => Effect.fail(NotFound.resource("deployment", id)), onSome: Effect.succeed })
      )

    const create = traced("Deployments.create")(function* (
      principal: Principal,
      projectId: ProjectId,
      input: StartDeployment
    ) {
      const project = yield* projects.changeable(principal, projectId)
      if (project.status === "archived") {
        return yield* new Conflict({ message: `Project ${project.name} is archived; unarchive it to deploy` })
      }
      const now = nowIso()
      const deployment: Deployment = {
        id: DeploymentId.make(makeId("deployment")),
        project_id: project.id,
        environment: input.environment,
        ref: input.ref,
        description: input.description,
        status: "running",
        created_by: principal.userId,
        created_at: now,
        updated_at: now,
        finished_at: null
      }
      yield* events.emit("deployment.started", yield* projects.audience(project), deployment)
      yield* events.record(
        "deployment.started",
        { type: "deployment", id: deployment.id },
        {
          user: project.owner_id,
          teamId: sharedTeam(project),
          name: `${deployment.ref} to ${deployment.environment}`
        }
      )
      // The row last: its insert locks the project's counter row (docs/lists.md) until the commit.
      yield* repo.insert(deployment)
      return deployment
    }, transaction)

    const list = traced("Deployments.list")(function* (
      principal: Principal,
      projectId: ProjectId,
      query: ListQuery<DeploymentSort, DeploymentStatus> & DeploymentFilters
    ) {
      yield* projects.changeable(principal, projectId)
      return yield* repo.list(projectId, query)
    })

    const get = traced("Deployments.get")(function* (principal: Principal, projectId: ProjectId, id: string) {
      yield* projects.changeable(principal, projectId)
      return yield* find(projectId, id)
    })

    /** Only `running` moves, once, to `succeeded` or `failed`; anything else is 409. */
    const finish = traced("Deployments.finish")(function* (
      principal: Principal,
      projectId: ProjectId,
      id: string,
      input: FinishDeployment
    ) {
      const project = yield* projects.changeable(principal, projectId)
      const current = yield* readForWrite(Deployment, "deployments", id, find(projectId, id))
      const to = input.status
      // Deployments have no name: what a person knows them by is the ref, the environment and the project.
      const named = `The deployment of ${current.ref} to ${current.environment} in ${project.name}`
      if (current.status !== "running") {
        return yield* new Conflict({ message: `${named} has already finished (${current.status})` })
      }
      if (to === "running") {
        return yield* new Conflict({ message: `${named} is running; it can only move to succeeded or failed` })
      }
      const finished = yield* repo.finish({
        id,
        status: to,
        description: input.description ?? current.description,
        at: nowIso()
      })
      if (Option.isNone(finished)) {
        return yield* new Conflict({ message: `${named} has already finished` })
      }
      const type = to === "succeeded" ? "deployment.completed" : "deployment.failed"
      yield* events.emit(type, yield* projects.audience(project), finished.value)
      yield* events.record(
        type,
        { type: "deployment", id: current.id },
        {
          user: project.owner_id,
          teamId: sharedTeam(project),
          name: `${current.ref} to ${current.environment}`,
          changes: changesOf(current, finished.value, ["status", "description"])
        }
      )
      return finished.value
    }, transaction)

    return { create, list, get, finish } as const
  })
}) {}
