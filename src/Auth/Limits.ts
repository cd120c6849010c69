/**
 * Limits on signing in and on the token endpoint (per client IP, per account), counted by the service-wide
 * limiter (src/RateLimit/): in memory on one node, shared through Redis when `REDIS_URL` is set.
 */
import { Duration, Effect } from "effect"
import { type Decision, RateLimit } from "../RateLimit/RateLimit.js"

export interface LimitResult {
  readonly allowed: boolean
  /** Seconds until another attempt may pass (for `Retry-After`). */
  readonly retryAfter: number
}

const toResult = (decision: Decision): LimitResult => ({
  allowed: decision.allowed,
  retryAfter: Math.max(1, decision.retryAfter)
})

export class AuthLimits extends Effect.Service<AuthLimits>()("AuthLimits", {
  effect: Effect.map(RateLimit, (limiter) => ({
    /** Counts one event against `key` and answers whether it is within `limit` per `windowMs`. */
    hit: (key: string, limit: number, windowMs: number) =>
      Effect.map(limiter.consume(`auth:${key}`, limit, Duration.millis(windowMs)), toResult),
    /** Whether `key` is already over `limit`, without counting. */
    check: (key: string, limit: number, windowMs: number) =>
      Effect.map(limiter.check(`auth:${key}`, limit, Duration.millis(windowMs)), toResult)
  }))
}) {}
