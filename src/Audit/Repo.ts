/**
 * The audit log's reads (the writes are the outbox's, src/Events/Events.ts): a team's records, and a user's (those
 * they made, and those about what is theirs), newest first, numbered pages (src/Sql/Lists.ts).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import { type Actor, AuditAction, AuditChanges, type AuditRecord } from "../Domain/Audit.js"
import { Stored } from "../Domain/Ids.js"
import type { ListQuery, Page } from "../Domain/Lists.js"
import { makeListPage } from "../Sql/Lists.js"

/** What an audit list takes besides pages and creation bounds. */
export interface AuditListQuery extends ListQuery<"created_at"> {
  readonly actions?: ReadonlyArray<AuditAction> | undefined
  readonly actor_id?: string | undefined
}

const Row = Schema.Struct({
  id: Stored.AuditId,
  action: AuditAction,
  actor_type: Schema.Literal("user", "operator", "system"),
  actor_id: Schema.NullOr(Schema.String),
  actor_name: Schema.NullOr(Schema.String),
  credential_type: Schema.NullOr(Schema.Literal("api_key", "oauth", "session")),
  credential_id: Schema.NullOr(Schema.String),
  target_type: Schema.String,
  target_id: Schema.String,
  target_name: Schema.NullOr(Schema.String),
  team_id: Schema.NullOr(Schema.String),
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String),
  request_id: Schema.NullOr(Schema.String),
  changes: Schema.NullOr(Schema.parseJson(AuditChanges)),
  created_at: Schema.String
})
type Row = typeof Row.Type

const actorOf = (row: Row): Actor =>
  row.actor_type === "user"
    ? { type: "user", id: row.actor_id ?? "", name: row.actor_name ?? row.actor_id ?? "" }
    : { type: row.actor_type }

const recordOf = (row: Row): AuditRecord => ({
  id: row.id,
  action: row.action,
  actor: actorOf(row),
  credential: row.credential_type === null ? null : { type: row.credential_type, id: row.credential_id ?? "" },
  target: { type: row.target_type, id: row.target_id },
  target_name: row.target_name,
  team_id: row.team_id,
  ip: row.ip,
  user_agent: row.user_agent,
  request_id: row.request_id,
  created_at: row.created_at,
  changes: row.changes
})

export class AuditRepo extends Effect.Service<AuditRepo>()("AuditRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const listRows = makeListPage(Row)
    const select = sql`a.id, a.action, a.actor_type, a.actor_id, a.actor_name, a.credential_type, a.credential_id,
      a.target_type, a.target_id, a.target_name, a.team_id, a.ip, a.user_agent, a.request_id, a.changes, a.created_at`

    const filters = (query: AuditListQuery): Array<Fragment> => [
      ...(query.actions !== undefined && query.actions.length > 0 ? [sql`a.action IN ${sql.in(query.actions)}`] : []),
      ...(query.actor_id !== undefined ? [sql`a.actor_id = ${query.actor_id}`] : [])
    ]

    const spec = {
      select,
      from: sql`audit_log a`,
      columns: { created_at: "a.created_at" },
      createdColumn: "a.created_at",
      idColumn: "a.id",
      searchColumns: []
    }

    const page = (rows: Effect.Effect<Page<Row>, unknown, SqlClient.SqlClient>): Effect.Effect<Page<AuditRecord>> =>
      Effect.map(Effect.orDie(Effect.provideService(rows, SqlClient.SqlClient, sql)), (found) => ({
        ...found,
        items: found.items.map(recordOf)
      }))

    /** A team's records. */
    const listForTeam = (teamId: string, query: AuditListQuery) =>
      page(
        listRows({ ...spec, where: [sql`a.team_id = ${teamId}`, ...filters(query)] }, { ...query, search: undefined })
      )

    /** A user's records: those they made, and those about what is theirs (two disjoint branches, merged). */
    const listForUser = (userId: string, query: AuditListQuery) =>
      page(
        listRows(
          {
            ...spec,
            where: filters(query),
            branches: [
              [sql`a.actor_id = ${userId}`],
              [sql`a.user_id = ${userId}`, sql`(a.actor_id IS NULL OR a.actor_id <> ${userId})`]
            ]
          },
          { ...query, search: undefined }
        )
      )

    return { listForTeam, listForUser } as const
  })
}) {}
