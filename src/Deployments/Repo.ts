/**
 * Deployments in SQL, decoded against the Domain record. Finishing is a guarded update (`WHERE status = 'running'`),
 * so a deployment finishes once even when two finishes race.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Schema } from "effect"
import { Deployment, type DeploymentStatus } from "../Domain/Deployment.js"
import type { ListQuery } from "../Domain/Lists.js"
import { counterSum, listPage } from "../Sql/Lists.js"

export type DeploymentSort = "created_at" | "updated_at"

export interface DeploymentFilters {
  readonly environment?: string | undefined
}

export class DeploymentsRepo extends Effect.Service<DeploymentsRepo>()("DeploymentsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`d.id, d.project_id, d.environment, d.ref, d.description, d.status, d.created_by, d.created_at, d.updated_at, d.finished_at`

    const insert = SqlSchema.void({
      Request: Deployment,
      execute: (deployment) => sql`INSERT INTO deployments ${sql.insert(deployment)}`
    })

    const find = SqlSchema.findOne({
      Request: Schema.Struct({ projectId: Schema.String, id: Schema.String }),
      Result: Deployment,
      execute: ({ id, projectId }) =>
        sql`SELECT ${columns} FROM deployments d WHERE d.id = ${id} AND d.project_id = ${projectId}`
    })

    /** `running` → `succeeded` | `failed`; none when it was no longer running. */
    const finish = SqlSchema.findOne({
      Request: Schema.Struct({
        id: Schema.String,
        status: Schema.Literal("succeeded", "failed"),
        description: Schema.String,
        at: Schema.String
      }),
      Result: Deployment,
      execute: ({ at, description, id, status }) =>
        sql`UPDATE deployments SET status = ${status}, description = ${description}, updated_at = ${at}, finished_at = ${at}
          WHERE id = ${id} AND status = 'running'
          RETURNING id, project_id, environment, ref, description, status, created_by, created_at, updated_at, finished_at`
    })

    const list = (projectId: string, query: ListQuery<DeploymentSort, DeploymentStatus> & DeploymentFilters) =>
      listPage(
        Deployment,
        {
          select: columns,
          from: sql`deployments d`,
          where: [
            sql`d.project_id = ${projectId}`,
            ...(query.status !== undefined ? [sql`d.status = ${query.status}`] : []),
            ...(query.environment !== undefined ? [sql`d.environment = ${query.environment}`] : [])
          ],
          columns: { created_at: "d.created_at", updated_at: "d.updated_at" },
          createdColumn: "d.created_at",
          idColumn: "d.id",
          searchColumns: ["d.ref", "d.environment", "d.description"],
          total: counterSum(sql, "counts_deployments", [
            sql`project_id = ${projectId}`,
            ...(query.status !== undefined ? [sql`status = ${query.status}`] : []),
            ...(query.environment !== undefined ? [sql`environment = ${query.environment}`] : [])
          ])
        },
        query
      )

    return { insert, find, finish, list } as const
  })
}) {}
