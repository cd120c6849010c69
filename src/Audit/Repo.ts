/**
 * The audit log's reads (the writes are the outbox's, src/Events/Events.ts): a team's records, and a user's (those
 * they made, and those about what is theirs), newest first, numbered pages (src/Sql/Lists.ts).
 *
 * The cursor (`after`): the named record's position in the log's sequence (src/Sql/Sequence.ts, one sequence for
 * the table); the page is the records after it that may be shown, oldest first: one walk of `(team_id, <sequence>)`
 * for a team, for a user the walks of `(actor_id, <sequence>)` and `(user_id, <sequence>)`, merged.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option, Schema } from "effect"
import { type Actor, AuditAction, AuditChanges, type AuditRecord } from "../Domain/Audit.js"
import { type AuditId, Stored } from "../Domain/Ids.js"
import type { ListQuery, Page } from "../Domain/Lists.js"
import { makeListPage } from "../Sql/Lists.js"
import * as Rows from "../Sql/Repository.js"
import * as Sequence from "../Sql/Sequence.js"

/** The audit logs' name for retention's mark (src/Sql/Sequence.ts, `markRemoved`). */
export const AUDIT_SEQUENCE = "audit"

/** What a cursor page asks for: the records after `from` that pass the filters, `limit` of them. */
export interface AuditAfter {
  readonly from: Sequence.Position
  readonly actions?: ReadonlyArray<AuditAction> | undefined
  readonly actor_id?: string | undefined
  readonly limit: number
}

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
const decodeRows = Schema.decodeUnknown(Schema.Array(Row))

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

    const filters = (query: Pick<AuditListQuery, "actions" | "actor_id">): Array<Fragment> => [
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

    /** Where record `id` stands in the sequence, if it is in team `teamId`'s log. */
    const teamPosition = Rows.findOne({
      Request: Schema.Struct({ teamId: Schema.String, id: Schema.String }),
      Result: Sequence.Position,
      execute: ({ id, teamId }) =>
        sql`SELECT ${Sequence.position(sql, "a")} FROM audit_log a WHERE a.id = ${id} AND a.team_id = ${teamId}`
    })

    /** Where record `id` stands in the sequence, if it is in user `userId`'s log (they made it, or it is theirs). */
    const userPosition = Rows.findOne({
      Request: Schema.Struct({ userId: Schema.String, id: Schema.String }),
      Result: Sequence.Position,
      execute: ({ id, userId }) =>
        sql`SELECT ${Sequence.position(sql, "a")} FROM audit_log a
            WHERE a.id = ${id} AND (a.actor_id = ${userId} OR a.user_id = ${userId})`
    })

    /** Whether record `id` exists (in anyone's log). */
    const exists = Rows.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ id: Schema.String }),
      execute: (id) => sql`SELECT id FROM audit_log WHERE id = ${id}`
    })

    const afterBranch = (request: AuditAfter, where: ReadonlyArray<Fragment>) =>
      sql`SELECT ${select}, ${Sequence.order(sql, "a")} FROM audit_log a
        WHERE ${sql.and([...where, ...filters(request), Sequence.after(sql, "a", request.from)])}
        ORDER BY ${Sequence.order(sql, "a")} LIMIT ${request.limit}`

    const decoded = (rows: Effect.Effect<ReadonlyArray<unknown>, unknown>): Effect.Effect<ReadonlyArray<AuditRecord>> =>
      Effect.map(Effect.orDie(Effect.flatMap(rows, decodeRows)), (found) => found.map(recordOf))

    /** A team's records after a cursor, oldest first. */
    const afterForTeam = (teamId: string, request: AuditAfter) =>
      decoded(afterBranch(request, [sql`a.team_id = ${teamId}`]))

    /** A user's records after a cursor, oldest first: the two branches of `listForUser`, merged. */
    const afterForUser = (userId: string, request: AuditAfter) =>
      decoded(
        sql`SELECT * FROM (
            SELECT * FROM (${afterBranch(request, [sql`a.actor_id = ${userId}`])}) b0
            UNION ALL
            SELECT * FROM (${afterBranch(request, [
              sql`a.user_id = ${userId}`,
              sql`(a.actor_id IS NULL OR a.actor_id <> ${userId})`
            ])}) b1
          ) u
          ORDER BY ${Sequence.order(sql, "u")} LIMIT ${request.limit}`
      )

    return {
      listForTeam,
      listForUser,
      teamPosition: (teamId: string, id: AuditId) => teamPosition({ teamId, id }),
      userPosition: (userId: string, id: AuditId) => userPosition({ userId, id }),
      exists: (id: AuditId) => Effect.map(exists(id), Option.isSome),
      afterForTeam,
      afterForUser
    } as const
  })
}) {}
