/**
 * The pending authorization behind the sign-in and consent forms, as a small state machine stored in the
 * database: `start` (the request checked; stage `sign_in`) → `signedIn` (bound to the user, a new form token;
 * stage `consent`) → `decide` (taken once: an authorization code, with its PKCE challenge, or a denial).
 * Every form carries the pending authorization's id and a one-time form token, kept as SHA-256.
 */
import { Effect, Option } from "effect"
import { CurrentActor } from "../Domain/Audit.js"
import { randomBase62 } from "../Domain/Ids.js"
import {
  AuthorizationCode,
  AuthorizationRejected,
  knownScopes,
  type OAuthClient,
  type OAuthErrorCode,
  PendingAuthorization,
  scopeText,
  storedScopes,
  UntrustedAuthorizationRequest
} from "../Domain/OAuth.js"
import { type Scope, scopeNames } from "../Domain/Scopes.js"
import { sameHash, sha256Hex } from "../Domain/Secrets.js"
import { nowIso } from "../Domain/Time.js"
import { Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { OAuthClients } from "./Clients.js"
import { OAuthRepo } from "./Repo.js"
import { later, newCode, newFormSecret, PKCE_PATTERN } from "./Secrets.js"

export const CODE_TTL_SECONDS = 600
export const PENDING_TTL_SECONDS = 600
/** What a pending authorization's id looks like (`newFormSecret`): anything else is no form of ours, unqueried. */
const FORM_SECRET = /^[0-9A-Za-z]{32}$/

/** `GET /authorize`'s parameters, decoded at the HTTP edge (absent and present-but-empty kept apart). */
export interface AuthorizationRequest {
  readonly clientId: Option.Option<string>
  readonly redirectUri: Option.Option<string>
  readonly responseType: Option.Option<string>
  /** The requested scope names, split. */
  readonly scope: ReadonlyArray<string>
  readonly state: Option.Option<string>
  readonly codeChallenge: Option.Option<string>
  readonly codeChallengeMethod: Option.Option<string>
}

/** A form posted for a pending authorization: its id and its one-time form token. */
export interface FormTokens {
  readonly pending: string
  readonly csrf: string
}

/** A pending authorization waiting for the user, with what its pages show. */
export interface Awaiting {
  readonly pending: PendingAuthorization
  readonly client: OAuthClient
  readonly scopes: ReadonlyArray<Scope>
}

/**
 * The consent form's answer, to be sent back to the client's redirect URI; `Suspended` (approved by a user suspended
 * since they signed in: no grant, no code) is told to the user alone, as their sign-in would be.
 */
export interface Decision {
  readonly redirectUri: string
  readonly state: string | null
  readonly outcome:
    | { readonly _tag: "Approved"; readonly code: string }
    | { readonly _tag: "Denied" }
    | { readonly _tag: "Suspended" }
}

export class OAuthAuthorizations extends Effect.Service<OAuthAuthorizations>()("OAuthAuthorizations", {
  dependencies: [OAuthRepo.Default, OAuthClients.Default, Events.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* OAuthRepo)
    const clients = yield* OAuthClients
    const events = yield* Events

    /**
     * Checks an authorization request — the client and redirect URI first, since nothing may be redirected before
     * they are trusted — and stores it as pending sign-in. Answers it with the sign-in form's token.
     */
    const start = traced("OAuthAuthorizations.start")(function* (request: AuthorizationRequest) {
      const clientId = Option.getOrElse(request.clientId, () => "")
      if (clientId === "") return yield* new UntrustedAuthorizationRequest({ message: "The request has no client_id." })
      const found = yield* clients.find(clientId)
      if (Option.isNone(found)) {
        return yield* new UntrustedAuthorizationRequest({
          message: "The application is not registered (unknown client_id)."
        })
      }
      const client = found.value
      if (Option.isNone(request.redirectUri) || !client.redirectUris.includes(request.redirectUri.value)) {
        return yield* new UntrustedAuthorizationRequest({
          message: "The redirect_uri is missing or is not one registered for this application."
        })
      }
      const redirectUri = request.redirectUri.value
      const state = Option.getOrNull(request.state)
      const reject = (error: OAuthErrorCode, description: string) =>
        new AuthorizationRejected({ redirectUri, state, error, description })
      if (Option.isNone(request.responseType)) return yield* reject("invalid_request", "response_type is required")
      if (request.responseType.value !== "code") {
        return yield* reject("unsupported_response_type", "Only response_type=code is supported")
      }
      const scopes = knownScopes(request.scope)
      if (scopes === undefined) {
        return yield* reject(
          "invalid_scope",
          `scope must be one or more of: ${scopeNames.join(", ")} (space-separated)`
        )
      }
      const challenge = Option.filter(request.codeChallenge, (value) => value !== "")
      if (Option.isNone(challenge)) {
        if (client.isPublic) {
          return yield* reject(
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method=S256"
          )
        }
        if (Option.isSome(request.codeChallengeMethod)) {
          return yield* reject("invalid_request", "code_challenge_method without code_challenge")
        }
      } else {
        if (Option.getOrUndefined(request.codeChallengeMethod) !== "S256") {
          return yield* reject("invalid_request", "code_challenge_method must be S256")
        }
        if (!PKCE_PATTERN.test(challenge.value)) return yield* reject("invalid_request", "code_challenge is malformed")
      }
      const csrf = newFormSecret()
      const now = nowIso()
      const pending = new PendingAuthorization({
        id: newFormSecret(),
        clientId: client.id,
        redirectUri,
        scope: scopeText(scopes),
        state,
        codeChallenge: Option.getOrNull(challenge),
        userId: null,
        stage: "sign_in",
        csrfHash: sha256Hex(csrf),
        createdAt: now,
        expiresAt: later(PENDING_TTL_SECONDS)
      })
      yield* repo.deleteExpiredPending(now)
      yield* repo.insertPending(pending)
      return { pending, csrf, client, scopes } as const
    })

    /** The pending authorization a form was posted for, if it is at `stage` and its form token matches. */
    const find = traced("OAuthAuthorizations.find")(function* (form: FormTokens, stage: PendingAuthorization["stage"]) {
      if (!FORM_SECRET.test(form.pending)) return Option.none<Awaiting>()
      const found = yield* repo.findPending({ id: form.pending, now: nowIso() })
      if (
        Option.isNone(found) ||
        found.value.stage !== stage ||
        !sameHash(sha256Hex(form.csrf), found.value.csrfHash)
      ) {
        return Option.none<Awaiting>()
      }
      const client = yield* clients.find(found.value.clientId)
      if (Option.isNone(client)) return Option.none<Awaiting>()
      return Option.some<Awaiting>({
        pending: found.value,
        client: client.value,
        scopes: storedScopes(found.value.scope)
      })
    })

    /** Signed in: the pending authorization is bound to the user and gets a new form token for the consent form. */
    const signedIn = traced("OAuthAuthorizations.signedIn")(function* (pending: string, userId: string) {
      const csrf = newFormSecret()
      yield* repo.toConsent({ id: pending, userId, csrfHash: sha256Hex(csrf) })
      return csrf
    })

    /** The grant `pending` asks for (made or widened) and an authorization code `code` under it. */
    const grantWithCode = Effect.fnUntraced(function* (
      pending: PendingAuthorization,
      userId: string,
      code: string,
      now: string
    ) {
      const grantId = yield* repo.grantFor({ userId, clientId: pending.clientId, scope: pending.scope, now })
      yield* repo.insertCode(
        new AuthorizationCode({
          id: `code_${randomBase62(26)}`,
          codeHash: sha256Hex(code),
          clientId: pending.clientId,
          userId,
          redirectUri: pending.redirectUri,
          scope: pending.scope,
          codeChallenge: pending.codeChallenge,
          createdAt: now,
          expiresAt: later(CODE_TTL_SECONDS),
          usedAt: null,
          grantId
        })
      )
      return grantId
    })

    /**
     * The consent form's answer, taken once: on approval an authorization code (10 minutes, single use, bound to
     * the redirect URI and the PKCE challenge), unless the user was suspended since signing in. None when the form
     * has expired or was already answered.
     */
    const decide = traced("OAuthAuthorizations.decide")(function* (form: FormTokens, approve: boolean) {
      if (!FORM_SECRET.test(form.pending)) return Option.none<Decision>()
      const taken = yield* repo.takePending({ id: form.pending, csrfHash: sha256Hex(form.csrf), now: nowIso() })
      if (Option.isNone(taken)) return Option.none<Decision>()
      const pending = taken.value
      const userId = pending.userId
      if (userId === null) return Option.none<Decision>()
      if (!approve) {
        return Option.some<Decision>({
          redirectUri: pending.redirectUri,
          state: pending.state,
          outcome: { _tag: "Denied" }
        })
      }
      const code = newCode()
      const now = nowIso()
      // The grant (made or widened) and the code under it commit together, in the transaction that checks that the
      // user, signed in before, is not suspended since.
      const client = yield* clients.find(pending.clientId)
      const granted = yield* Effect.gen(function* () {
        if (yield* repo.userSuspended(userId)) return false
        const grantId = yield* grantWithCode(pending, userId, code, now)
        yield* events.record(
          "authorization.granted",
          { type: "authorization", id: grantId },
          { user: userId, name: Option.getOrNull(Option.map(client, (found) => found.name)) }
        )
        return true
      }).pipe(events.transaction, dieOnSqlError, Effect.provideService(CurrentActor, { type: "user", id: userId }))
      return Option.some<Decision>({
        redirectUri: pending.redirectUri,
        state: pending.state,
        outcome: granted ? { _tag: "Approved", code } : { _tag: "Suspended" }
      })
    })

    return { start, find, signedIn, decide } as const
  })
}) {}
