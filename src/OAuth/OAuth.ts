/**
 * The OAuth 2.0 authorization server (RFC 6749 authorization-code grant with PKCE, refresh-token rotation,
 * RFC 7009 revocation): clients, the pending authorization behind the sign-in and consent forms, codes and tokens.
 * Client secrets, codes and tokens are kept only as SHA-256 and compared in constant time.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option, Schema } from "effect"
import { createHash, timingSafeEqual } from "node:crypto"
import type { Principal } from "../Domain/Principal.js"
import { Unauthorized, ValidationFailed } from "../Domain/Errors.js"
import { makeId, randomBase62 } from "../Domain/Ids.js"
import { type Scope, scopeNames } from "../Domain/Scopes.js"
import { nowIso } from "../Domain/Time.js"
import { type ClientRow, OAuthRepo, type PendingRow } from "./Repo.js"

export const ACCESS_PREFIX = "pco_"
export const REFRESH_PREFIX = "pcr_"
export const ACCESS_TTL_SECONDS = 3600
export const REFRESH_TTL_SECONDS = 30 * 24 * 3600
export const CODE_TTL_SECONDS = 600
export const PENDING_TTL_SECONDS = 600
const ACCESS_PATTERN = /^pco_[0-9A-Za-z]{40}$/
const PKCE_PATTERN = /^[A-Za-z0-9._~-]{43,128}$/

const sha256hex = (value: string) => createHash("sha256").update(value).digest("hex")
const sameHash = (hexA: string, hexB: string) => {
  const a = Buffer.from(hexA, "hex")
  const b = Buffer.from(hexB, "hex")
  return a.length === b.length && timingSafeEqual(a, b)
}
const later = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString()

/** An RFC 6749 §5.2 error: `{error, error_description}` with its status (401 `invalid_client`, else 400). */
export class OAuthError extends Schema.TaggedError<OAuthError>()("OAuthError", {
  error: Schema.String,
  description: Schema.String,
  status: Schema.Number,
  /** `WWW-Authenticate: Basic` when the client authenticated with HTTP Basic. */
  basic: Schema.Boolean
}) {
  static of(error: string, description: string, status = 400, basic = false) {
    return new OAuthError({ error, description, status, basic })
  }
}

export interface OAuthClient {
  readonly id: string
  readonly name: string
  readonly secretHash: string | null
  readonly redirectUris: ReadonlyArray<string>
  readonly isPublic: boolean
}

const toClient = (row: ClientRow): OAuthClient => {
  const uris: unknown = JSON.parse(row.redirect_uris)
  return {
    id: row.id,
    name: row.name,
    secretHash: row.secret_hash,
    redirectUris: Array.isArray(uris) ? uris.filter((u): u is string => typeof u === "string") : [],
    isPublic: row.is_public === true || row.is_public === 1
  }
}

/** Space-separated scope names → the scopes, or `undefined` when one is unknown or none is given. */
export const parseScope = (raw: string | undefined): ReadonlyArray<Scope> | undefined => {
  const names = (raw ?? "").split(" ").filter((name) => name !== "")
  if (names.length === 0) return undefined
  const scopes = scopeNames.filter((scope) => names.includes(scope))
  return names.every((name) => scopes.some((scope) => scope === name)) ? scopes : undefined
}

export interface ClientCredentials {
  readonly clientId: string | undefined
  readonly clientSecret: string | undefined
  /** From `Authorization: Basic`. */
  readonly basic: Option.Option<{ readonly id: string; readonly secret: string }>
}

/** What `GET /authorize` leads to: an error page (never a redirect), an error redirect, or the sign-in form. */
export type AuthorizeOutcome =
  | { readonly _tag: "ErrorPage"; readonly message: string }
  | { readonly _tag: "Redirect"; readonly location: string }
  | { readonly _tag: "SignIn"; readonly pending: string; readonly csrf: string; readonly client: OAuthClient; readonly scopes: ReadonlyArray<Scope> }

export interface TokenResponse {
  readonly access_token: string
  readonly token_type: "Bearer"
  readonly expires_in: number
  readonly refresh_token: string
  readonly scope: string
}

/** The redirect back to the client, with `iss` (RFC 9207) and the client's `state`. */
export const redirectTo = (redirectUri: string, params: Record<string, string | null | undefined>) => {
  const url = new URL(redirectUri)
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null) url.searchParams.set(key, value)
  }
  return url.toString()
}

