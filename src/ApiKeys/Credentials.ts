/**
 * How authentication finds an API key's credential (by the key's prefix, then its hash), and records the key's use.
 * Two implementations with the same behaviour, chosen by `FAST_PATHS` (`credential-cache`; docs/fast-paths.md), under
 * the same tests (test/apikeys/credentials.test.ts):
 *
 * - `idiomatic`: every request looks its key up (`ApiKeysRepo.findByPrefix`, a statement through `@effect/sql`) and
 *   compares the hashes of the keys with its prefix.
 * - `fast`, on SQLite in a file: keeps what a lookup found, by prefix, with the number in `credential_generation`
 *   (migration 0017) as read before that lookup. A later request takes the kept credential while the number is
 *   the same, read as one prepared statement on a connection of this module's own: the lookup (a join through
 *   `@effect/sql`, its rows decoded by schema) costs several times that read, and it is on every authenticated
 *   request.
 *
 * What the fast one must hold, for it answers for the twin:
 * - The number changes in the transaction of every write that could change a credential, whoever writes it
 *   (triggers: a key revoked, deleted, its expiry or scopes changed; a user deleted or moved to another
 *   organisation), and it is read before the lookup it guards, so a kept credential is never older than the last
 *   such commit: a key revoked by any process fails at its next request, as with the twin.
 * - The own connection reads committed state only, as the twin's lookup does (which waits for an open transaction).
 * - Time still passes: an `active` key kept past its `expires_at` answers `expired`.
 * - A key made under a prefix already kept is found: when no kept key has the hash, the prefix is looked up again
 *   (making a key moves no number), so a made-up key costs what it costs the twin.
 * - `last_used_at` is written at most once a minute per key, as with the twin: the kept credential learns of its own
 *   touch (which changes nothing the number watches).
 * - Bounded: at most `MAX_KEPT` prefixes, the one looked up longest ago forgotten first; only prefixes that found a
 *   key are kept, so made-up keys cannot crowd real ones out.
 * - When the number cannot be read (an in-memory database, the migration not applied yet, a failed read), the
 *   twin's lookup answers.
 *
 * On PostgreSQL reading the number would be a round trip, as the lookup is: the twin runs there.
 */

import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Option } from "effect"
import { FastPathsConfig } from "../Config.js"
import type { KeyCredential } from "../Domain/ApiKey.js"
import { sameHash } from "../Domain/Secrets.js"
import { SqliteFile } from "../Sql/Client.js"
import { ApiKeysRepo } from "./Repo.js"

/** The prefixes the fast implementation keeps at most. */
export const MAX_KEPT = 10_000

export interface CredentialStore {
  readonly implementation: "fast" | "idiomatic"
  /**
   * The key whose prefix is `prefix` and whose SHA-256 is `hash` (compared in constant time), with its status at
   * `now` (an ISO timestamp), as committed.
   */
  readonly find: (prefix: string, hash: string, now: string) => Effect.Effect<Option.Option<KeyCredential>>
  /** Records that `credential` (found under `prefix`) was used at `now`, unless it was used since `notBefore`. */
  readonly touch: (
    prefix: string,
    credential: KeyCredential,
    now: string,
    notBefore: string
  ) => Effect.Effect<void, SqlError>
}

const withHash = (credentials: ReadonlyArray<KeyCredential>, hash: string): Option.Option<KeyCredential> =>
  Option.fromNullable(credentials.find((credential) => sameHash(credential.key_hash, hash)))

const idiomatic = (repo: ApiKeysRepo): CredentialStore => ({
  implementation: "idiomatic",
  find: (prefix, hash, now) =>
    Effect.map(Effect.orDie(repo.findByPrefix(prefix, now)), (found) => withHash(found, hash)),
  touch: (_prefix, credential, now, notBefore) => Effect.asVoid(repo.touch(credential.id, now, notBefore))
})

/** `credential` as of `now`: an `active` one whose expiry has come is `expired`. */
const asOf = (credential: KeyCredential, now: string): KeyCredential =>
  credential.status === "active" && credential.expires_at !== null && credential.expires_at <= now
    ? { ...credential, status: "expired" }
    : credential

