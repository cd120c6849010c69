/**
 * The self-service side of the authorization server's storage: the clients a user registered (never the
 * operator's, whose `owner_id` is NULL) and the grants a user gave. Lists go through the one list query of
 * src/Sql/Lists.ts (page, sort with an id tie-break, search, creation bounds, a true total).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { GrantId, OAuthClientId } from "../../Domain/Ids.js"
import type { ListQuery } from "../../Domain/Lists.js"
import {
  Authorization,
  type AuthorizationSort,
  OAuthClientRecord,
  type OAuthClientSort,
  storedScopes
} from "../../Domain/OAuth.js"
import { makeListPage } from "../../Sql/Lists.js"
import * as Rows from "../../Sql/Repository.js"

/** `oauth_clients` as its owner reads it: `redirect_uris` is JSON text, `is_public` 0/1 or a boolean. */
const ClientRecordRow = Schema.transform(
  Schema.Struct({
    id: OAuthClientId,
    name: Schema.String,
    redirect_uris: Rows.JsonText(Schema.Array(Schema.String)),
    is_public: Schema.Union(Schema.Boolean, Schema.Number),
    created_at: Schema.String,
    updated_at: Schema.String
  }),
  Schema.typeSchema(OAuthClientRecord),
  {
    strict: true,
    decode: (row) => ({
      id: row.id,
      name: row.name,
      redirect_uris: row.redirect_uris,
      public: row.is_public === true || row.is_public === 1,
      created_at: row.created_at,
      updated_at: row.updated_at
    }),
    encode: (client) => ({
      id: client.id,
      name: client.name,
      redirect_uris: client.redirect_uris,
      is_public: client.public ? 1 : 0,
      created_at: client.created_at,
      updated_at: client.updated_at
    })
  }
)

/** A grant joined with its client's name; `scope` is the stored space-separated text. */
const AuthorizationRow = Schema.transform(
  Schema.Struct({
    id: GrantId,
    client_id: OAuthClientId,
    client_name: Schema.String,
    scope: Schema.String,
    created_at: Schema.String,
    last_used_at: Schema.NullOr(Schema.String)
  }),
  Schema.typeSchema(Authorization),
  {
    strict: true,
    decode: (row) => ({
      id: row.id,
      client: { id: row.client_id, name: row.client_name },
      scopes: storedScopes(row.scope),
      created_at: row.created_at,
      last_used_at: row.last_used_at
    }),
    encode: (grant) => ({
      id: grant.id,
      client_id: grant.client.id,
      client_name: grant.client.name,
      scope: grant.scopes.join(" "),
      created_at: grant.created_at,
      last_used_at: grant.last_used_at
    })
  }
)

const Changed = Schema.Struct({ id: Schema.String })

export class OAuthAppsRepo extends Effect.Service<OAuthAppsRepo>()("OAuthAppsRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const listClientPage = makeListPage(ClientRecordRow)
    const listGrantPage = makeListPage(AuthorizationRow)
    const clientColumns = sql`c.id, c.name, c.redirect_uris, c.is_public, c.created_at,
      COALESCE(c.updated_at, c.created_at) AS updated_at`

    const listClients = (ownerId: string, query: ListQuery<OAuthClientSort>) =>
      listClientPage(
        {
          select: clientColumns,
          from: sql`oauth_clients c`,
          where: [sql`c.owner_id = ${ownerId}`],
          columns: { created_at: "c.created_at", updated_at: "c.updated_at", name: "c.name" },
          createdColumn: "c.created_at",
          idColumn: "c.id",
          searchColumns: ["c.name"]
        },
        query
      )

    const findClient = Rows.findOne({
      Request: Schema.Struct({ ownerId: Schema.String, id: Schema.String }),
      Result: ClientRecordRow,
      execute: ({ id, ownerId }) =>
        sql`SELECT ${clientColumns} FROM oauth_clients c WHERE c.id = ${id} AND c.owner_id = ${ownerId}`
    })

    /** A partial update of the owner's client; answers whether it changed a row. */
    const updateClient = (request: {
      readonly ownerId: string
      readonly id: string
      readonly name: string | undefined
      readonly redirectUris: ReadonlyArray<string> | undefined
      readonly now: string
    }) =>
      Effect.map(
        Rows.findAll({
          Request: Schema.Void,
          Result: Changed,
          execute: () =>
            sql`UPDATE oauth_clients SET ${sql.update({
              ...(request.name === undefined ? {} : { name: request.name }),
              ...(request.redirectUris === undefined ? {} : { redirect_uris: JSON.stringify(request.redirectUris) }),
              updated_at: request.now
            })} WHERE id = ${request.id} AND owner_id = ${request.ownerId} RETURNING id`
        })(undefined),
        (rows) => rows.length > 0
      )

    const setClientSecret = (request: {
      readonly ownerId: string
      readonly id: string
      readonly secretHash: string
      readonly now: string
    }) =>
      Effect.asVoid(
        sql`UPDATE oauth_clients SET secret_hash = ${request.secretHash}, updated_at = ${request.now}
          WHERE id = ${request.id} AND owner_id = ${request.ownerId}`
      )

    /** Deletes the owner's client and, by the foreign keys, its grants, pending authorizations, codes and tokens. */
    const deleteClient = (request: { readonly ownerId: string; readonly id: string }) =>
      Effect.map(
        Rows.findAll({
          Request: Schema.Void,
          Result: Changed,
          execute: () =>
            sql`DELETE FROM oauth_clients WHERE id = ${request.id} AND owner_id = ${request.ownerId} RETURNING id`
        })(undefined),
        (rows) => rows.length > 0
      )

    /** Every grant of a client, whoever gave it: what the client's deletion takes with it. */
    const grantsOfClient = Rows.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ id: Schema.String, user_id: Schema.String }),
      execute: (clientId) => sql`SELECT id, user_id FROM oauth_grants WHERE client_id = ${clientId}`
    })

    const listGrants = (userId: string, query: ListQuery<AuthorizationSort>) =>
      listGrantPage(
        {
          select: sql`g.id, g.client_id, c.name AS client_name, g.scope, g.created_at, g.last_used_at`,
          from: sql`oauth_grants g JOIN oauth_clients c ON c.id = g.client_id`,
          where: [sql`g.user_id = ${userId}`],
          columns: { created_at: "g.created_at", name: "c.name" },
          createdColumn: "g.created_at",
          idColumn: "g.id",
          searchColumns: ["c.name"]
        },
        query
      )

    /** Deletes the user's grant and, by the foreign keys, every code and token issued under it. */
    const deleteGrant = (request: { readonly userId: string; readonly id: string }) =>
      Effect.map(
        Rows.findAll({
          Request: Schema.Void,
          Result: Changed,
          execute: () =>
            sql`DELETE FROM oauth_grants WHERE id = ${request.id} AND user_id = ${request.userId} RETURNING id`
        })(undefined),
        (rows) => rows.length > 0
      )

    return {
      listClients,
      findClient: (ownerId: string, id: string) => findClient({ ownerId, id }),
      updateClient,
      setClientSecret,
      deleteClient,
      grantsOfClient,
      listGrants,
      deleteGrant
    } as const
  })
}) {}
