/** The `sessions` table (migration 0022): one row per sign-in, revoked by logout, gone with its user. */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Schema } from "effect"
import { SessionId, Stored } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import { SessionCredential, type SessionSort } from "../Domain/Session.js"
import { makeListPage } from "../Sql/Lists.js"
import * as Rows from "../Sql/Repository.js"

export const NewSession = Schema.Struct({
  id: SessionId,
  user_id: Schema.String,
  created_at: Schema.String,
  last_used_at: Schema.NullOr(Schema.String),
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String),
  revoked_at: Schema.Null,
  expires_at: Schema.String
})
export type NewSession = typeof NewSession.Type

/** A session as its user lists it, before `current` is known. */
export const SessionRow = Schema.Struct({
  id: Stored.SessionId,
  created_at: Schema.String,
  last_used_at: Schema.NullOr(Schema.String),
  ip: Schema.NullOr(Schema.String),
  user_agent: Schema.NullOr(Schema.String)
})
export type SessionRow = typeof SessionRow.Type

const Changed = Schema.Struct({ id: Schema.String })
const Ended = Schema.Struct({ id: Schema.String, user_agent: Schema.NullOr(Schema.String) })

export class SessionsRepo extends Effect.Service<SessionsRepo>()("SessionsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const listPage = makeListPage(SessionRow)

    const insert = Rows.write({ Request: NewSession, execute: (row) => sql`INSERT INTO sessions ${sql.insert(row)}` })

    /**
     * What authenticating a session JWT reads, whatever the session's state (the caller judges it): one primary-key
     * probe and its user's row. None when the session, or its user, is gone.
     */
    const findCredential = Rows.findOne({
      Request: Schema.String,
      Result: SessionCredential,
      execute: (id) =>
        sql`SELECT s.id, s.user_id, u.name AS user_name, u.org_id, s.expires_at, s.revoked_at, s.last_used_at, u.suspended_at
          FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ${id}`
    })

    /** At most one write a minute per session, whichever process serves it. */
    const touch = (id: string, now: string, notBefore: string) =>
      Effect.asVoid(
        sql`UPDATE sessions SET last_used_at = ${now}
          WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${notBefore})`
      )

    /** The user's live sessions (not revoked, not expired at `now`), newest first unless asked otherwise. */
    const listLive = (userId: string, now: string, query: ListQuery<SessionSort>) =>
      listPage(
        {
          select: sql`s.id, s.created_at, s.last_used_at, s.ip, s.user_agent`,
          from: sql`sessions s`,
          where: [sql`s.user_id = ${userId}`, sql`s.revoked_at IS NULL`, sql`s.expires_at > ${now}`],
          columns: { created_at: "s.created_at" },
          createdColumn: "s.created_at",
          idColumn: "s.id",
          searchColumns: ["s.user_agent", "s.ip"]
        },
        query
      )

    /** Ends one of the user's live sessions; answers its client (`user_agent`, its name) when it was live. */
    const revoke = (request: { readonly userId: string; readonly id: string; readonly now: string }) =>
      Effect.map(
        Rows.findAll({
          Request: Schema.Void,
          Result: Ended,
          execute: () =>
            sql`UPDATE sessions SET revoked_at = ${request.now}
              WHERE id = ${request.id} AND user_id = ${request.userId} AND revoked_at IS NULL
              AND expires_at > ${request.now} RETURNING id, user_agent`
        })(undefined),
        (rows) => Option.fromNullable(rows[0])
      )

    /** Ends every live session of the user but `keep` (none kept when null); answers how many ended. */
    const revokeOthers = (request: { readonly userId: string; readonly keep: string | null; readonly now: string }) =>
      Effect.map(
        Rows.findAll({
          Request: Schema.Void,
          Result: Changed,
          execute: () =>
            sql`UPDATE sessions SET revoked_at = ${request.now}
              WHERE user_id = ${request.userId} AND revoked_at IS NULL AND expires_at > ${request.now}
              ${request.keep === null ? sql`` : sql`AND id <> ${request.keep}`} RETURNING id`
        })(undefined),
        (rows) => rows.length
      )

    return {
      insert,
      findCredential,
      touch,
      listLive,
      revoke,
      revokeOthers
    } as const
  })
}) {}
