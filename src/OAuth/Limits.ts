/**
 * The limits on the endpoints where OAuth clients authenticate (`{auth_url}/token`, `/revoke`, `/introspect`),
 * counted by the service-wide limiter (src/RateLimit/: in memory on one node, shared through Redis with
 * `REDIS_URL`). An authenticated client spends its own allowance (`OAUTH_CLIENT_LIMIT_PER_MINUTE`, one count for
 * `/token` and `/revoke` together, another as large for `/introspect`); a call whose client authentication fails is
 * counted against its IP (`AUTH_IP_LIMIT_PER_MINUTE`), so nobody spends a client's allowance with its public id,
 * and while that IP's count is spent no client credentials from it are even looked at. A public client
 * authenticates with its public id alone (it has no secret), so its allowance is kept per client and address: a
 * single-page app's users each have their own, and no one can spend theirs.
 */
import { Effect } from "effect"
import { AuthLimits } from "../Auth/Limits.js"
import { AuthConfig } from "../Config.js"

const MINUTE_MS = 60_000

/** Which of a client's allowances a call spends: `/token` and `/revoke` share one; `/introspect` has its own. */
export type ClientBucket = "tokens" | "introspection"

export class OAuthLimits extends Effect.Service<OAuthLimits>()("OAuthLimits", {
  dependencies: [AuthLimits.Default],
  effect: Effect.gen(function* () {
    const limits = yield* AuthLimits
    const config = yield* Effect.orDie(AuthConfig)
    const ipKey = (ip: string) => `ip:client-auth:${ip}`
    return {
      /** Whether calls from `ip` may still try to authenticate a client (nothing is counted). */
      ipAllowed: (ip: string) => limits.check(ipKey(ip), config.ipLimitPerMinute, MINUTE_MS),
      /** Counts a call from `ip` whose client authentication failed. */
      ipFailed: (ip: string) => limits.hit(ipKey(ip), config.ipLimitPerMinute, MINUTE_MS),
      /** Counts a call of the authenticated client `clientKey` (a public client's id with the caller's address). */
      client: (clientKey: string, bucket: ClientBucket) =>
        limits.hit(`oauth-client:${bucket}:${clientKey}`, config.clientLimitPerMinute, MINUTE_MS)
    } as const
  })
}) {}
