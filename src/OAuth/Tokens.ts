/**
 * Tokens: the authorization-code exchange (with the PKCE check), refresh-token rotation (a reused refresh token
 * or code revokes its whole family), RFC 7009 revocation, and the lookup of a `pco_…` bearer for `/v1`.
 * Access tokens last an hour, refresh tokens 30 days; both are kept as SHA-256.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { CurrentActor, SYSTEM } from "../Domain/Audit.js"
import { Unauthorized } from "../Domain/Errors.js"
import { randomBase62 } from "../Domain/Ids.js"
import { knownScopes, type OAuthClient, OAuthError, OAuthToken, scopeText, storedScopes } from "../Domain/OAuth.js"
import type { Principal } from "../Domain/Principal.js"
import { sameHash, sha256Hex } from "../Domain/Secrets.js"
import { nowIso } from "../Domain/Time.js"
import { Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { OAuthRepo } from "./Repo.js"
import { ACCESS_PATTERN, later, newAccessToken, newRefreshToken, PKCE_PATTERN, verifierMatches } from "./Secrets.js"

export { ACCESS_PREFIX, REFRESH_PREFIX } from "./Secrets.js"
export const ACCESS_TTL_SECONDS = 3600
export const REFRESH_TTL_SECONDS = 30 * 24 * 3600
/** A grant's `last_used_at` is written at most once a minute, as an API key's is. */
const TOUCH_INTERVAL_MS = 60_000

/** The authorization-code grant's parameters (RFC 6749 §4.1.3). */
export interface CodeExchange {
  readonly code: string
  readonly redirectUri: string
  readonly codeVerifier: Option.Option<string>
}

/** The refresh-token grant's parameters (§6): `scope`, when given, may only narrow the grant. */
export interface Refresh {
  readonly refreshToken: string
  readonly scope: Option.Option<ReadonlyArray<string>>
}

/** What a grant issues: an access token and the next refresh token of the family. */
export interface IssuedTokens {
  readonly accessToken: string
  readonly refreshToken: string
  readonly expiresIn: number
  readonly scope: string
}

/**
 * An introspection answer (RFC 7662 §2.2): `token_type` is `Bearer` for an access token, `refresh_token` for a
 * refresh token; `exp` and `iat` in epoch seconds; `sub` the user's id.
 */
export type Introspection =
  | { readonly active: false }
  | {
      readonly active: true
      readonly scope: string
      readonly client_id: string
      readonly sub: string
      readonly exp: number
      readonly iat: number
      readonly token_type: "Bearer" | "refresh_token"
    }

/** What a token of ours looks like: anything else is not looked up. */
const TOKEN_PATTERN = /^pc[or]_[0-9A-Za-z]{40}$/

const epochSeconds = (iso: string) => Math.floor(Date.parse(iso) / 1000)

const reusedCode = "The authorization code was already used; the tokens issued from it are revoked"
const reusedRefresh = "The refresh token was already used; every token of this grant is revoked"
const suspendedUser = "The user is suspended"

