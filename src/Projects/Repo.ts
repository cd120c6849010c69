import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import { ProjectId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import { Project, type ProjectSort, ProjectStatus } from "../Domain/Project.js"
import { counterSum, makeListPage } from "../Sql/Lists.js"
import * as Rows from "../Sql/Repository.js"

/**
 * Up to this many teams, each team's projects are a branch of their own in the list's statement; past it, one
 * grouped branch reads them team by team (src/Sql/Lists.ts `GroupedBranch`), so the statement does not grow with
 * the teams (planning thousands of branches costs more than reading them).
 */
const MAX_TEAM_BRANCHES = 16

export class ProjectsRepo extends Effect.Service<ProjectsRepo>()("ProjectsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const listProjects = makeListPage(Project)
    const columns = sql`p.id, p.name, p.description, p.visibility, p.status, p.owner_id, p.team_id, p.created_at, p.updated_at`

    /** Projects a user may see and change: their own, and `team` projects of the teams they belong to. */
    const visibleTo = (userId: string) =>
      sql`(p.owner_id = ${userId} OR (p.visibility = 'team' AND p.team_id IN (
        SELECT team_id FROM team_members WHERE user_id = ${userId})))`

    const insert = Rows.write({
      Request: Project,
      execute: (project) => sql`INSERT INTO projects ${sql.insert(project)}`
    })

    const findVisible = Rows.findOne({
      Request: Schema.Struct({ userId: Schema.String, id: ProjectId }),
      Result: Project,
      execute: ({ id, userId }) => sql`SELECT ${columns} FROM projects p WHERE p.id = ${id} AND ${visibleTo(userId)}`
    })

    /**
     * `updated_at` never goes back: of two concurrent writes the one that commits last may have read the clock
     * first, so the row keeps the later of its stored time and this write's (both fixed-width ISO text).
     */
    const update = Rows.write({
      Request: Project,
      execute: (project) =>
        sql`UPDATE projects SET ${sql.update({
          name: project.name,
          description: project.description,
          visibility: project.visibility,
          status: project.status
        })}, updated_at = CASE WHEN updated_at > ${project.updated_at} THEN updated_at ELSE ${project.updated_at} END
        WHERE id = ${project.id}`
    })

    const remove = Rows.write({ Request: ProjectId, execute: (id) => sql`DELETE FROM projects WHERE id = ${id}` })

    /**
     * The user's teams with what each adds to the list's total (migration 0006's counters): the team's `team`
     * projects less the user's own among them (counted with the user's own); then a row with no team, the user's
     * own projects. With the status filter if any. One statement, so a page the counters answer is two: this and
     * the page. (A `UNION ALL` rather than the teams joined onto one row: on SQLite that join costs more than the
     * statement it saves, bench/README.md.)
     */
    const teamsWithCounts = Rows.findAll({
      Request: Schema.Struct({ userId: Schema.String, status: Schema.UndefinedOr(ProjectStatus) }),
      Result: Schema.Struct({ team_id: Schema.NullOr(Schema.String), n: Rows.Count }),
      execute: ({ status, userId }) => {
        const byStatus = status !== undefined ? [sql`status = ${status}`] : []
        const own = [sql`owner_id = ${userId}`, ...byStatus]
        const team = counterSum(sql, "counts_projects_team", [sql`team_id = m.team_id`, ...byStatus])
        const ownShared = counterSum(sql, "counts_projects_owner", [...own, sql`shared_team = m.team_id`])
        return sql`SELECT m.team_id, CAST(${team} - ${ownShared} AS INTEGER) AS n
          FROM team_members m WHERE m.user_id = ${userId}
          UNION ALL SELECT NULL, CAST(${counterSum(sql, "counts_projects_owner", own)} AS INTEGER)`
      }
    })

    /**
     * The same rows as `visibleTo`, as disjoint branches the list merges (src/Sql/Lists.ts `runUnion`): the
     * user's own projects, then per team the `team` projects of someone else, each walking its own index in sort
     * order and stopping after `page × per_page` rows; past `MAX_TEAM_BRANCHES` teams, one grouped branch does the
     * same team by team. Either way the merge sorts at most `page × per_page` rows per team, never the visible set
     * (no index walks several teams' projects in one order: an `IN` of teams would read them all and sort them).
     * A status filter is a condition of every branch, served by the `(owner or team, status, column, id)` indexes
     * (migration 0006) as an index prefix, so rare statuses cost no more than common ones; without one, the
     * `(owner or team, column, id)` indexes (migration 0014) serve each branch. A user in no team is one branch:
     * one ordered walk, nothing to merge. The total comes from the counters unless the query has a search or a date
     * bound.
     */
    const list = (userId: string, query: ListQuery<ProjectSort, ProjectStatus>) =>
      Effect.flatMap(teamsWithCounts({ userId, status: query.status }), (memberships) => {
        const teamIds = memberships.flatMap((m) => (m.team_id === null ? [] : [m.team_id]))
        const byStatus = query.status !== undefined ? [sql`p.status = ${query.status}`] : []
        const own = [sql`p.owner_id = ${userId}`, ...byStatus]
        const teamBranch = (teams: Fragment) => [
          sql`p.visibility = 'team'`,
          teams,
          sql`p.owner_id <> ${userId}`,
          ...byStatus
        ]
        const grouped = teamIds.length > MAX_TEAM_BRANCHES
        const branches = grouped ? [own] : [own, ...teamIds.map((teamId) => teamBranch(sql`p.team_id = ${teamId}`))]
        return listProjects(
          {
            select: columns,
            from: sql`projects p`,
            branches,
            grouped: grouped
              ? {
                  groups: sql`team_members g`,
                  groupsWhere: [sql`g.user_id = ${userId}`],
                  where: teamBranch(sql`p.team_id = g.team_id`),
                  count: teamBranch(sql`p.team_id IN ${sql.in(teamIds)}`)
                }
              : undefined,
            where: [],
            columns: { created_at: "p.created_at", updated_at: "p.updated_at", name: "p.name" },
            createdColumn: "p.created_at",
            idColumn: "p.id",
            searchColumns: ["p.name", "p.description"],
            // Their own, plus the `team` projects of their teams, less their own among those (the list counts
            // the rows instead when the query has a search or date bound).
            total: memberships.reduce((total, m) => total + m.n, 0)
          },
          query
        )
      })

    return {
      insert,
      findVisible: (userId: string, id: ProjectId) => findVisible({ userId, id }),
      update,
      remove,
      list
    } as const
  })
}) {}
