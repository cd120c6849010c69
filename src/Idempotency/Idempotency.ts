/**
 * Idempotent requests: a user's `Idempotency-Key` names one change and its answer for `IDEMPOTENCY_TTL`.
 *
 * `run` does the change inside one database transaction that also takes the key (a lock on PostgreSQL; SQLite has
 * one writer), looks it up, and — when the answer is one to keep — records the answer with the key before the
 * commit. So the change and its recorded answer commit together or not at all: after any crash the key is either
 * free and nothing was changed, or it holds the answer of the one change that was made (docs/idempotency.md).
 *
 * Nothing here knows HTTP: the caller hands the change and says what answer its result is (src/Idempotency/Http.ts,
 * the wrapper a `POST` endpoint's handler opts into).
 */
import type { SqlError } from "@effect/sql/SqlError"
import { Context, Data, Duration, Effect, Either, Option } from "effect"
import { IdempotencyConfig } from "../Config.js"
import { IdempotencyKeyInUse, IdempotencyKeyReused } from "../Domain/Errors.js"
import { sha256Hex } from "../Domain/Secrets.js"
import { Events } from "../Events/Events.js"
import { IdempotencyRepo } from "./Repo.js"

/**
 * The header, as the server's request headers name it (lower case). What a key may be (1–255 visible ASCII
 * characters) is the contract's (`IdempotencyKeyHeader`, src/Contract/Idempotency.ts), checked before the handler.
 */
export const KEY_HEADER = "idempotency-key"

