/**
 * The rate limiter: `@effect/experimental`'s `RateLimiter` (token bucket) over a store chosen from config,
 * in-process (the buckets below) or shared through Redis (src/RateLimit/RedisStore.ts). It never fails: when Redis
 * does not answer, the same request is counted in this process instead (fail open to per-replica limits), with a
 * warning at most every 30 s and the `rate_limit.store_errors` counter.
 *
 * A bucket holds `limit` tokens and gets one back every `window / limit`, so a client may spend its whole budget
 * at once and then goes at the average rate.
 */
import * as RateLimiter from "@effect/experimental/RateLimiter"
import { Context, Duration, Effect, Layer, Metric, Option } from "effect"
import { RateLimitConfig } from "../Config.js"
import { layerStoreRedis } from "./RedisStore.js"

export interface Decision {
  readonly allowed: boolean
  readonly limit: number
  readonly remaining: number
  /** Epoch seconds at which the bucket is full again. */
  readonly resetAt: number
  /** Seconds until the next request may pass: 0 while tokens remain, at least 1 otherwise. */
  readonly retryAfter: number
}

export interface RateLimitSettings {
  readonly enabled: boolean
  readonly perCredential: number
  readonly perClientIp: number
  readonly window: Duration.Duration
}

export interface RateLimitService {
  readonly settings: RateLimitSettings
  /** Spends one token of `key`'s bucket (`limit` per `window`); `allowed: false` when none is left. */
  readonly consume: (key: string, limit: number, window: Duration.DurationInput) => Effect.Effect<Decision>
  /** Reads `key`'s bucket without spending: `allowed: false` when a `consume` now would be refused. */
  readonly check: (key: string, limit: number, window: Duration.DurationInput) => Effect.Effect<Decision>
  /**
   * The same two, answered at once, when the buckets are in this process (no Redis; the default): a request's
   * token is then spent without a fiber step. `undefined` with Redis (or the limiter off).
   */
  readonly inProcess:
    | {
        readonly consume: (key: string, limit: number, window: Duration.DurationInput) => Decision
        readonly check: (key: string, limit: number, window: Duration.DurationInput) => Decision
      }
    | undefined
}

export class RateLimit extends Context.Tag("RateLimit")<RateLimit, RateLimitService>() {}

export const storeErrors = Metric.counter("rate_limit.store_errors", {
  description: "Rate-limit store (Redis) commands that failed; the request was counted in-process instead"
})

const seconds = (millis: number) => Math.max(1, Math.ceil(millis / 1000))

const decide = (
  limiter: RateLimiter.RateLimiter,
  key: string,
  limit: number,
  window: Duration.DurationInput,
  tokens: 0 | 1
): Effect.Effect<Decision, RateLimiter.RateLimitStoreError> => {
  const refillMillis = Duration.toMillis(window) / limit
  return limiter.consume({ algorithm: "token-bucket", onExceeded: "fail", key, limit, window, tokens }).pipe(
    Effect.map((result): Decision => {
      const allowed = tokens === 1 || result.remaining >= 1
      return {
        allowed,
        limit,
        remaining: Math.max(0, result.remaining),
        resetAt: Math.ceil((Date.now() + Duration.toMillis(result.resetAfter)) / 1000),
        retryAfter: result.remaining >= 1 ? 0 : seconds(refillMillis)
      }
    }),
    Effect.catchIf(
      (error): error is RateLimiter.RateLimitExceeded => error.reason === "Exceeded",
      (exceeded) =>
        Effect.succeed<Decision>({
          allowed: false,
          limit,
          remaining: 0,
          resetAt: Math.ceil((Date.now() + refillMillis * limit) / 1000),
          retryAfter: seconds(Duration.toMillis(exceeded.retryAfter))
        })
    )
  )
}

/**
 * In-process token buckets, as plain functions (a request spends its token without a fiber step); a sweep a
 * minute drops those that have refilled. The arithmetic is the library's token-bucket store's; its memory store is
 * not used because it never forgets a key (a Map that grows with every client IP ever seen).
 */
interface MemoryBuckets {
  /**
   * Spends `tokens` (0 reads) of `key`'s bucket of `limit` that gets one back every `refillMs`; answers what is left,
   * negative when there were not enough (then nothing is spent).
   */
  readonly take: (key: string, tokens: number, limit: number, refillMs: number, now: number) => number
}

const makeMemoryBuckets = (): MemoryBuckets => {
  const buckets = new Map<string, { tokens: number; lastRefill: number; limit: number; refillMs: number }>()
  let lastSweep = Date.now()
  const sweep = (now: number) => {
    if (now - lastSweep < 60_000) return
    lastSweep = now
    for (const [key, b] of buckets) {
      if (b.tokens + Math.floor((now - b.lastRefill) / b.refillMs) >= b.limit) buckets.delete(key)
    }
  }
  return {
    take: (key, tokens, limit, refillRateMs, now) => {
      sweep(now)
      const refillMs = Math.max(1, refillRateMs)
      let bucket = buckets.get(key)
      if (bucket === undefined) {
        if (tokens === 0) return limit
        bucket = { tokens: limit, lastRefill: now, limit, refillMs }
        buckets.set(key, bucket)
      } else {
        const refilled = Math.floor((now - bucket.lastRefill) / refillMs)
        if (refilled > 0) {
          bucket.tokens = Math.min(limit, bucket.tokens + refilled)
          bucket.lastRefill += refilled * refillMs
        }
      }
      const next = bucket.tokens - tokens
      if (next >= 0) bucket.tokens = next
      return next
    }
  }
}

