/**
 * Email and password sign-in, shared by `POST {auth_url}/login` and the authorization page's form. Unknown
 * emails and wrong passwords take the same time and get the same answer; after `AUTH_FAILED_LOGIN_LIMIT`
 * failures for one email in 15 minutes, that account's sign-in is refused until the window ends. A suspended user
 * (`cli users suspend`) who gives the right password is told so, and gets no session.
 */
import { Effect, Option, Schema } from "effect"
import { AuthConfig } from "../Config.js"
import { CurrentActor } from "../Domain/Audit.js"
import { Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { dieOnSqlError } from "../Sql/Repository.js"
import { Users } from "../Users/Users.js"
import { AuthLimits } from "./Limits.js"

export const ACCOUNT_WINDOW_MS = 15 * 60_000
export const IP_WINDOW_MS = 60_000

export class SignInFailed extends Schema.TaggedError<SignInFailed>()("SignInFailed", {
  reason: Schema.Literal("invalid", "limited", "suspended"),
  retryAfter: Schema.Number
}) {
  static readonly invalidMessage = "The email or password is wrong"
  /** Said only to someone who gave the right password. */
  static readonly suspendedMessage = "This account is suspended; ask the service's operator"
}

export class SignIn extends Effect.Service<SignIn>()("SignIn", {
  dependencies: [Users.Default, AuthLimits.Default, Events.Default],
  effect: Effect.gen(function* () {
    const users = yield* Users
    const events = yield* Events
    const limits = yield* AuthLimits
    const config = yield* Effect.orDie(AuthConfig)
    // Verified against when the email is unknown, so both cases cost one argon2id verification at the cost new
    // hashes are made with.
    const dummyHash = yield* Effect.cached(users.hashPassword(crypto.randomUUID()))

    /**
     * A refused sign-in's audit record (`session.failed` for the account a wrong password named), in its own
     * transaction, its actor the account (as GitHub's security log has it); an unknown email records nothing. A
     * successful one records nothing here: `session.created` commits with the session it names (`Sessions.start`),
     * and the authorization page's form starts no session.
     */
    const failed = (userId: string) =>
      events
        .record("session.failed", { type: "user", id: userId }, { user: userId })
        .pipe(events.transaction, dieOnSqlError, Effect.provideService(CurrentActor, { type: "user", id: userId }))

    /** The user for these credentials, or `SignInFailed`. */
    const verify = traced("SignIn.verify")(function* (emailInput: string, password: string) {
      const email = emailInput.trim().toLowerCase()
      const accountKey = `signin-failures:${email}`
      const allowed = yield* limits.check(accountKey, config.failedLoginLimit, ACCOUNT_WINDOW_MS)
      if (!allowed.allowed) return yield* new SignInFailed({ reason: "limited", retryAfter: allowed.retryAfter })
      const found = yield* users.findCredentials(email)
      const hash = Option.match(found, { onNone: () => null, onSome: (user) => user.password_hash })
      const against = hash ?? (yield* dummyHash)
      const verified = yield* Effect.promise(() => Bun.password.verify(password, against))
      if (!verified || hash === null || Option.isNone(found)) {
        const counted = yield* limits.hit(accountKey, config.failedLoginLimit, ACCOUNT_WINDOW_MS)
        if (Option.isSome(found)) yield* failed(found.value.id)
        return yield* new SignInFailed({ reason: "invalid", retryAfter: counted.retryAfter })
      }
      if (found.value.suspended_at !== null) return yield* new SignInFailed({ reason: "suspended", retryAfter: 0 })
      return { id: found.value.id, org_id: found.value.org_id }
    })

    /** Counts a request from `ip` against the per-IP limit of one endpoint. */
    const perIp = (endpoint: string, ip: string) =>
      limits.hit(`ip:${endpoint}:${ip}`, config.ipLimitPerMinute, IP_WINDOW_MS)

    return { verify, perIp } as const
  })
}) {}
