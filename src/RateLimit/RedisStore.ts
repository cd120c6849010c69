/**
 * The shared store behind `@effect/experimental`'s `RateLimiter` (its `RateLimiterStore` contract; the limiter's
 * arithmetic and errors are the library's): token buckets in Redis, for replicas that share their limits. Only the
 * token bucket is used: it is the algorithm that can be read without spending (`tokens: 0`), which the guards on
 * failed attempts need. (Buckets in this process are src/RateLimit/RateLimit.ts's own.)
 *
 * Why not the library's Redis store: its token bucket writes keys without an expiry, and its Redis client is
 * private, so nothing can listen for connection errors (ioredis then prints `Unhandled error event` on stderr at
 * every reconnect) or make commands fail fast instead of queueing while Redis is away. This store keeps the
 * library's algorithm, forgets a bucket once it is full again (an absent bucket is a full one), and reads the clock
 * of Redis so replicas agree.
 */

import { createHash } from "node:crypto"
import * as RateLimiter from "@effect/experimental/RateLimiter"
import { Duration, Effect, Layer, Redacted } from "effect"
import type { Redis } from "ioredis"

const unused = Effect.dieMessage("fixed-window rate limiting is not used by this service")

/**
 * The library's token-bucket script, with Redis's own clock (`TIME`) instead of each replica's, one hash per key,
 * and an expiry at the moment the bucket would be full again.
 */
const TOKEN_BUCKET = `
local key = KEYS[1]
local tokens = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local overflow = ARGV[4] == "1"
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local state = redis.call("HMGET", key, "tokens", "refill")
local current = tonumber(state[1])
local last = tonumber(state[2])
if not current then
  if tokens == 0 then return limit end
  current = limit
  last = now
end
local refilled = math.floor((now - last) / refill)
if refilled > 0 then
  current = math.min(current + refilled, limit)
  last = last + refilled * refill
end
local next = current - tokens
local stored = next
if next < 0 and not overflow then stored = current end
if tokens > 0 or refilled > 0 then
  redis.call("HSET", key, "tokens", stored, "refill", last)
  redis.call("PEXPIRE", key, math.max(1, math.ceil((limit - stored) * refill - (now - last))))
end
return next
`

const TOKEN_BUCKET_SHA = createHash("sha1").update(TOKEN_BUCKET).digest("hex")

/** Runs the script by its digest, loading it on the first `NOSCRIPT`; answers the number it returns. */
const tokenBucket = async (redis: Redis, args: ReadonlyArray<string | number>): Promise<number> => {
  const result: unknown = await redis.evalsha(TOKEN_BUCKET_SHA, 1, ...args).catch((error: unknown) => {
    if (error instanceof Error && error.message.includes("NOSCRIPT")) return redis.eval(TOKEN_BUCKET, 1, ...args)
    throw error
  })
  if (typeof result !== "number") throw new Error(`token bucket script answered ${String(result)}`)
  return result
}

export interface RedisStoreOptions {
  readonly url: Redacted.Redacted
  /** Longest wait for one command before the request goes on without Redis. */
  readonly commandTimeout: Duration.Duration
  readonly prefix: string
  /** Called on every connection error (the caller rate-limits its log). */
  readonly onError: (error: Error) => void
}

/**
 * Buckets shared through Redis. Commands never queue while Redis is away (they fail at once, and the caller fails
 * open); the client reconnects in the background. Start-up waits briefly for the connection, never for long.
 */
export const layerStoreRedis = (options: RedisStoreOptions): Layer.Layer<RateLimiter.RateLimiterStore> =>
  Layer.scoped(
    RateLimiter.RateLimiterStore,
    Effect.gen(function* () {
      // The client is loaded only when Redis is configured: with the node network modules it brings (which the
      // PostgreSQL driver shares), it would otherwise count in every idle server's memory (bench/README.md).
      const { Redis } = yield* Effect.promise(() => import("ioredis"))
      const redis = yield* Effect.acquireRelease(
        Effect.sync(() => {
          const client = new Redis(Redacted.value(options.url), {
            enableOfflineQueue: false,
            maxRetriesPerRequest: 0,
            commandTimeout: Duration.toMillis(options.commandTimeout),
            connectTimeout: 2_000,
            retryStrategy: (times) => Math.min(times * 100, 2_000)
          })
          client.on("error", options.onError)
          return client
        }),
        (client) => Effect.promise(() => client.quit().catch(() => client.disconnect()))
      )
      yield* Effect.async<void>((resume) => {
        if (redis.status === "ready") return resume(Effect.void)
        redis.once("ready", () => resume(Effect.void))
      }).pipe(
        Effect.timeout(Duration.seconds(2)),
        Effect.catchAll(() =>
          Effect.logWarning("Redis for rate limits does not answer yet; counting in this process until it does")
        )
      )
      return RateLimiter.RateLimiterStore.of({
        fixedWindow: () => unused,
        tokenBucket: (bucket) =>
          Effect.tryPromise({
            try: () =>
              tokenBucket(redis, [
                `${options.prefix}${bucket.key}`,
                bucket.tokens,
                Math.max(1, Duration.toMillis(bucket.refillRate)),
                bucket.limit,
                bucket.allowOverflow ? 1 : 0
              ]),
            catch: (cause) => new RateLimiter.RateLimitStoreError({ message: "Redis rate-limit command failed", cause })
          })
      })
    })
  )