/**
 * The library's token-bucket limiter (`RateLimiter.consume` with `onExceeded: "fail"`, then `decide` above) over
 * in-process buckets, as one plain function: the same arithmetic and the same decisions, without the effects.
 */
const decideInProcess = (
  buckets: MemoryBuckets,
  key: string,
  limit: number,
  window: Duration.DurationInput,
  tokens: 0 | 1
): Decision => {
  const windowMillis = Duration.toMillis(window)
  const refillMillis = windowMillis / limit
  const now = Date.now()
  const exceeded = (retryAfterMillis: number): Decision => ({
    allowed: false,
    limit,
    remaining: 0,
    resetAt: Math.ceil((now + refillMillis * limit) / 1000),
    retryAfter: seconds(retryAfterMillis)
  })
  if (tokens > limit) return exceeded(windowMillis)
  const remaining = buckets.take(key, tokens, limit, refillMillis, now)
  if (remaining < 0) return exceeded(refillMillis * -remaining)
  return {
    allowed: tokens === 1 || remaining >= 1,
    limit,
    remaining,
    resetAt: Math.ceil((now + refillMillis * (limit - remaining)) / 1000),
    retryAfter: remaining >= 1 ? 0 : seconds(refillMillis)
  }
}

const limiterOver = (store: Layer.Layer<RateLimiter.RateLimiterStore>) =>
  Layer.build(RateLimiter.layer.pipe(Layer.provide(store))).pipe(Effect.map(Context.get(RateLimiter.RateLimiter)))

const make = Effect.gen(function* () {
  const config = yield* Effect.orDie(RateLimitConfig)
  const settings: RateLimitSettings = {
    enabled: config.enabled,
    perCredential: config.perCredential,
    perClientIp: config.perClientIp,
    window: config.window
  }
  if (!config.enabled) {
    const open = (_key: string, limit: number) =>
      Effect.succeed<Decision>({
        allowed: true,
        limit,
        remaining: limit,
        resetAt: Math.ceil(Date.now() / 1000),
        retryAfter: 0
      })
    return RateLimit.of({ settings, consume: open, check: open, inProcess: undefined })
  }

  const buckets = makeMemoryBuckets()
  const local = (tokens: 0 | 1) => (key: string, limit: number, window: Duration.DurationInput) =>
    decideInProcess(buckets, key, limit, window, tokens)
  const inProcess = { consume: local(1), check: local(0) }
  if (Option.isNone(config.redisUrl)) {
    const run = (tokens: 0 | 1) => (key: string, limit: number, window: Duration.DurationInput) =>
      Effect.sync(() => decideInProcess(buckets, key, limit, window, tokens))
    return RateLimit.of({ settings, consume: run(1), check: run(0), inProcess })
  }

  let lastConnectionError = ""
  const shared = yield* limiterOver(
    layerStoreRedis({
      url: config.redisUrl.value,
      commandTimeout: Duration.millis(250),
      prefix: "pcs:ratelimit:",
      onError: (error) => {
        lastConnectionError = error.message
      }
    })
  )
  let lastWarning = 0
  let failedSinceWarning = 0
  const failOpen = (error: RateLimiter.RateLimitStoreError) =>
    Effect.suspend(() => {
      failedSinceWarning++
      const now = Date.now()
      const warn = now - lastWarning >= 30_000
      const failed = failedSinceWarning
      if (warn) {
        lastWarning = now
        failedSinceWarning = 0
      }
      const cause = error.cause instanceof Error ? error.cause.message : String(error.cause)
      return Metric.increment(storeErrors).pipe(
        Effect.zipRight(
          warn
            ? Effect.logWarning(
                "rate-limit store unavailable; counting in this process (at most one warning per 30 s)",
                {
                  error: cause,
                  connection_error: lastConnectionError,
                  failures_since_last_warning: failed
                }
              )
            : Effect.void
        )
      )
    })
  const run = (tokens: 0 | 1) => (key: string, limit: number, window: Duration.DurationInput) =>
    decide(shared, key, limit, window, tokens).pipe(
      Effect.catchAll((error) =>
        Effect.zipRight(
          failOpen(error),
          Effect.sync(() => decideInProcess(buckets, key, limit, window, tokens))
        )
      )
    )
  return RateLimit.of({ settings, consume: run(1), check: run(0), inProcess: undefined })
})

export const RateLimitLive: Layer.Layer<RateLimit> = Layer.scoped(RateLimit, make)
