/**
 * The authorization server's storage: clients, pending authorizations, codes and tokens. Rows are decoded at this
 * boundary against the records of `Domain/OAuth.ts` (JSON text and 0/1 columns included) with `SqlSchema`.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type * as Statement from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import { makeId } from "../Domain/Ids.js"
import {
  AccessCredential,
  AuthorizationCode,
  ClientSummary,
  OAuthClient,
  OAuthToken,
  PendingAuthorization,
  scopeText,
  storedScopes
} from "../Domain/OAuth.js"

/** `oauth_clients`: `redirect_uris` is JSON text, `is_public` 0/1 (a boolean where the driver says so). */
const ClientRow = Schema.transform(
  Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    secret_hash: Schema.NullOr(Schema.String),
    redirect_uris: Schema.parseJson(Schema.Array(Schema.String)),
    is_public: Schema.Union(Schema.Boolean, Schema.Number)
  }),
  Schema.typeSchema(OAuthClient),
  {
    strict: true,
    decode: (row) =>
      new OAuthClient({
        id: row.id,
        name: row.name,
        secretHash: row.secret_hash,
        redirectUris: row.redirect_uris,
        isPublic: row.is_public === true || row.is_public === 1
      }),
    encode: (client) => ({
      id: client.id,
      name: client.name,
      secret_hash: client.secretHash,
      redirect_uris: client.redirectUris,
      is_public: client.isPublic ? 1 : 0
    })
  }
)

/** `oauth_clients` as the operator lists it, without the secret hash. */
const ClientSummaryRow = Schema.transform(
  Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    redirect_uris: Schema.parseJson(Schema.Array(Schema.String)),
    is_public: Schema.Union(Schema.Boolean, Schema.Number),
    created_at: Schema.String
  }),
  Schema.typeSchema(ClientSummary),
  {
    strict: true,
    decode: (row) => ({
      client_id: row.id,
      name: row.name,
      redirect_uris: row.redirect_uris,
      public: row.is_public === true || row.is_public === 1,
      created_at: row.created_at
    }),
    encode: (client) => ({
      id: client.client_id,
      name: client.name,
      redirect_uris: client.redirect_uris,
      is_public: client.public ? 1 : 0,
      created_at: client.created_at
    })
  }
)

const PendingRow = Schema.transform(
  Schema.Struct({
    id: Schema.String,
    client_id: Schema.String,
    redirect_uri: Schema.String,
    scope: Schema.String,
    state: Schema.NullOr(Schema.String),
    code_challenge: Schema.NullOr(Schema.String),
    user_id: Schema.NullOr(Schema.String),
    stage: Schema.Literal("sign_in", "consent"),
    csrf_hash: Schema.String,
    created_at: Schema.String,
    expires_at: Schema.String
  }),
  Schema.typeSchema(PendingAuthorization),
  {
    strict: true,
    decode: (row) =>
      new PendingAuthorization({
        id: row.id,
        clientId: row.client_id,
        redirectUri: row.redirect_uri,
        scope: row.scope,
        state: row.state,
        codeChallenge: row.code_challenge,
        userId: row.user_id,
        stage: row.stage,
        csrfHash: row.csrf_hash,
        createdAt: row.created_at,
        expiresAt: row.expires_at
      }),
    encode: (pending) => ({
      id: pending.id,
      client_id: pending.clientId,
      redirect_uri: pending.redirectUri,
      scope: pending.scope,
      state: pending.state,
      code_challenge: pending.codeChallenge,
      user_id: pending.userId,
      stage: pending.stage,
      csrf_hash: pending.csrfHash,
      created_at: pending.createdAt,
      expires_at: pending.expiresAt
    })
  }
)

const CodeRow = Schema.transform(
  Schema.Struct({
    id: Schema.String,
    code_hash: Schema.String,
    client_id: Schema.String,
    user_id: Schema.String,
    redirect_uri: Schema.String,
    scope: Schema.String,
    code_challenge: Schema.NullOr(Schema.String),
    created_at: Schema.String,
    expires_at: Schema.String,
    used_at: Schema.NullOr(Schema.String),
    grant_id: Schema.NullOr(Schema.String)
  }),
  Schema.typeSchema(AuthorizationCode),
  {
    strict: true,
    decode: (row) =>
      new AuthorizationCode({
        id: row.id,
        codeHash: row.code_hash,
        clientId: row.client_id,
        userId: row.user_id,
        redirectUri: row.redirect_uri,
        scope: row.scope,
        codeChallenge: row.code_challenge,
        createdAt: row.created_at,
        expiresAt: row.expires_at,
        usedAt: row.used_at,
        grantId: row.grant_id
      }),
    encode: (code) => ({
      id: code.id,
      code_hash: code.codeHash,
      client_id: code.clientId,
      user_id: code.userId,
      redirect_uri: code.redirectUri,
      scope: code.scope,
      code_challenge: code.codeChallenge,
      created_at: code.createdAt,
      expires_at: code.expiresAt,
      used_at: code.usedAt,
      grant_id: code.grantId
    })
  }
)