interface Kept {
  readonly generation: number
  credentials: ReadonlyArray<KeyCredential>
}

/** The SQLite file the service's client has open, if it is one (not `:memory:`, not PostgreSQL). */
const sqliteFile = Effect.map(
  Effect.serviceOption(SqliteFile),
  Option.filter((filename) => filename !== ":memory:")
)

/**
 * The number in `credential_generation` (migrations 0017, 0022), read as one prepared statement on a read-only
 * connection of its own to the SQLite file the service has open; `undefined` when it cannot be read. None when the
 * database is not an SQLite file (PostgreSQL, `:memory:`) or the connection cannot be opened: the caller's twin
 * lookup answers then. Shared by the API keys' store here and the sessions' (src/Sessions/Credentials.ts).
 */
export const generationReader = Effect.gen(function* () {
  const file = yield* sqliteFile
  if (Option.isNone(file)) return Option.none<() => number | undefined>()
  const filename = file.value
  const { Database } = yield* Effect.promise(() => import("bun:sqlite"))
  const opened = yield* Effect.option(
    Effect.acquireRelease(
      Effect.try(() => {
        const db = new Database(filename, { create: false })
        db.run("PRAGMA query_only = 1")
        db.run("PRAGMA busy_timeout = 100")
        return db
      }),
      (db) => Effect.sync(() => db.close())
    )
  )
  if (Option.isNone(opened)) return Option.none<() => number | undefined>()
  const db = opened.value
  let read: ReturnType<typeof db.query<{ n: number }, []>> | undefined
  const generation = (): number | undefined => {
    try {
      read ??= db.query<{ n: number }, []>("SELECT n FROM credential_generation WHERE id = 1")
      return read.get()?.n
    } catch {
      return undefined
    }
  }
  return Option.some(generation)
})

const fast = (repo: ApiKeysRepo) =>
  Effect.gen(function* () {
    const twin = idiomatic(repo)
    const reader = yield* generationReader
    if (Option.isNone(reader)) return twin
    const generation = reader.value
    const kept = new Map<string, Kept>()
    const keep = (prefix: string, generation: number, credentials: ReadonlyArray<KeyCredential>) => {
      if (credentials.length === 0) return
      kept.delete(prefix)
      kept.set(prefix, { generation, credentials })
      if (kept.size > MAX_KEPT) {
        const first = kept.keys().next()
        if (first.done !== true) kept.delete(first.value)
      }
    }
    const store: CredentialStore = {
      implementation: "fast",
      find: (prefix, hash, now) =>
        Effect.suspend(() => {
          const seen = generation()
          if (seen === undefined) return twin.find(prefix, hash, now)
          const known = kept.get(prefix)
          if (known !== undefined && known.generation === seen) {
            const match = withHash(known.credentials, hash)
            if (Option.isSome(match)) return Effect.succeed(Option.some(asOf(match.value, now)))
            // None of the kept keys: one made under this prefix since (which moves no number), or a made-up one.
          }
          return Effect.map(Effect.orDie(repo.findByPrefix(prefix, now)), (found) => {
            keep(prefix, seen, found)
            return withHash(found, hash)
          })
        }),
      touch: (prefix, credential, now, notBefore) =>
        Effect.map(twin.touch(prefix, credential, now, notBefore), () => {
          const known = kept.get(prefix)
          if (known !== undefined) {
            known.credentials = known.credentials.map((one) =>
              one.id === credential.id ? { ...one, last_used_at: now } : one
            )
          }
        })
    }
    return store
  })

/** The store `FAST_PATHS` names, where it can run. */
export class Credentials extends Effect.Service<Credentials>()("Credentials", {
  dependencies: [ApiKeysRepo.Default],
  scoped: Effect.gen(function* () {
    const repo = yield* ApiKeysRepo
    if (!(yield* Effect.orDie(FastPathsConfig)).has("credential-cache")) return idiomatic(repo)
    return yield* fast(repo)
  })
}) {}