export class OAuth extends Effect.Service<OAuth>()("OAuth", {
  dependencies: [OAuthRepo.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const repo = yield* OAuthRepo

    const findClient = (id: string) => Effect.map(Effect.orDie(repo.findClient(id)), Option.map(toClient))

    /** `bun run cli oauth-clients create`. The secret (confidential clients) is shown here only. */
    const createClient = Effect.fn("OAuth.createClient", { captureStackTrace: false })(function*(input: {
      readonly name: string
      readonly redirectUris: ReadonlyArray<string>
      readonly isPublic: boolean
    }) {
      const name = input.name.trim()
      if (name.length < 1 || name.length > 100) return yield* ValidationFailed.field("name", "must be 1 to 100 characters")
      if (input.redirectUris.length === 0) return yield* ValidationFailed.field("redirect-uri", "at least one is required")
      for (const uri of input.redirectUris) {
        if (!URL.canParse(uri) || uri.includes("#")) {
          return yield* ValidationFailed.field("redirect-uri", `must be an absolute URL without a fragment: ${uri}`)
        }
      }
      const redirect_uris = Array.from(new Set(input.redirectUris))
      const secret = input.isPublic ? undefined : `pcc_${randomBase62(40)}`
      const id = makeId("client")
      yield* Effect.orDie(repo.insertClient({
        id,
        name,
        secret_hash: secret === undefined ? null : sha256hex(secret),
        redirect_uris: JSON.stringify(redirect_uris),
        is_public: input.isPublic ? 1 : 0,
        created_at: nowIso()
      }))
      return {
        client_id: id,
        ...(secret === undefined ? {} : { client_secret: secret }),
        name,
        redirect_uris,
        public: input.isPublic
      }
    })

    /** Client authentication at the token and revocation endpoints (client_secret_basic, client_secret_post, none). */
    const authenticateClient = Effect.fn("OAuth.authenticateClient", { captureStackTrace: false })(function*(credentials: ClientCredentials) {
      const basic = Option.isSome(credentials.basic)
      const invalidClient = OAuthError.of("invalid_client", "Client authentication failed", 401, basic)
      let clientId: string
      let secret: string | undefined
      if (Option.isSome(credentials.basic)) {
        if (credentials.clientSecret !== undefined) {
          return yield* OAuthError.of("invalid_request", "Use one client authentication method, not two")
        }
        if (credentials.clientId !== undefined && credentials.clientId !== credentials.basic.value.id) {
          return yield* OAuthError.of("invalid_request", "client_id does not match the Basic credentials")
        }
        clientId = credentials.basic.value.id
        secret = credentials.basic.value.secret
      } else {
        if (credentials.clientId === undefined || credentials.clientId === "") return yield* invalidClient
        clientId = credentials.clientId
        secret = credentials.clientSecret
      }
      const client = yield* findClient(clientId)
      if (Option.isNone(client)) return yield* invalidClient
      if (client.value.isPublic) {
        // A public client has no secret: sending one means the client is misconfigured.
        if (secret !== undefined && secret !== "") return yield* invalidClient
        return client.value
      }
      if (secret === undefined || client.value.secretHash === null) return yield* invalidClient
      if (!sameHash(sha256hex(secret), client.value.secretHash)) return yield* invalidClient
      return client.value
    })

    /** `GET /authorize`: checks the request; the client and redirect URI before anything is redirected. */
    const startAuthorization = Effect.fn("OAuth.authorize", { captureStackTrace: false })(function*(
      params: Record<string, string | undefined>,
      issuer: string
    ) {
      const clientId = params.client_id
      if (clientId === undefined || clientId === "") {
        return { _tag: "ErrorPage", message: "The request has no client_id." } satisfies AuthorizeOutcome
      }
      const found = yield* findClient(clientId)
      if (Option.isNone(found)) {
        return { _tag: "ErrorPage", message: "The application is not registered (unknown client_id)." } satisfies AuthorizeOutcome
      }
      const client = found.value
      const redirectUri = params.redirect_uri
      if (redirectUri === undefined || !client.redirectUris.includes(redirectUri)) {
        return {
          _tag: "ErrorPage",
          message: "The redirect_uri is missing or is not one registered for this application."
        } satisfies AuthorizeOutcome
      }
      const fail = (error: string, description: string): AuthorizeOutcome => ({
        _tag: "Redirect",
        location: redirectTo(redirectUri, { error, error_description: description, state: params.state, iss: issuer })
      })
      if (params.response_type === undefined) return fail("invalid_request", "response_type is required")
      if (params.response_type !== "code") return fail("unsupported_response_type", "Only response_type=code is supported")
      const scopes = parseScope(params.scope)
      if (scopes === undefined) {
        return fail("invalid_scope", `scope must be one or more of: ${scopeNames.join(", ")} (space-separated)`)
      }
      const challenge = params.code_challenge
      const method = params.code_challenge_method
      if (challenge === undefined || challenge === "") {
        if (client.isPublic) return fail("invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256")
        if (method !== undefined) return fail("invalid_request", "code_challenge_method without code_challenge")
      } else {
        if (method !== "S256") return fail("invalid_request", "code_challenge_method must be S256")
        if (!PKCE_PATTERN.test(challenge)) return fail("invalid_request", "code_challenge is malformed")
      }
      const pending = randomBase62(32)
      const csrf = randomBase62(32)
      const now = nowIso()
      yield* Effect.orDie(repo.deleteExpiredPending(now))
      yield* Effect.orDie(repo.insertPending({
        id: pending,
        client_id: client.id,
        redirect_uri: redirectUri,
        scope: scopes.join(" "),
        state: params.state ?? null,
        code_challenge: challenge === undefined || challenge === "" ? null : challenge,
        user_id: null,
        stage: "sign_in",
        csrf_hash: sha256hex(csrf),
        created_at: now,
        expires_at: later(PENDING_TTL_SECONDS)
      }))
      return { _tag: "SignIn", pending, csrf, client, scopes } satisfies AuthorizeOutcome
    })

    /** The pending authorization a form was posted for, if its form token matches. */
    const pendingFor = Effect.fn("OAuth.pending", { captureStackTrace: false })(function*(pending: string, csrf: string, stage: PendingRow["stage"]) {
      const found = yield* Effect.orDie(repo.findPending(pending, nowIso()))
      if (Option.isNone(found) || found.value.stage !== stage || !sameHash(sha256hex(csrf), found.value.csrf_hash)) {
        return Option.none()
      }
      const client = yield* findClient(found.value.client_id)
      if (Option.isNone(client)) return Option.none()
      return Option.some({ row: found.value, client: client.value, scopes: parseScope(found.value.scope) ?? [] })
    })

    /** Signed in: the pending authorization is bound to the user and gets a new form token for the consent form. */
    const signedIn = Effect.fn("OAuth.signedIn", { captureStackTrace: false })(function*(pending: string, userId: string) {
      const csrf = randomBase62(32)
      yield* Effect.orDie(repo.toConsent(pending, userId, sha256hex(csrf)))
      return csrf
    })

    /** The consent form's answer: a code (approve) or `access_denied`, as the redirect back to the client. */
    const decide = Effect.fn("OAuth.decide", { captureStackTrace: false })(function*(pending: string, csrf: string, approve: boolean, issuer: string) {
      const taken = yield* Effect.orDie(repo.takePending(pending, sha256hex(csrf), nowIso()))
      if (Option.isNone(taken)) return Option.none()
      const row = taken.value
      const userId = row.user_id
      if (userId === null) return Option.none()
      if (!approve) {
        return Option.some(redirectTo(row.redirect_uri, {
          error: "access_denied",
          error_description: "The user refused the request",
          state: row.state,
          iss: issuer
        }))
      }
      const code = randomBase62(43)
      const now = nowIso()
      yield* Effect.orDie(repo.insertCode({
        id: `code_${randomBase62(26)}`,
        code_hash: sha256hex(code),
        client_id: row.client_id,
        user_id: userId,
        redirect_uri: row.redirect_uri,
        scope: row.scope,
        code_challenge: row.code_challenge,
        created_at: now,
        expires_at: later(CODE_TTL_SECONDS),
        used_at: null
      }))
      return Option.some(redirectTo(row.redirect_uri, { code, state: row.state, iss: issuer }))
    })

    /** An access token and a refresh token in one family (the code's id, kept down the refresh chain). */
    const issueTokens = (input: {
      readonly clientId: string
      readonly userId: string
      readonly grantedScope: string
      readonly accessScope: string
      readonly familyId: string
    }) =>
      Effect.gen(function*() {
        const access = `${ACCESS_PREFIX}${randomBase62(40)}`
        const refresh = `${REFRESH_PREFIX}${randomBase62(40)}`
        const now = nowIso()
        const common = {
          client_id: input.clientId,
          user_id: input.userId,
          family_id: input.familyId,
          created_at: now,
          used_at: null,
          revoked_at: null
        }
        yield* repo.insertToken({
          ...common,
          id: `tok_${randomBase62(26)}`,
          token_hash: sha256hex(access),
          kind: "access",
          scope: input.accessScope,
          expires_at: later(ACCESS_TTL_SECONDS)
        })
        yield* repo.insertToken({
          ...common,
          id: `tok_${randomBase62(26)}`,
          token_hash: sha256hex(refresh),
          kind: "refresh",
          scope: input.grantedScope,
          expires_at: later(REFRESH_TTL_SECONDS)
        })
        const response: TokenResponse = {
          access_token: access,
          token_type: "Bearer",
          expires_in: ACCESS_TTL_SECONDS,
          refresh_token: refresh,
          scope: input.accessScope
        }
        return response
      })

    const revokeFamily = (familyId: string) => Effect.orDie(repo.revokeFamily(familyId, nowIso()))

    /**
     * Spends a code or refresh token and issues the next tokens in one transaction. Losing the race to spend it
     * means it was used twice: the whole family is revoked.
     */
    const spendAndIssue = (
      spend: Effect.Effect<boolean, SqlError>,
      grant: Parameters<typeof issueTokens>[0],
      reused: string
    ) =>
      Effect.gen(function*() {
        const issued = yield* Effect.gen(function*() {
          if (!(yield* spend)) return Option.none()
          return Option.some(yield* issueTokens(grant))
        }).pipe(sql.withTransaction, Effect.orDie)
        if (Option.isNone(issued)) {
          yield* revokeFamily(grant.familyId)
          return yield* OAuthError.of("invalid_grant", reused)
        }
        return issued.value
      })

    const exchangeCode = Effect.fn("OAuth.exchangeCode", { captureStackTrace: false })(function*(client: OAuthClient, params: Record<string, string | undefined>) {
      const { code, redirect_uri: redirectUri, code_verifier: verifier } = params
      if (code === undefined || code === "") return yield* OAuthError.of("invalid_request", "code is required")
      if (redirectUri === undefined || redirectUri === "") return yield* OAuthError.of("invalid_request", "redirect_uri is required")
      const found = yield* Effect.orDie(repo.findCode(sha256hex(code)))
      const invalid = (description: string) => OAuthError.of("invalid_grant", description)
      if (Option.isNone(found) || found.value.client_id !== client.id) {
        return yield* invalid("The authorization code is invalid")
      }
      const row = found.value
      if (row.used_at !== null) {
        yield* revokeFamily(row.id)
        yield* Effect.logWarning("authorization code reused; its tokens are revoked", { client_id: client.id })
        return yield* invalid("The authorization code was already used; the tokens issued from it are revoked")
      }
      if (row.expires_at <= nowIso()) return yield* invalid("The authorization code has expired")
      if (row.redirect_uri !== redirectUri) return yield* invalid("redirect_uri does not match the authorization request")
      if (row.code_challenge !== null) {
        if (verifier === undefined || !PKCE_PATTERN.test(verifier)) return yield* invalid("code_verifier is missing or malformed")
        const computed = createHash("sha256").update(verifier).digest("base64url")
        const a = Buffer.from(computed)
        const b = Buffer.from(row.code_challenge)
        if (a.length !== b.length || !timingSafeEqual(a, b)) return yield* invalid("code_verifier does not match the code_challenge")
      } else if (verifier !== undefined) {
        return yield* invalid("code_verifier was sent but the authorization request had no code_challenge")
      }
      return yield* spendAndIssue(
        repo.claimCode(row.id, nowIso()),
        { clientId: client.id, userId: row.user_id, grantedScope: row.scope, accessScope: row.scope, familyId: row.id },
        "The authorization code was already used; the tokens issued from it are revoked"
      )
    })

    const refresh = Effect.fn("OAuth.refresh", { captureStackTrace: false })(function*(client: OAuthClient, params: Record<string, string | undefined>) {
      const token = params.refresh_token
      if (token === undefined || token === "") return yield* OAuthError.of("invalid_request", "refresh_token is required")
      const invalid = (description: string) => OAuthError.of("invalid_grant", description)
      const found = yield* Effect.orDie(repo.findToken(sha256hex(token)))
      if (Option.isNone(found) || found.value.kind !== "refresh" || found.value.client_id !== client.id) {
        return yield* invalid("The refresh token is invalid")
      }
      const row = found.value
      if (row.revoked_at !== null) return yield* invalid("The refresh token is revoked")
      if (row.used_at !== null) {
        yield* revokeFamily(row.family_id)
        yield* Effect.logWarning("refresh token reused; its family is revoked", { client_id: client.id })
        return yield* invalid("The refresh token was already used; every token of this grant is revoked")
      }
      if (row.expires_at <= nowIso()) return yield* invalid("The refresh token has expired")
      const granted = parseScope(row.scope) ?? []
      let accessScope = row.scope
      if (params.scope !== undefined && params.scope.trim() !== "") {
        const asked = parseScope(params.scope)
        if (asked === undefined || !asked.every((scope) => granted.includes(scope))) {
          return yield* OAuthError.of("invalid_scope", `scope may only narrow the granted scope: ${row.scope}`)
        }
        accessScope = asked.join(" ")
      }
      return yield* spendAndIssue(
        repo.claimRefresh(row.id, nowIso()),
        { clientId: client.id, userId: row.user_id, grantedScope: row.scope, accessScope, familyId: row.family_id },
        "The refresh token was already used; every token of this grant is revoked"
      )
    })

    /** `POST /token` */
    const token = Effect.fn("OAuth.token", { captureStackTrace: false })(function*(params: Record<string, string | undefined>, basic: ClientCredentials["basic"]) {
      const client = yield* authenticateClient({ clientId: params.client_id, clientSecret: params.client_secret, basic })
      switch (params.grant_type) {
        case "authorization_code":
          return yield* exchangeCode(client, params)
        case "refresh_token":
          return yield* refresh(client, params)
        case undefined:
        case "":
          return yield* OAuthError.of("invalid_request", "grant_type is required")
        default:
          return yield* OAuthError.of("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
      }
    })

    /** `POST /revoke` (RFC 7009): unknown tokens and other clients' tokens are answered the same, and left alone. */
    const revoke = Effect.fn("OAuth.revoke", { captureStackTrace: false })(function*(params: Record<string, string | undefined>, basic: ClientCredentials["basic"]) {
      const client = yield* authenticateClient({ clientId: params.client_id, clientSecret: params.client_secret, basic })
      const token = params.token
      if (token === undefined || token === "") return yield* OAuthError.of("invalid_request", "token is required")
      const found = yield* Effect.orDie(repo.findToken(sha256hex(token)))
      if (Option.isNone(found) || found.value.client_id !== client.id) return
      // A refresh token takes its whole grant with it (RFC 7009 §2.1); an access token goes alone.
      if (found.value.kind === "refresh") yield* revokeFamily(found.value.family_id)
      else yield* Effect.orDie(repo.revokeToken(found.value.id, nowIso()))
    })

    /** A `pco_…` bearer → its principal, or 401 (unknown, expired and revoked alike). */
    const authenticate = Effect.fn("OAuth.authenticate", { captureStackTrace: false })(function*(token: string) {
      const invalid = new Unauthorized({ message: "The OAuth access token is invalid, expired or revoked" })
      if (!ACCESS_PATTERN.test(token)) return yield* invalid
      const hash = sha256hex(token)
      const found = yield* Effect.orDie(repo.findAccessCredential(hash, nowIso()))
      if (Option.isNone(found) || !sameHash(found.value.token_hash, hash)) return yield* invalid
      const principal: Principal = {
        userId: found.value.user_id,
        orgId: found.value.org_id,
        scopes: parseScope(found.value.scope) ?? [],
        credential: { kind: "oauth", id: found.value.id }
      }
      return principal
    })

    return { createClient, findClient, startAuthorization, pendingFor, signedIn, decide, token, revoke, authenticate } as const
  })
}) {}