const TokenRow = Schema.transform(
  Schema.Struct({
    id: Schema.String,
    token_hash: Schema.String,
    kind: Schema.Literal("access", "refresh"),
    client_id: Schema.String,
    user_id: Schema.String,
    scope: Schema.String,
    family_id: Schema.String,
    created_at: Schema.String,
    expires_at: Schema.String,
    used_at: Schema.NullOr(Schema.String),
    revoked_at: Schema.NullOr(Schema.String),
    grant_id: Schema.NullOr(Schema.String)
  }),
  Schema.typeSchema(OAuthToken),
  {
    strict: true,
    decode: (row) =>
      new OAuthToken({
        id: row.id,
        tokenHash: row.token_hash,
        kind: row.kind,
        clientId: row.client_id,
        userId: row.user_id,
        scope: row.scope,
        familyId: row.family_id,
        createdAt: row.created_at,
        expiresAt: row.expires_at,
        usedAt: row.used_at,
        revokedAt: row.revoked_at,
        grantId: row.grant_id
      }),
    encode: (token) => ({
      id: token.id,
      token_hash: token.tokenHash,
      kind: token.kind,
      client_id: token.clientId,
      user_id: token.userId,
      scope: token.scope,
      family_id: token.familyId,
      created_at: token.createdAt,
      expires_at: token.expiresAt,
      used_at: token.usedAt,
      revoked_at: token.revokedAt,
      grant_id: token.grantId
    })
  }
)

const AccessCredentialRow = Schema.transform(
  Schema.Struct({
    id: Schema.String,
    token_hash: Schema.String,
    client_id: Schema.String,
    user_id: Schema.String,
    user_name: Schema.String,
    org_id: Schema.String,
    scope: Schema.String,
    grant_id: Schema.NullOr(Schema.String),
    grant_last_used_at: Schema.NullOr(Schema.String)
  }),
  Schema.typeSchema(AccessCredential),
  {
    strict: true,
    decode: (row) =>
      new AccessCredential({
        id: row.id,
        tokenHash: row.token_hash,
        clientId: row.client_id,
        userId: row.user_id,
        userName: row.user_name,
        orgId: row.org_id,
        scope: row.scope,
        grantId: row.grant_id,
        grantLastUsedAt: row.grant_last_used_at
      }),
    encode: (credential) => ({
      id: credential.id,
      token_hash: credential.tokenHash,
      client_id: credential.clientId,
      user_id: credential.userId,
      user_name: credential.userName,
      org_id: credential.orgId,
      scope: credential.scope,
      grant_id: credential.grantId,
      grant_last_used_at: credential.grantLastUsedAt
    })
  }
)

/** A conditional update's `RETURNING id`: whether it changed a row. */
const Changed = Schema.Struct({ id: Schema.String })
const changedAny = (rows: ReadonlyArray<unknown>) => rows.length > 0

const ById = Schema.Struct({ id: Schema.String, now: Schema.String })

/** A conditional update of one row by id at `now`, its statement ending `RETURNING id`: whether it changed it. */
const changedById = (execute: (request: typeof ById.Type) => Statement.Statement<object>) => {
  const run = SqlSchema.findAll({ Request: ById, Result: Changed, execute })
  return (request: typeof ById.Type) => Effect.map(run(request), changedAny)
}