/** A JSON value written one way whatever its member order and whitespace: members sorted by name, no spaces. */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (value !== null && typeof value === "object") {
    const members = Object.entries(value)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, member]) => `${JSON.stringify(name)}:${canonicalJson(member)}`)
    return `{${members.join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

/**
 * What a key is compared by: method, path and body as parsed JSON (text that is not JSON, or no body, as sent).
 * Hashed, so a row holds 64 characters whatever the body's size.
 */
export const requestHash = (method: string, path: string, bodyText: string): string => {
  // Text that is not JSON is compared as sent (a POST without a payload ignores its body).
  const body =
    bodyText.trim() === ""
      ? bodyText
      : Either.getOrElse(
          Either.try(() => canonicalJson(JSON.parse(bodyText))),
          () => bodyText
        )
  return hashOf(method, path, body)
}

/** The same hash for a body already parsed as JSON (the server parses a `/v1` body once, before routing). */
export const requestHashOfJson = (method: string, path: string, body: unknown): string =>
  hashOf(method, path, canonicalJson(body))

const hashOf = (method: string, path: string, body: string): string => sha256Hex(`${method} ${path}\n${body}`)

/** The answers kept with a key: 2xx, and 4xx but 401, 403 and 429 (those depend on the credential or the moment). */
export const isRecorded = (status: number): boolean =>
  (status >= 200 && status < 300) ||
  (status >= 400 && status < 500 && status !== 401 && status !== 403 && status !== 429)

/** An answer as recorded and replayed: status, `Content-Type` and the body's bytes (UTF-8 text). */
export interface Answer {
  readonly status: number
  readonly contentType: string | null
  readonly body: string
}

/** What `run` did: the change ran (its result), or the key already held an answer (replay it). */
export type Outcome<A> =
  | { readonly _tag: "Ran"; readonly value: A }
  | { readonly _tag: "Replayed"; readonly answer: Answer }

/**
 * What runs at the two moments of a keyed change a crash matters most at: with its answer recorded, just before the
 * transaction commits, and just after it has. Nothing, unless a layer says otherwise: the crash tests run the service
 * with one that kills the process there (test/support/crash-main.ts, test/e2e/idempotency-crash.test.ts).
 */
export class CommitHooks extends Context.Reference<CommitHooks>()("Idempotency/CommitHooks", {
  defaultValue: (): { readonly beforeCommit: Effect.Effect<void>; readonly afterCommit: Effect.Effect<void> } => ({
    beforeCommit: Effect.void,
    afterCommit: Effect.void
  })
}) {}

/** A result whose answer is not kept: carried out of the transaction as a failure, which rolls the change back. */
class NotRecorded<A> extends Data.TaggedError("NotRecorded")<{ readonly value: A }> {}

export class Idempotency extends Effect.Service<Idempotency>()("Idempotency", {
  dependencies: [IdempotencyRepo.Default, Events.Default],
  effect: Effect.gen(function* () {
    const repo = yield* IdempotencyRepo
    const events = yield* Events
    const { ttl } = yield* Effect.orDie(IdempotencyConfig)
    const hooks = yield* CommitHooks
    const ttlMillis = Duration.toMillis(ttl)
    /**
     * Keys with a request in progress in this process: a second request is refused at once, without waiting for a
     * connection or (on SQLite) for the first one's transaction to end. Other processes are kept out by the lock.
     */
    const inProgress = new Set<string>()

    /**
     * Runs `change` as `userId`'s request `hash` under `key`, unless the key already holds an answer: the same
     * request's is replayed, another request's is `IdempotencyKeyReused`; a key in use by a request still running
     * is `IdempotencyKeyInUse`. `answerOf` says what answer a result is (it dies for one it cannot say, which rolls
     * the change back); a recorded one (`isRecorded`) is written with the key and commits with the change; any other
     * rolls the change back, and the key stays free.
     */
    const run = <A, E, R>(
      userId: string,
      key: string,
      hash: string,
      change: Effect.Effect<A, E, R>,
      answerOf: (value: A) => Effect.Effect<Answer>
    ): Effect.Effect<Outcome<A>, E | SqlError | IdempotencyKeyInUse | IdempotencyKeyReused, R> => {
      const id = `${userId} ${key}`
      const inTransaction = Effect.gen(function* () {
        if (!(yield* repo.lock(userId, key))) return yield* Effect.fail(inUse())
        const now = new Date()
        const found = yield* repo.find({ user_id: userId, idempotency_key: key, now: now.toISOString() })
        if (Option.isSome(found)) {
          if (found.value.request_hash !== hash) {
            return yield* new IdempotencyKeyReused({
              message: "This Idempotency-Key was already used with another method, path or body; use a new key"
            })
          }
          const { body, content_type, status } = found.value
          const replayed: Outcome<A> = { _tag: "Replayed", answer: { status, contentType: content_type, body } }
          return { outcome: replayed }
        }
        const value = yield* change
        const answer = yield* answerOf(value)
        if (!isRecorded(answer.status)) return yield* new NotRecorded({ value })
        yield* repo.record({
          user_id: userId,
          idempotency_key: key,
          request_hash: hash,
          status: answer.status,
          content_type: answer.contentType,
          body: answer.body,
          created_at: now.toISOString(),
          expires_at: new Date(now.getTime() + ttlMillis).toISOString()
        })
        yield* hooks.beforeCommit
        const ran: Outcome<A> = { _tag: "Ran", value }
        return { outcome: ran }
      })
      const isNotRecorded = (error: unknown): error is NotRecorded<A> => error instanceof NotRecorded
      // The key is marked in progress and unmarked as one bracket, so an interruption cannot leave it marked.
      return Effect.acquireUseRelease(
        Effect.suspend(() => {
          if (inProgress.has(id)) return Effect.fail(inUse())
          inProgress.add(id)
          return Effect.void
        }),
        () =>
          // The outbox's own transaction: the change's events nest in it, and the deliveries they queue go to the
          // delivery worker once this commits (not before, when another connection could not see them yet).
          events.transaction(inTransaction).pipe(
            Effect.tap(({ outcome }) => (outcome._tag === "Ran" ? hooks.afterCommit : Effect.void)),
            Effect.map(({ outcome }) => outcome),
            Effect.catchIf(isNotRecorded, (unrecorded) =>
              Effect.succeed({ _tag: "Ran", value: unrecorded.value } satisfies Outcome<A>)
            )
          ),
        () => Effect.sync(() => inProgress.delete(id))
      ).pipe(Effect.withSpan("Idempotency.run"))
    }

    return { run, pruneExpired: repo.pruneExpired } as const
  })
}) {}

const inUse = () =>
  new IdempotencyKeyInUse({
    message: "A request with this Idempotency-Key is still being processed; retry it in a moment"
  })
