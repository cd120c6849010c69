/**
 * How authentication finds a session JWT's session (by its `sid`), and records its use. Two implementations with the
 * same behaviour, chosen by `FAST_PATHS` (`credential-cache`, as for API keys: src/ApiKeys/Credentials.ts), under the
 * same tests (test/sessions/sessions.service.test.ts):
 *
 * - `idiomatic`: every request looks its session up (`SessionsRepo.findCredential`, one statement through
 *   `@effect/sql`: the session and its user by primary key). On PostgreSQL this is the one round trip a request
 *   with a session JWT makes to authenticate, as a request with an API key makes one.
 * - `fast`, on SQLite in a file: keeps what a lookup found, by session id, with the number in
 *   `credential_generation` as read before that lookup, and takes the kept row while the number is the same. The
 *   number moves in the transaction of every update and deletion of `sessions` and `users` but a session's own
 *   touch (migration 0022's triggers fail closed), so a session ended, or a user suspended or deleted, by any process
 *   is refused at its next request, as with the twin. Time still passes: the caller judges `expires_at` at `now`.
 *   Bounded: at most `MAX_KEPT` sessions, the one looked up longest ago forgotten first.
 */
import { Effect, Option } from "effect"
import { generationReader } from "../ApiKeys/Credentials.js"
import { FastPathsConfig } from "../Config.js"
import type { SessionCredential } from "../Domain/Session.js"
import { type OrDie, orDie } from "../Sql/Repository.js"
import { SessionsRepo } from "./Repo.js"

/** The sessions the fast implementation keeps at most. */
export const MAX_KEPT = 10_000

export interface SessionStore {
  readonly implementation: "fast" | "idiomatic"
  /** The session `id` with its user's organisation and suspension, as committed; none when it or its user is gone. */
  readonly find: (id: string) => Effect.Effect<Option.Option<SessionCredential>>
  /** Records that the session was used at `now`, unless it was used since `notBefore`. */
  readonly touch: (id: string, now: string, notBefore: string) => Effect.Effect<void>
}

const idiomatic = (repo: OrDie<SessionsRepo>): SessionStore => ({
  implementation: "idiomatic",
  find: repo.findCredential,
  touch: repo.touch
})

interface Kept {
  readonly generation: number
  credential: SessionCredential
}

const fast = (repo: OrDie<SessionsRepo>) =>
  Effect.gen(function* () {
    const twin = idiomatic(repo)
    const reader = yield* generationReader
    if (Option.isNone(reader)) return twin
    const generation = reader.value
    const kept = new Map<string, Kept>()
    const store: SessionStore = {
      implementation: "fast",
      find: (id) =>
        Effect.suspend(() => {
          const seen = generation()
          if (seen === undefined) return twin.find(id)
          const known = kept.get(id)
          if (known !== undefined && known.generation === seen) return Effect.succeed(Option.some(known.credential))
          return Effect.map(twin.find(id), (found) => {
            kept.delete(id)
            if (Option.isSome(found)) {
              kept.set(id, { generation: seen, credential: found.value })
              if (kept.size > MAX_KEPT) {
                const first = kept.keys().next()
                if (first.done !== true) kept.delete(first.value)
              }
            }
            return found
          })
        }),
      touch: (id, now, notBefore) =>
        Effect.map(twin.touch(id, now, notBefore), () => {
          const known = kept.get(id)
          if (known !== undefined) known.credential = { ...known.credential, last_used_at: now }
        })
    }
    return store
  })

/** The store `FAST_PATHS` names, where it can run. */
export class SessionCredentials extends Effect.Service<SessionCredentials>()("SessionCredentials", {
  dependencies: [SessionsRepo.Default],
  scoped: Effect.gen(function* () {
    const repo = orDie(yield* SessionsRepo)
    if (!(yield* Effect.orDie(FastPathsConfig)).has("credential-cache")) return idiomatic(repo)
    return yield* fast(repo)
  })
}) {}
