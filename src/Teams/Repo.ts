import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { ListQuery } from "../Domain/Lists.js"
import { listPageUnchecked as listPage } from "../Sql/Lists.js"
import type { Team, TeamMember, TeamRole } from "./Api.js"

export class TeamsRepo extends Effect.Service<TeamsRepo>()("TeamsRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const insert = (team: Team & { readonly org_id: string }) => sql`INSERT INTO teams ${sql.insert(team)}`

    const findById = (id: string) =>
      Effect.map(
        sql<Team>`SELECT id, name, created_at FROM teams WHERE id = ${id}`,
        (rows) => Option.fromNullable(rows[0])
      )

    const addMember = (member: {
      readonly team_id: string
      readonly user_id: string
      readonly role: TeamRole
      readonly joined_at: string
    }) => sql`INSERT INTO team_members ${sql.insert(member)}`

    const roleOf = (teamId: string, userId: string) =>
      Effect.map(
        sql<{ readonly role: TeamRole }>`
          SELECT role FROM team_members WHERE team_id = ${teamId} AND user_id = ${userId}`,
        (rows) => Option.map(Option.fromNullable(rows[0]), (row) => row.role)
      )

    const listForUser = (userId: string, query: ListQuery<"created_at" | "name">) =>
      listPage<Team, "created_at" | "name">({
        select: sql`t.id, t.name, t.created_at`,
        from: sql`teams t JOIN team_members m ON m.team_id = t.id`,
        where: [sql`m.user_id = ${userId}`],
        columns: { created_at: "t.created_at", name: "t.name" },
        createdColumn: "t.created_at",
        idColumn: "t.id",
        searchColumns: ["t.name"]
      }, query)

    const listMembers = (teamId: string, query: ListQuery<"joined_at" | "name">) =>
      listPage<TeamMember, "joined_at" | "name">({
        select: sql`u.id AS user_id, u.name, u.email, u.avatar_url, m.role, m.joined_at`,
        from: sql`team_members m JOIN users u ON u.id = m.user_id`,
        where: [sql`m.team_id = ${teamId}`],
        columns: { joined_at: "m.joined_at", name: "u.name" },
        createdColumn: "m.joined_at",
        idColumn: "u.id",
        searchColumns: ["u.name", "u.email"]
      }, query)

    const member = (teamId: string, userId: string) =>
      Effect.map(
        sql<TeamMember>`
          SELECT u.id AS user_id, u.name, u.email, u.avatar_url, m.role, m.joined_at
          FROM team_members m JOIN users u ON u.id = m.user_id
          WHERE m.team_id = ${teamId} AND m.user_id = ${userId}`,
        (rows) => Option.fromNullable(rows[0])
      )

    /** Owners and admins: who hears about a team's resources. */
    const managersOf = (teamId: string) =>
      Effect.map(
        sql<{ readonly user_id: string }>`
          SELECT user_id FROM team_members WHERE team_id = ${teamId} AND role IN ('owner', 'admin')`,
        (rows) => rows.map((row) => row.user_id)
      )

    return { insert, findById, managersOf, addMember, roleOf, listForUser, listMembers, member } as const
  })
}) {}
