import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

export interface ClientRow {
  readonly id: string
  readonly name: string
  readonly secret_hash: string | null
  readonly redirect_uris: string
  readonly is_public: number | boolean
  readonly created_at: string
}

export interface PendingRow {
  readonly id: string
  readonly client_id: string
  readonly redirect_uri: string
  readonly scope: string
  readonly state: string | null
  readonly code_challenge: string | null
  readonly user_id: string | null
  readonly stage: "sign_in" | "consent"
  readonly csrf_hash: string
  readonly created_at: string
  readonly expires_at: string
}

export interface CodeRow {
  readonly id: string
  readonly code_hash: string
  readonly client_id: string
  readonly user_id: string
  readonly redirect_uri: string
  readonly scope: string
  readonly code_challenge: string | null
  readonly created_at: string
  readonly expires_at: string
  readonly used_at: string | null
}

export interface TokenRow {
  readonly id: string
  readonly token_hash: string
  readonly kind: "access" | "refresh"
  readonly client_id: string
  readonly user_id: string
  readonly scope: string
  readonly family_id: string
  readonly created_at: string
  readonly expires_at: string
  readonly used_at: string | null
  readonly revoked_at: string | null
}

export class OAuthRepo extends Effect.Service<OAuthRepo>()("OAuthRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const first = <A>(rows: ReadonlyArray<A>) => Option.fromNullable(rows[0])

    const insertClient = (client: ClientRow) => sql`INSERT INTO oauth_clients ${sql.insert({ ...client })}`
    const findClient = (id: string) => Effect.map(sql<ClientRow>`SELECT * FROM oauth_clients WHERE id = ${id}`, first)

    const insertPending = (row: PendingRow) => sql`INSERT INTO oauth_authorizations ${sql.insert({ ...row })}`
    const findPending = (id: string, now: string) =>
      Effect.map(sql<PendingRow>`SELECT * FROM oauth_authorizations WHERE id = ${id} AND expires_at > ${now}`, first)
    /** After sign-in: bound to the user, with a new form token. */
    const toConsent = (id: string, userId: string, csrfHash: string) =>
      sql`UPDATE oauth_authorizations SET user_id = ${userId}, stage = 'consent', csrf_hash = ${csrfHash}
        WHERE id = ${id} AND stage = 'sign_in'`
    /** The consent form is answered once: the pending authorization is taken, with its form token. */
    const takePending = (id: string, csrfHash: string, now: string) =>
      Effect.map(
        sql<PendingRow>`DELETE FROM oauth_authorizations
          WHERE id = ${id} AND stage = 'consent' AND csrf_hash = ${csrfHash} AND expires_at > ${now} RETURNING *`,
        first
      )
    const deleteExpiredPending = (now: string) => sql`DELETE FROM oauth_authorizations WHERE expires_at <= ${now}`

    const insertCode = (row: CodeRow) => sql`INSERT INTO oauth_codes ${sql.insert({ ...row })}`
    const findCode = (hash: string) => Effect.map(sql<CodeRow>`SELECT * FROM oauth_codes WHERE code_hash = ${hash}`, first)
    const claimCode = (id: string, now: string) =>
      Effect.map(
        sql<{ readonly id: string }>`UPDATE oauth_codes SET used_at = ${now} WHERE id = ${id} AND used_at IS NULL RETURNING id`,
        (rows) => rows.length > 0
      )

    const insertToken = (row: TokenRow) => sql`INSERT INTO oauth_tokens ${sql.insert({ ...row })}`
    const findToken = (hash: string) =>
      Effect.map(sql<TokenRow>`SELECT * FROM oauth_tokens WHERE token_hash = ${hash}`, first)
    const findAccessCredential = (hash: string, now: string) =>
      Effect.map(
        sql<TokenRow & { readonly org_id: string }>`
          SELECT t.*, u.org_id FROM oauth_tokens t JOIN users u ON u.id = t.user_id
          WHERE t.token_hash = ${hash} AND t.kind = 'access' AND t.revoked_at IS NULL AND t.expires_at > ${now}`,
        first
      )
    const claimRefresh = (id: string, now: string) =>
      Effect.map(
        sql<{ readonly id: string }>`UPDATE oauth_tokens SET used_at = ${now}
          WHERE id = ${id} AND kind = 'refresh' AND used_at IS NULL AND revoked_at IS NULL RETURNING id`,
        (rows) => rows.length > 0
      )
    const revokeFamily = (familyId: string, now: string) =>
      sql`UPDATE oauth_tokens SET revoked_at = ${now} WHERE family_id = ${familyId} AND revoked_at IS NULL`
    const revokeToken = (id: string, now: string) =>
      sql`UPDATE oauth_tokens SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL`

    return {
      insertClient,
      findClient,
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
      findAccessCredential,
      claimRefresh,
      revokeFamily,
      revokeToken
    } as const
  })
}) {}
