/**
 * The operator's reads and writes of `api_keys` (`cli api-keys list` / `revoke`): every user's keys, with their
 * owner. Kept apart from `Repo.ts` only while that file is being reworked on another branch; it belongs there.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { OwnedApiKey } from "../Domain/ApiKey.js"
import { Scope } from "../Domain/Scopes.js"
import * as Rows from "../Sql/Rows.js"

/** As stored: scopes are a JSON array in a TEXT column. */
const OwnedApiKeyRow = Schema.Struct({ ...OwnedApiKey.fields, scopes: Rows.JsonText(Schema.Array(Scope)) })

export class ApiKeysOperatorRepo extends Effect.Service<ApiKeysOperatorRepo>()("ApiKeysOperatorRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    /** `status` is derived, never stored: revoked beats expired beats active. */
    const columns = (now: string) =>
      sql`id, user_id, name, scopes, prefix,
        CASE WHEN revoked_at IS NOT NULL THEN 'revoked'
          WHEN expires_at IS NOT NULL AND expires_at <= ${now} THEN 'expired'
          ELSE 'active' END AS status,
        created_at, expires_at, last_used_at, revoked_at`

    /** Every key, or one user's, oldest first. */
    const listAll = Rows.findAll({
      Request: Schema.Struct({ userId: Schema.NullOr(Schema.String), now: Schema.String }),
      Result: OwnedApiKeyRow,
      execute: ({ now, userId }) =>
        userId === null
          ? sql`SELECT ${columns(now)} FROM api_keys ORDER BY created_at, id`
          : sql`SELECT ${columns(now)} FROM api_keys WHERE user_id = ${userId} ORDER BY created_at, id`
    })

    /** Any user's key. Idempotent: a revoked key keeps its first `revoked_at`. */
    const revokeAny = Rows.findOne({
      Request: Schema.Struct({ id: Schema.String, now: Schema.String }),
      Result: OwnedApiKeyRow,
      execute: ({ id, now }) =>
        sql`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${now}) WHERE id = ${id}
          RETURNING ${columns(now)}`
    })

    return {
      listAll: (userId: string | null, now: string) => listAll({ userId, now }),
      revokeAny: (id: string, now: string) => revokeAny({ id, now })
    } as const
  })
}) {}