export class OAuthRepo extends Effect.Service<OAuthRepo>()("OAuthRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    /**
     * A row schema's stored columns, named rather than `*`: a column a later migration adds does not change
     * what these statements answer (nor invalidate them where they are prepared, src/Sql/PgPrepared.ts).
     */
    const columnsOf = (row: { readonly from: { readonly fields: Readonly<Record<string, unknown>> } }) =>
      sql.literal(Object.keys(row.from.fields).join(", "))

    /** `ownerId`: the user who registered it through the API; null for the operator's CLI clients. */
    const insertClient = SqlSchema.void({
      Request: Schema.Struct({ client: ClientRow, createdAt: Schema.String, ownerId: Schema.NullOr(Schema.String) }),
      execute: ({ client, createdAt, ownerId }) =>
        sql`INSERT INTO oauth_clients ${sql.insert({ ...client, owner_id: ownerId, created_at: createdAt, updated_at: createdAt })}`
    })
    const findClient = SqlSchema.findOne({
      Request: Schema.String,
      Result: ClientRow,
      execute: (id) => sql`SELECT id, name, secret_hash, redirect_uris, is_public FROM oauth_clients WHERE id = ${id}`
    })

    const summaryColumns = sql`id, name, redirect_uris, is_public, created_at`
    /** Every client, oldest first (the operator's `cli oauth-clients list`). */
    const listClients = SqlSchema.findAll({
      Request: Schema.Void,
      Result: ClientSummaryRow,
      execute: () => sql`SELECT ${summaryColumns} FROM oauth_clients ORDER BY created_at, id`
    })
    const findClientSummary = SqlSchema.findOne({
      Request: Schema.String,
      Result: ClientSummaryRow,
      execute: (id) => sql`SELECT ${summaryColumns} FROM oauth_clients WHERE id = ${id}`
    })
    /** What the operator's change of a client answers: its owner (null for the operator's own), for the record. */
    const ChangedClient = Schema.Struct({ id: Schema.String, owner_id: Schema.NullOr(Schema.String) })
    /**
     * Deletes the client and, by the foreign keys, its pending authorizations, codes and tokens. Answers the row it
     * deleted; none when there was none.
     */
    const deleteClient = SqlSchema.findOne({
      Request: Schema.String,
      Result: ChangedClient,
      execute: (clientId) => sql`DELETE FROM oauth_clients WHERE id = ${clientId} RETURNING id, owner_id`
    })
    /** A new secret hash; answers the row it changed, none when there was none. */
    const setClientSecret = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, secretHash: Schema.String }),
      Result: ChangedClient,
      execute: ({ id, secretHash }) =>
        sql`UPDATE oauth_clients SET secret_hash = ${secretHash} WHERE id = ${id} RETURNING id, owner_id`
    })

    const insertPending = SqlSchema.void({
      Request: PendingRow,
      execute: (row) => sql`INSERT INTO oauth_authorizations ${sql.insert({ ...row })}`
    })
    const findPending = SqlSchema.findOne({
      Request: ById,
      Result: PendingRow,
      execute: ({ id, now }) =>
        sql`SELECT ${columnsOf(PendingRow)} FROM oauth_authorizations WHERE id = ${id} AND expires_at > ${now}`
    })
    /** After sign-in: bound to the user, with a new form token. */
    const toConsent = SqlSchema.void({
      Request: Schema.Struct({ id: Schema.String, userId: Schema.String, csrfHash: Schema.String }),
      execute: ({ csrfHash, id, userId }) =>
        sql`UPDATE oauth_authorizations SET user_id = ${userId}, stage = 'consent', csrf_hash = ${csrfHash}
          WHERE id = ${id} AND stage = 'sign_in'`
    })
    /** The consent form is answered once: the pending authorization is taken, with its form token. */
    const takePending = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, csrfHash: Schema.String, now: Schema.String }),
      Result: PendingRow,
      execute: ({ csrfHash, id, now }) =>
        sql`DELETE FROM oauth_authorizations
          WHERE id = ${id} AND stage = 'consent' AND csrf_hash = ${csrfHash} AND expires_at > ${now} RETURNING ${columnsOf(PendingRow)}`
    })
    const deleteExpiredPending = SqlSchema.void({
      Request: Schema.String,
      execute: (now) => sql`DELETE FROM oauth_authorizations WHERE expires_at <= ${now}`
    })

    const insertCode = SqlSchema.void({
      Request: CodeRow,
      execute: (row) => sql`INSERT INTO oauth_codes ${sql.insert({ ...row })}`
    })
    const findCode = SqlSchema.findOne({
      Request: Schema.String,
      Result: CodeRow,
      execute: (hash) => sql`SELECT ${columnsOf(CodeRow)} FROM oauth_codes WHERE code_hash = ${hash}`
    })
    const claimCode = changedById(
      ({ id, now }) => sql`UPDATE oauth_codes SET used_at = ${now} WHERE id = ${id} AND used_at IS NULL RETURNING id`
    )

    const insertToken = SqlSchema.void({
      Request: TokenRow,
      execute: (row) => sql`INSERT INTO oauth_tokens ${sql.insert({ ...row })}`
    })
    const findToken = SqlSchema.findOne({
      Request: Schema.String,
      Result: TokenRow,
      execute: (hash) => sql`SELECT ${columnsOf(TokenRow)} FROM oauth_tokens WHERE token_hash = ${hash}`
    })
    /**
     * Whether the user is suspended (`cli users suspend`): their tokens do not introspect as active, and neither
     * their codes nor their refresh tokens are exchanged.
     */
    const userSuspended = (userId: string) =>
      Effect.map(
        SqlSchema.findAll({
          Request: Schema.String,
          Result: Schema.Struct({ id: Schema.String }),
          execute: (id) => sql`SELECT id FROM users WHERE id = ${id} AND suspended_at IS NOT NULL`
        })(userId),
        (rows) => rows.length > 0
      )
    const findAccessCredential = SqlSchema.findOne({
      Request: Schema.Struct({ hash: Schema.String, now: Schema.String }),
      Result: AccessCredentialRow,
      execute: ({ hash, now }) =>
        sql`SELECT t.id, t.token_hash, t.client_id, t.user_id, u.name AS user_name, t.scope, u.org_id, t.grant_id,
            g.last_used_at AS grant_last_used_at
          FROM oauth_tokens t JOIN users u ON u.id = t.user_id LEFT JOIN oauth_grants g ON g.id = t.grant_id
          WHERE t.token_hash = ${hash} AND t.kind = 'access' AND t.revoked_at IS NULL AND t.expires_at > ${now}
            AND u.suspended_at IS NULL`
    })
    const claimRefresh = changedById(
      ({ id, now }) =>
        sql`UPDATE oauth_tokens SET used_at = ${now}
          WHERE id = ${id} AND kind = 'refresh' AND used_at IS NULL AND revoked_at IS NULL RETURNING id`
    )
    /** Revokes the family's tokens not revoked yet: whether there was one (what an audit record needs to know). */
    const revokeFamily = (request: { readonly familyId: string; readonly now: string }) =>
      Effect.map(
        SqlSchema.findAll({
          Request: Schema.Struct({ familyId: Schema.String, now: Schema.String }),
          Result: Changed,
          execute: ({ familyId, now }) =>
            sql`UPDATE oauth_tokens SET revoked_at = ${now} WHERE family_id = ${familyId} AND revoked_at IS NULL
              RETURNING id`
        })(request),
        changedAny
      )
    /**
     * The user's grant to the client, made on first consent; a later consent adds its scopes (the grant's scopes
     * are the union of what the user approved). Answers the grant's id. Run inside the consent's transaction.
     */
    const grantFor = Effect.fnUntraced(function* (request: {
      readonly userId: string
      readonly clientId: string
      readonly scope: string
      readonly now: string
    }) {
      yield* sql`INSERT INTO oauth_grants ${sql.insert({
        id: makeId("grant"),
        user_id: request.userId,
        client_id: request.clientId,
        scope: request.scope,
        created_at: request.now,
        last_used_at: null
      })} ON CONFLICT (user_id, client_id) DO NOTHING`
      const rows = yield* sql<{ readonly id: string; readonly scope: string }>`
          SELECT id, scope FROM oauth_grants WHERE user_id = ${request.userId} AND client_id = ${request.clientId}`
      const grant = rows[0]
      if (grant === undefined) return yield* Effect.dieMessage("the grant just written is not there")
      const union = scopeText(storedScopes(`${grant.scope} ${request.scope}`))
      if (union !== grant.scope) yield* sql`UPDATE oauth_grants SET scope = ${union} WHERE id = ${grant.id}`
      return grant.id
    })
    /** Tokens were issued or used under the grant: at most one write a minute per grant, whichever process serves. */
    const touchGrant = (request: { readonly id: string; readonly now: string; readonly notBefore: string }) =>
      Effect.asVoid(
        sql`UPDATE oauth_grants SET last_used_at = ${request.now}
          WHERE id = ${request.id} AND (last_used_at IS NULL OR last_used_at < ${request.notBefore})`
      )

    /** Revokes the token unless it is already: whether it was not. */
    const revokeToken = changedById(
      ({ id, now }) =>
        sql`UPDATE oauth_tokens SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL RETURNING id`
    )

    return {
      insertClient,
      findClient,
      listClients: () => listClients(undefined),
      findClientSummary,
      deleteClient,
      setClientSecret,
      insertPending,
      findPending,
      toConsent,
      takePending,
      deleteExpiredPending,
      insertCode,
      findCode,
      claimCode,
      insertToken,
      findToken,
      userSuspended,
      findAccessCredential,
      claimRefresh,
      revokeFamily,
      revokeToken,
      grantFor,
      touchGrant
    } as const
  })
}) {}