export class OAuthTokens extends Effect.Service<OAuthTokens>()("OAuthTokens", {
  dependencies: [OAuthRepo.Default, Events.Default],
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const oauthRepo = yield* OAuthRepo
    const repo = orDie(oauthRepo)
    const events = yield* Events

    /** An access token and a refresh token in one family (the code's id, kept down the refresh chain). */
    const issue = Effect.fnUntraced(function* (grant: {
      readonly clientId: string
      readonly userId: string
      readonly grantedScope: string
      readonly accessScope: string
      readonly familyId: string
      readonly grantId: string | null
    }) {
      const accessToken = newAccessToken()
      const refreshToken = newRefreshToken()
      const now = nowIso()
      const token = (kind: OAuthToken["kind"], secret: string, scope: string, ttl: number) =>
        new OAuthToken({
          id: `tok_${randomBase62(26)}`,
          tokenHash: sha256Hex(secret),
          kind,
          clientId: grant.clientId,
          userId: grant.userId,
          scope,
          familyId: grant.familyId,
          createdAt: now,
          expiresAt: later(ttl),
          usedAt: null,
          revokedAt: null,
          grantId: grant.grantId
        })
      yield* repo.insertToken(token("access", accessToken, grant.accessScope, ACCESS_TTL_SECONDS))
      yield* repo.insertToken(token("refresh", refreshToken, grant.grantedScope, REFRESH_TTL_SECONDS))
      if (grant.grantId !== null) yield* repo.touchGrant({ id: grant.grantId, now, notBefore: now })
      const issued: IssuedTokens = {
        accessToken,
        refreshToken,
        expiresIn: ACCESS_TTL_SECONDS,
        scope: grant.accessScope
      }
      return issued
    })

    const revokeFamily = (familyId: string) => repo.revokeFamily({ familyId, now: nowIso() })

    /**
     * A code or refresh token used twice: every token of its grant is revoked (RFC 6749 §4.1.2, §10.4), and, when
     * that revoked any, recorded in the user's log, the system's act (`oauth_token.revoked`, named by the client).
     */
    const revokeReused = (familyId: string, userId: string, client: OAuthClient) =>
      revokeFamily(familyId).pipe(
        Effect.tap((changed) =>
          changed
            ? events.record(
                "oauth_token.revoked",
                { type: "oauth_token", id: familyId },
                { user: userId, name: client.name }
              )
            : Effect.void
        ),
        events.transaction,
        dieOnSqlError,
        Effect.provideService(CurrentActor, SYSTEM)
      )

    /**
     * The next tokens when `spend` spends the code or refresh token; none when it was spent already. A suspended
     * user's code or refresh token is refused before it is spent, so reactivating finds it as it was.
     */
    const issueIfSpent = Effect.fnUntraced(function* <E>(
      spend: Effect.Effect<boolean, E>,
      grant: Parameters<typeof issue>[0]
    ) {
      if (yield* repo.userSuspended(grant.userId)) return yield* OAuthError.of("invalid_grant", suspendedUser)
      if (!(yield* spend)) return Option.none()
      return Option.some(yield* issue(grant))
    })

    /**
     * Spends a code or refresh token and issues the next tokens in one transaction, which is also where both grants
     * check that the user is not suspended. Losing the race to spend it means it was used twice: the whole family
     * is revoked.
     */
    const spendAndIssue = Effect.fnUntraced(function* <E>(
      client: OAuthClient,
      spend: Effect.Effect<boolean, E>,
      grant: Parameters<typeof issue>[0],
      reused: string
    ) {
      const issued = yield* issueIfSpent(spend, grant).pipe(sql.withTransaction, dieOnSqlError)
      if (Option.isNone(issued)) {
        yield* revokeReused(grant.familyId, grant.userId, client)
        return yield* OAuthError.of("invalid_grant", reused)
      }
      return issued.value
    })

    /** `grant_type=authorization_code` for an authenticated client. */
    const exchangeCode = traced("OAuthTokens.exchangeCode")(function* (client: OAuthClient, request: CodeExchange) {
      const invalid = (description: string) => OAuthError.of("invalid_grant", description)
      const found = yield* repo.findCode(sha256Hex(request.code))
      if (Option.isNone(found) || found.value.clientId !== client.id) {
        return yield* invalid("The authorization code is invalid")
      }
      const code = found.value
      if (code.usedAt !== null) {
        yield* revokeReused(code.id, code.userId, client)
        yield* Effect.logWarning("authorization code reused; its tokens are revoked", { client_id: client.id })
        return yield* invalid(reusedCode)
      }
      if (code.expiresAt <= nowIso()) return yield* invalid("The authorization code has expired")
      if (code.redirectUri !== request.redirectUri) {
        return yield* invalid("redirect_uri does not match the authorization request")
      }
      if (code.codeChallenge !== null) {
        if (Option.isNone(request.codeVerifier) || !PKCE_PATTERN.test(request.codeVerifier.value)) {
          return yield* invalid("code_verifier is missing or malformed")
        }
        if (!verifierMatches(request.codeVerifier.value, code.codeChallenge)) {
          return yield* invalid("code_verifier does not match the code_challenge")
        }
      } else if (Option.isSome(request.codeVerifier)) {
        return yield* invalid("code_verifier was sent but the authorization request had no code_challenge")
      }
      return yield* spendAndIssue(
        client,
        repo.claimCode({ id: code.id, now: nowIso() }),
        {
          clientId: client.id,
          userId: code.userId,
          grantedScope: code.scope,
          accessScope: code.scope,
          familyId: code.id,
          grantId: code.grantId
        },
        reusedCode
      )
    })

    /** `grant_type=refresh_token`: rotates the refresh token; a narrowed scope applies to the access token only. */
    const refresh = traced("OAuthTokens.refresh")(function* (client: OAuthClient, request: Refresh) {
      const invalid = (description: string) => OAuthError.of("invalid_grant", description)
      const found = yield* repo.findToken(sha256Hex(request.refreshToken))
      if (Option.isNone(found) || found.value.kind !== "refresh" || found.value.clientId !== client.id) {
        return yield* invalid("The refresh token is invalid")
      }
      const token = found.value
      if (token.revokedAt !== null) return yield* invalid("The refresh token is revoked")
      if (token.usedAt !== null) {
        yield* revokeReused(token.familyId, token.userId, client)
        yield* Effect.logWarning("refresh token reused; its family is revoked", { client_id: client.id })
        return yield* invalid(reusedRefresh)
      }
      if (token.expiresAt <= nowIso()) return yield* invalid("The refresh token has expired")
      const granted = storedScopes(token.scope)
      let accessScope = token.scope
      if (Option.isSome(request.scope) && request.scope.value.length > 0) {
        const asked = knownScopes(request.scope.value)
        if (asked === undefined || !asked.every((scope) => granted.includes(scope))) {
          return yield* OAuthError.of("invalid_scope", `scope may only narrow the granted scope: ${token.scope}`)
        }
        accessScope = scopeText(asked)
      }
      return yield* spendAndIssue(
        client,
        repo.claimRefresh({ id: token.id, now: nowIso() }),
        {
          clientId: client.id,
          userId: token.userId,
          grantedScope: token.scope,
          accessScope,
          familyId: token.familyId,
          grantId: token.grantId
        },
        reusedRefresh
      )
    })

    /**
     * RFC 7009: unknown tokens and other clients' tokens are answered the same, and left alone. A refresh token
     * takes its whole grant with it (§2.1); an access token goes alone. What is revoked is recorded
     * (`oauth_token.revoked`, in the user's log: the user acting through the client); a token already revoked
     * changes nothing and records nothing.
     */
    const revoke = traced("OAuthTokens.revoke")(function* (client: OAuthClient, token: string) {
      const found = yield* repo.findToken(sha256Hex(token))
      if (Option.isNone(found) || found.value.clientId !== client.id) return
      const { id, kind, familyId, userId } = found.value
      const revoked = kind === "refresh" ? revokeFamily(familyId) : repo.revokeToken({ id, now: nowIso() })
      yield* revoked.pipe(
        Effect.tap((changed) =>
          changed
            ? events.record("oauth_token.revoked", { type: "oauth_token", id }, { user: userId, name: client.name })
            : Effect.void
        ),
        events.transaction,
        dieOnSqlError,
        Effect.provideService(CurrentActor, { type: "user", id: userId, credential: { type: "oauth", id: client.id } })
      )
    })

    /**
     * RFC 7662 for an authenticated confidential client: its own live access and refresh tokens are active (a refresh
     * token already rotated is not); anything else, another client's token, an API key or a session JWT included, is
     * `{active: false}`, told apart by nothing.
     */
    const introspect = traced("OAuthTokens.introspect")(function* (client: OAuthClient, token: string) {
      const inactive: Introspection = { active: false }
      if (!TOKEN_PATTERN.test(token)) return inactive
      const found = yield* repo.findToken(sha256Hex(token))
      if (Option.isNone(found) || found.value.clientId !== client.id) return inactive
      const live = found.value
      if (live.revokedAt !== null || live.expiresAt <= nowIso()) return inactive
      if (live.kind === "refresh" && live.usedAt !== null) return inactive
      if (yield* repo.userSuspended(live.userId)) return inactive
      const active: Introspection = {
        active: true,
        scope: live.scope,
        client_id: live.clientId,
        sub: live.userId,
        exp: epochSeconds(live.expiresAt),
        iat: epochSeconds(live.createdAt),
        token_type: live.kind === "access" ? "Bearer" : "refresh_token"
      }
      return active
    })

    /** A `pco_…` bearer → its principal, or 401 (unknown, expired and revoked alike). */
    const authenticate = traced("OAuthTokens.authenticate")(function* (token: string) {
      const invalid = new Unauthorized({ message: "The OAuth access token is invalid, expired or revoked" })
      if (!ACCESS_PATTERN.test(token)) return yield* invalid
      const hash = sha256Hex(token)
      const now = new Date()
      const found = yield* repo.findAccessCredential({ hash, now: now.toISOString() })
      if (Option.isNone(found) || !sameHash(found.value.tokenHash, hash)) return yield* invalid
      const { grantId, grantLastUsedAt } = found.value
      const notBefore = new Date(now.getTime() - TOUCH_INTERVAL_MS).toISOString()
      if (grantId !== null && (grantLastUsedAt === null || grantLastUsedAt < notBefore)) {
        // The repository as it is: a failed touch is only logged.
        yield* oauthRepo
          .touchGrant({ id: grantId, now: now.toISOString(), notBefore })
          .pipe(Effect.catchAll((error) => Effect.logWarning("could not record the grant's last_used_at", error)))
      }
      const principal: Principal = {
        userId: found.value.userId,
        name: found.value.userName,
        orgId: found.value.orgId,
        scopes: storedScopes(found.value.scope),
        credential: { kind: "oauth", id: found.value.id, clientId: found.value.clientId }
      }
      return principal
    })

    return { exchangeCode, refresh, revoke, introspect, authenticate } as const
  })
}) {}
