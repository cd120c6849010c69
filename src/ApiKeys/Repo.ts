import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Schema } from "effect"
import { ApiKey, type ApiKeySort, type ApiKeyStatus, KeyCredential, OwnedApiKey } from "../Domain/ApiKey.js"
import { ApiKeyId, UserId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import { Scope } from "../Domain/Scopes.js"
import { counterSum, makeListPage } from "../Sql/Lists.js"
import * as Rows from "../Sql/Repository.js"

/** As stored: scopes are a JSON array in a TEXT column. */
const Scopes = Rows.JsonText(Schema.Array(Scope))
const ApiKeyRow = Schema.Struct({ ...ApiKey.fields, scopes: Scopes })
const KeyCredentialRow = Schema.Struct({ ...KeyCredential.fields, scopes: Scopes })
const OwnedApiKeyRow = Schema.Struct({ ...OwnedApiKey.fields, scopes: Scopes })

const decodeCredentials = Schema.decodeUnknown(Schema.Array(KeyCredentialRow))

/** The credential rows of the key lookup, which authentication runs; a row that is off is a defect. */
export const decodeCredentialRows = (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<KeyCredential>> =>
  Effect.orDie(decodeCredentials(rows))

const NewKeyRow = Schema.Struct({
  id: ApiKeyId,
  user_id: UserId,
  name: Schema.String,
  scopes: Scopes,
  prefix: Schema.String,
  key_hash: Schema.String,
  created_at: Schema.String,
  expires_at: Schema.NullOr(Schema.String)
})

export class ApiKeysRepo extends Effect.Service<ApiKeysRepo>()("ApiKeysRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const listKeys = makeListPage(ApiKeyRow)

    /** `status` is derived, never stored: revoked beats expired beats active. */
    const status = (now: string) =>
      sql`CASE WHEN k.revoked_at IS NOT NULL THEN 'revoked'
        WHEN k.expires_at IS NOT NULL AND k.expires_at <= ${now} THEN 'expired'
        ELSE 'active' END`
    const columns = (now: string) =>
      sql`k.id, k.name, k.scopes, k.prefix, ${status(now)} AS status, k.created_at, k.expires_at, k.last_used_at, k.revoked_at`

    const insert = Rows.write({
      Request: NewKeyRow,
      execute: (key) => sql`INSERT INTO api_keys ${sql.insert({ ...key, last_used_at: null, revoked_at: null })}`
    })

    const find = Rows.findOne({
      Request: Schema.Struct({ userId: Schema.String, id: ApiKeyId, now: Schema.String }),
      Result: ApiKeyRow,
      execute: ({ id, now, userId }) =>
        sql`SELECT ${columns(now)} FROM api_keys k WHERE k.id = ${id} AND k.user_id = ${userId}`
    })

    /**
     * `status(now) = s` as conditions on the stored columns, which the planners can match to the partial indexes
     * of migration 0014 and estimate from the columns' statistics (an opaque `CASE … = s` is neither).
     */
    const hasStatus = (s: ApiKeyStatus, now: string) =>
      s === "revoked"
        ? sql`k.revoked_at IS NOT NULL`
        : s === "expired"
          ? sql`k.revoked_at IS NULL AND k.expires_at IS NOT NULL AND k.expires_at <= ${now}`
          : sql`k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > ${now})`

    /**
     * Counters know revoked from not revoked; `expired` depends on the clock, so it is counted from the rows, over
     * the partial index of unrevoked keys with an expiry (migration 0014: only those keys, and no table row).
     * `active` is the unrevoked keys' counter less that count, so neither total reads every key of the user.
     */
    const total = (userId: string, status: ApiKeyStatus | undefined, now: string) => {
      const unrevoked = counterSum(sql, "counts_api_keys", [sql`user_id = ${userId}`, sql`state = 'unrevoked'`])
      const expired = sql`(SELECT count(*) FROM api_keys k WHERE k.user_id = ${userId} AND ${hasStatus("expired", now)})`
      return status === undefined
        ? counterSum(sql, "counts_api_keys", [sql`user_id = ${userId}`])
        : status === "revoked"
          ? counterSum(sql, "counts_api_keys", [sql`user_id = ${userId}`, sql`state = 'revoked'`])
          : status === "expired"
            ? expired
            : sql`(${unrevoked} - ${expired})`
    }

    const list = (userId: string, query: ListQuery<ApiKeySort, ApiKeyStatus>, now: string) =>
      listKeys(
        {
          select: columns(now),
          from: sql`api_keys k`,
          where: [sql`k.user_id = ${userId}`, ...(query.status !== undefined ? [hasStatus(query.status, now)] : [])],
          columns: { created_at: "k.created_at", name: "k.name" },
          createdColumn: "k.created_at",
          idColumn: "k.id",
          searchColumns: ["k.name"],
          total: total(userId, query.status, now)
        },
        query
      )

    /**
     * Keys are looked up by their non-secret prefix; the hash is then compared in constant time by the caller.
     * Authentication runs this for a request with a key (unless src/ApiKeys/Credentials.ts kept what it found), so
     * its two strings go in as they are (no request schema to encode), with the owner's organisation and name from
     * their row (one primary-key probe: `user_id` is a cascading foreign key). A suspended user's keys are not found
     * (`users suspend`).
     */
    const findByPrefix = (prefix: string, now: string) =>
      Effect.flatMap(
        sql`
          SELECT k.id, k.user_id, u.name AS user_name, u.org_id, k.key_hash, k.scopes, ${status(now)} AS status,
            k.expires_at, k.last_used_at
          FROM api_keys k JOIN users u ON u.id = k.user_id
          WHERE k.prefix = ${prefix} AND u.suspended_at IS NULL`,
        decodeCredentialRows
      )

    /**
     * Revokes once: a key already revoked keeps its first `revoked_at`. Answers the key's name when this statement
     * revoked it, none when it was revoked already (or is not the user's): of concurrent revocations, one changes it.
     */
    const revoke = Rows.findOne({
      Request: Schema.Struct({ userId: Schema.String, id: ApiKeyId, now: Schema.String }),
      Result: Schema.Struct({ id: ApiKeyId, name: Schema.String }),
      execute: ({ id, now, userId }) =>
        sql`UPDATE api_keys SET revoked_at = ${now}
          WHERE id = ${id} AND user_id = ${userId} AND revoked_at IS NULL RETURNING id, name`
    })

    /** At most one write a minute per key, whichever process serves it. */
    const touch = (id: ApiKeyId, now: string, notBefore: string) =>
      sql`UPDATE api_keys SET last_used_at = ${now}
        WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${notBefore})`

    /** The operator's view (`cli api-keys list`): every key, or one user's, with its owner, oldest first. */
    const listAll = Rows.findAll({
      Request: Schema.Struct({ userId: Schema.NullOr(Schema.String), now: Schema.String }),
      Result: OwnedApiKeyRow,
      execute: ({ now, userId }) =>
        sql`SELECT ${columns(now)}, k.user_id FROM api_keys k
          ${userId === null ? sql`` : sql`WHERE k.user_id = ${userId}`}
          ORDER BY k.created_at, k.id`
    })

    /** One key with its owner, whoever that is. */
    const findOwned = Rows.findOne({
      Request: Schema.Struct({ id: Schema.String, now: Schema.String }),
      Result: OwnedApiKeyRow,
      execute: ({ id, now }) => sql`SELECT ${columns(now)}, k.user_id FROM api_keys k WHERE k.id = ${id}`
    })

    /** Revokes any user's key that is not revoked yet; answers the row it changed (none when it changed none). */
    const revokeUnrevoked = Rows.findAll({
      Request: Schema.Struct({ id: Schema.String, now: Schema.String }),
      Result: Schema.Struct({ id: ApiKeyId }),
      execute: ({ id, now }) =>
        sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL RETURNING id`
    })

    /**
     * `cli api-keys revoke`: any user's key. Idempotent: a revoked key keeps its first `revoked_at`. Answers the key
     * afterwards and whether this statement revoked it (`changed`); none when there is no such key.
     */
    const revokeAny = (id: string, now: string) =>
      sql.withTransaction(
        Effect.flatMap(revokeUnrevoked({ id, now }), (rows) =>
          Effect.map(
            findOwned({ id, now }),
            Option.map((key) => ({ key, changed: rows.length > 0 }))
          )
        )
      )

    return {
      insert,
      find: (userId: string, id: ApiKeyId, now: string) => find({ userId, id, now }),
      listAll: (userId: string | null, now: string) => listAll({ userId, now }),
      revokeAny,
      list,
      findByPrefix,
      revoke: (userId: string, id: ApiKeyId, now: string) => revoke({ userId, id, now }),
      touch: (id: ApiKeyId, now: string, notBefore: string) => Effect.asVoid(touch(id, now, notBefore))
    } as const
  })
}) {}
