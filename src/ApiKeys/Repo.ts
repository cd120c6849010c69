import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { ListQuery } from "../Domain/Lists.js"
import { Scope } from "../Domain/Scopes.js"
import { listPage } from "../Sql/Lists.js"
import type { ApiKey } from "./Api.js"

export type ApiKeySort = "created_at" | "name"
type ApiKeyStatus = ApiKey["status"]

/** As stored: scopes are a JSON array in a TEXT column. */
interface ApiKeyRow extends Omit<ApiKey, "scopes"> {
  readonly scopes: string
}

/** A key found by its prefix, with what authentication needs. */
export interface KeyCredential {
  readonly id: string
  readonly user_id: string
  readonly org_id: string
  readonly key_hash: string
  readonly scopes: ReadonlyArray<Scope>
  readonly status: ApiKeyStatus
  readonly last_used_at: string | null
}

const decodeScopes = Schema.decodeSync(Schema.parseJson(Schema.Array(Scope)))

const toApiKey = (row: ApiKeyRow): ApiKey => ({ ...row, scopes: decodeScopes(row.scopes) })

export class ApiKeysRepo extends Effect.Service<ApiKeysRepo>()("ApiKeysRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** `status` is derived, never stored: revoked beats expired beats active. */
    const status = (now: string) =>
      sql`CASE WHEN k.revoked_at IS NOT NULL THEN 'revoked'
        WHEN k.expires_at IS NOT NULL AND k.expires_at <= ${now} THEN 'expired'
        ELSE 'active' END`
    const columns = (now: string) =>
      sql`k.id, k.name, k.scopes, k.prefix, ${status(now)} AS status, k.created_at, k.expires_at, k.last_used_at, k.revoked_at`

    const insert = (key: {
      readonly id: string
      readonly user_id: string
      readonly name: string
      readonly scopes: ReadonlyArray<Scope>
      readonly prefix: string
      readonly key_hash: string
      readonly created_at: string
      readonly expires_at: string | null
    }) =>
      sql`INSERT INTO api_keys ${
        sql.insert({ ...key, scopes: JSON.stringify(key.scopes), last_used_at: null, revoked_at: null })
      }`

    const find = (userId: string, id: string, now: string) =>
      Effect.map(
        sql<ApiKeyRow>`SELECT ${columns(now)} FROM api_keys k WHERE k.id = ${id} AND k.user_id = ${userId}`,
        (rows) => Option.map(Option.fromNullable(rows[0]), toApiKey)
      )

    const list = (userId: string, query: ListQuery<ApiKeySort, ApiKeyStatus>, now: string) =>
      Effect.map(
        listPage<ApiKeyRow, ApiKeySort>({
          select: columns(now),
          from: sql`api_keys k`,
          where: [
            sql`k.user_id = ${userId}`,
            ...(query.status !== undefined ? [sql`${status(now)} = ${query.status}`] : [])
          ],
          columns: { created_at: "k.created_at", name: "k.name" },
          createdColumn: "k.created_at",
          idColumn: "k.id",
          searchColumns: ["k.name"]
        }, query),
        (page) => ({ ...page, items: page.items.map(toApiKey) })
      )

    /** Keys are looked up by their non-secret prefix; the hash is then compared in constant time by the caller. */
    const findByPrefix = (prefix: string, now: string) =>
      Effect.map(
        sql<Omit<KeyCredential, "scopes"> & { readonly scopes: string }>`
          SELECT k.id, k.user_id, u.org_id, k.key_hash, k.scopes, ${status(now)} AS status, k.last_used_at
          FROM api_keys k JOIN users u ON u.id = k.user_id
          WHERE k.prefix = ${prefix}`,
        (rows): ReadonlyArray<KeyCredential> => rows.map((row) => ({ ...row, scopes: decodeScopes(row.scopes) }))
      )

    /** Revokes once: a key already revoked keeps its first `revoked_at`. */
    const revoke = (userId: string, id: string, now: string) =>
      sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${id} AND user_id = ${userId} AND revoked_at IS NULL`

    /** At most one write a minute per key, whichever process serves it. */
    const touch = (id: string, now: string, notBefore: string) =>
      sql`UPDATE api_keys SET last_used_at = ${now}
        WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${notBefore})`

    return { insert, find, list, findByPrefix, revoke, touch } as const
  })
}) {}
