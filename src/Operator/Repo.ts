/**
 * What only the operator does (the CLI), across the users, API keys and OAuth clients tables: list every record,
 * delete a user or a client, revoke any key, replace a client's secret. No endpoint reaches these.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Effect, Schema } from "effect"
import { Scope } from "../Domain/Scopes.js"

/** A user as the CLI prints it (no organisation, no password hash). */
export const UserRecord = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  name: Schema.String,
  avatar_url: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type UserRecord = typeof UserRecord.Type

/** An API key as stored (its scopes a JSON array in a TEXT column), with its derived status; never the key. */
export const KeyRecord = Schema.Struct({
  id: Schema.String,
  user_id: Schema.String,
  name: Schema.String,
  scopes: Schema.parseJson(Schema.Array(Scope)),
  prefix: Schema.String,
  status: Schema.Literal("active", "expired", "revoked"),
  created_at: Schema.String,
  expires_at: Schema.NullOr(Schema.String),
  last_used_at: Schema.NullOr(Schema.String),
  revoked_at: Schema.NullOr(Schema.String)
})
export type KeyRecord = typeof KeyRecord.Type

/** An OAuth client as stored (redirect URIs a JSON array, `is_public` 0 or 1), printed without its secret hash. */
const ClientRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  redirect_uris: Schema.parseJson(Schema.Array(Schema.String)),
  is_public: Schema.Union(Schema.Literal(0, 1), Schema.Boolean),
  created_at: Schema.String
})
export const ClientRecord = Schema.transform(
  ClientRow,
  Schema.Struct({
    client_id: Schema.String,
    name: Schema.String,
    redirect_uris: Schema.Array(Schema.String),
    public: Schema.Boolean,
    created_at: Schema.String
  }),
  {
    strict: true,
    decode: (row) => ({
      client_id: row.id,
      name: row.name,
      redirect_uris: row.redirect_uris,
      public: row.is_public === 1 || row.is_public === true,
      created_at: row.created_at
    }),
    encode: (client) => ({
      id: client.client_id,
      name: client.name,
      redirect_uris: client.redirect_uris,
      is_public: client.public,
      created_at: client.created_at
    })
  }
)
export type ClientRecord = typeof ClientRecord.Type

const Id = Schema.Struct({ id: Schema.String })

export class OperatorRepo extends Effect.Service<OperatorRepo>()("OperatorRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const userColumns = sql`id, email, name, avatar_url, created_at, updated_at`
    const keyColumns = (now: string) =>
      sql`id, user_id, name, scopes, prefix,
        CASE WHEN revoked_at IS NOT NULL THEN 'revoked'
          WHEN expires_at IS NOT NULL AND expires_at <= ${now} THEN 'expired'
          ELSE 'active' END AS status,
        created_at, expires_at, last_used_at, revoked_at`

    const listUsers = SqlSchema.findAll({
      Request: Schema.Void,
      Result: UserRecord,
      execute: () => sql`SELECT ${userColumns} FROM users ORDER BY created_at, id`
    })

    /** Deletes the user and, by the foreign keys, what is theirs: projects, keys, webhooks, memberships, grants. */
    const deleteUser = SqlSchema.findAll({
      Request: Schema.String,
      Result: Id,
      execute: (id) => sql`DELETE FROM users WHERE id = ${id} RETURNING id`
    })

    const listKeys = SqlSchema.findAll({
      Request: Schema.Struct({ userId: Schema.NullOr(Schema.String), now: Schema.String }),
      Result: KeyRecord,
      execute: ({ now, userId }) =>
        userId === null
          ? sql`SELECT ${keyColumns(now)} FROM api_keys ORDER BY created_at, id`
          : sql`SELECT ${keyColumns(now)} FROM api_keys WHERE user_id = ${userId} ORDER BY created_at, id`
    })

    /** Idempotent: a revoked key keeps its first `revoked_at`. */
    const revokeKey = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, now: Schema.String }),
      Result: KeyRecord,
      execute: ({ id, now }) =>
        sql`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${now}) WHERE id = ${id}
          RETURNING ${keyColumns(now)}`
    })

    const clientColumns = sql`id, name, redirect_uris, is_public, created_at`

    const listClients = SqlSchema.findAll({
      Request: Schema.Void,
      Result: ClientRecord,
      execute: () => sql`SELECT ${clientColumns} FROM oauth_clients ORDER BY created_at, id`
    })

    const findClient = SqlSchema.findOne({
      Request: Schema.String,
      Result: ClientRecord,
      execute: (id) => sql`SELECT ${clientColumns} FROM oauth_clients WHERE id = ${id}`
    })

    /** Deletes the client and, by the foreign keys, its pending authorizations, codes and tokens. */
    const deleteClient = SqlSchema.findAll({
      Request: Schema.String,
      Result: Id,
      execute: (id) => sql`DELETE FROM oauth_clients WHERE id = ${id} RETURNING id`
    })

    const setClientSecret = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.String, secretHash: Schema.String }),
      execute: ({ id, secretHash }) => sql`UPDATE oauth_clients SET secret_hash = ${secretHash} WHERE id = ${id}`
    })

    return {
      listUsers,
      deleteUser,
      listKeys,
      revokeKey,
      listClients,
      findClient,
      deleteClient,
      setClientSecret
    } as const
  })
}) {}
