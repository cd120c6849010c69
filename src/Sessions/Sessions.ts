/**
 * Sessions (decisions.md "Sessions that end, and users who can be stopped"): every sign-in is a row, named by its
 * JWT's `sid`; a JWT is accepted only while its session is live (not revoked, not expired) and its user exists and is
 * not suspended. Logout ends the request's own session; a user lists their live sessions and ends one, or all but the
 * current one. OAuth access tokens manage no sessions (403), as they manage no API keys.
 */
import { Effect, Option } from "effect"
import { JWT_TTL_SECONDS } from "../Auth/Jwt.js"
import { CurrentActor } from "../Domain/Audit.js"
import { Forbidden, NotFound, Unauthorized } from "../Domain/Errors.js"
import { makeId, SessionId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import { CurrentPrincipal, type Principal } from "../Domain/Principal.js"
import type { Session, SessionSort } from "../Domain/Session.js"
import { nowIso } from "../Domain/Time.js"
import { Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { untaggedIfMatch } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { SessionCredentials } from "./Credentials.js"
import { SessionsRepo } from "./Repo.js"

/** `last_used_at` is written at most once a minute, as an API key's is. */
const TOUCH_INTERVAL_MS = 60_000
/** The most of a `User-Agent` kept. */
const MAX_USER_AGENT = 512

/** A session's name, as the dashboard's Sessions page shows it: the client it was started with. */
const sessionName = (userAgent: string | null): string => userAgent ?? "an unknown client"

/** Where a sign-in came from, as the request tells it. */
export interface SessionOrigin {
  readonly ip: string | null
  readonly userAgent: string | null
}

/** A session just started: its id (the JWT's `sid`), when it started and when it expires (`iat`, `exp`, seconds). */
export interface StartedSession {
  readonly id: string
  readonly issuedAt: number
  readonly expiresAt: number
}

const noOAuth = (principal: Principal) =>
  principal.credential.kind === "oauth"
    ? Effect.fail(new Forbidden({ message: "OAuth access tokens cannot manage sessions" }))
    : Effect.void

export class Sessions extends Effect.Service<Sessions>()("Sessions", {
  dependencies: [SessionsRepo.Default, SessionCredentials.Default, Events.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* SessionsRepo)
    const store = yield* SessionCredentials
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))

    /** A session ended (its audit record, in the transaction that ends it). */
    const ended = (
      principal: Principal,
      target: { readonly type: "session" | "user"; readonly id: string },
      name?: string
    ) => events.record("session.revoked", target, { user: principal.userId, ...(name === undefined ? {} : { name }) })

    /**
     * A new session for a user who signed in; it lives as long as its JWT. Its audit record (`session.created`, its
     * target the session, as the `session.revoked` that ends it names it; its actor the user signing in) commits with
     * it: a session that is not written leaves no record.
     */
    const start = traced("Sessions.start")(function* (userId: string, origin: SessionOrigin) {
      const now = new Date()
      const issuedAt = Math.floor(now.getTime() / 1000)
      const expiresAt = issuedAt + JWT_TTL_SECONDS
      const id = SessionId.make(makeId("session"))
      const userAgent = origin.userAgent === null ? null : origin.userAgent.slice(0, MAX_USER_AGENT)
      yield* repo
        .insert({
          id,
          user_id: userId,
          created_at: now.toISOString(),
          last_used_at: now.toISOString(),
          ip: origin.ip,
          user_agent: userAgent,
          revoked_at: null,
          expires_at: new Date(expiresAt * 1000).toISOString()
        })
        .pipe(
          Effect.zipRight(
            events.record("session.created", { type: "session", id }, { user: userId, name: sessionName(userAgent) })
          ),
          transaction,
          Effect.provideService(CurrentActor, { type: "user", id: userId })
        )
      const started: StartedSession = { id, issuedAt, expiresAt }
      return started
    })

    /**
     * A verified session JWT's principal (its credential id is the `sid`) → the same principal while its session is
     * live and its user exists and is not suspended; 401 otherwise. The user's organisation is the stored one.
     */
    const authenticate = traced("Sessions.authenticate")(function* (principal: Principal) {
      const invalid = () => new Unauthorized({ message: "The session has ended: sign in again" })
      const found = yield* store.find(principal.credential.id)
      if (Option.isNone(found)) return yield* invalid()
      const session = found.value
      const now = new Date()
      if (
        session.user_id !== principal.userId ||
        session.revoked_at !== null ||
        session.suspended_at !== null ||
        session.expires_at <= now.toISOString()
      ) {
        return yield* invalid()
      }
      const notBefore = new Date(now.getTime() - TOUCH_INTERVAL_MS).toISOString()
      if (session.last_used_at === null || session.last_used_at < notBefore) {
        yield* store.touch(session.id, now.toISOString(), notBefore)
      }
      const authenticated: Principal = { ...principal, name: session.user_name, orgId: session.org_id }
      return authenticated
    })

    /** `POST {auth_url}/logout`: ends the request's own session. */
    const end = traced("Sessions.end")(function* (principal: Principal) {
      const id = principal.credential.id
      yield* repo.revoke({ userId: principal.userId, id, now: nowIso() }).pipe(
        Effect.tap(
          Option.match({
            onNone: () => Effect.void,
            onSome: (session) => ended(principal, { type: "session", id }, sessionName(session.user_agent))
          })
        ),
        transaction,
        // Logout is served outside /v1, where no middleware provides the caller: the session's user is the actor.
        Effect.provideService(CurrentPrincipal, principal)
      )
    })

    /** `GET /v1/users/me/sessions`: the caller's live sessions; `current` marks the one the request uses. */
    const list = traced("Sessions.list")(function* (principal: Principal, query: ListQuery<SessionSort>) {
      yield* noOAuth(principal)
      const page = yield* repo.listLive(principal.userId, nowIso(), query)
      const current = principal.credential.kind === "jwt" ? principal.credential.id : null
      return {
        ...page,
        items: page.items.map((row): Session => ({ ...row, current: row.id === current }))
      }
    })

    /** `DELETE /v1/users/me/sessions/:id`: one of the caller's live sessions (404 otherwise); its JWT answers 401. */
    const revoke = traced("Sessions.revoke")(function* (principal: Principal, id: string) {
      yield* noOAuth(principal)
      const done = yield* repo.revoke({ userId: principal.userId, id, now: nowIso() }).pipe(
        Effect.tap(
          Option.match({
            onNone: () => Effect.void,
            onSome: (session) =>
              Effect.zipRight(
                untaggedIfMatch,
                ended(principal, { type: "session", id }, sessionName(session.user_agent))
              )
          })
        ),
        transaction
      )
      if (Option.isNone(done)) return yield* NotFound.resource("session", id)
    })

    /** `DELETE /v1/users/me/sessions`: every live session of the caller but the one the request uses. */
    const revokeOthers = traced("Sessions.revokeOthers")(function* (principal: Principal) {
      yield* noOAuth(principal)
      // A list has no `ETag`: a listed tag in `If-Match` never matches it.
      yield* untaggedIfMatch
      const keep = principal.credential.kind === "jwt" ? principal.credential.id : null
      // Recorded only when a session ended: with none other live, nothing changes.
      yield* repo.revokeOthers({ userId: principal.userId, keep, now: nowIso() }).pipe(
        Effect.tap((count) =>
          count > 0 ? ended(principal, { type: "user", id: principal.userId }, "every other session") : Effect.void
        ),
        transaction
      )
    })

    return { start, authenticate, end, list, revoke, revokeOthers } as const
  })
}) {}
