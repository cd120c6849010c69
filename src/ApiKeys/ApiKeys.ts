import { Effect, Option } from "effect"
import type { ApiKeySort, ApiKeyStatus, CreatedApiKey, NewApiKey } from "../Domain/ApiKey.js"
import { Forbidden, NotFound, Unauthorized, ValidationFailed } from "../Domain/Errors.js"
import { ApiKeyId, makeId, randomBase62 } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import type { Principal } from "../Domain/Principal.js"
import { grants } from "../Domain/Scopes.js"
import { sha256Hex } from "../Domain/Secrets.js"
import { nowIso } from "../Domain/Time.js"
import { Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { untaggedIfMatch } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { Credentials } from "./Credentials.js"
import { ApiKeysRepo } from "./Repo.js"

export const KEY_PREFIX = "pcs_"
const KEY_PATTERN = /^pcs_[0-9A-Za-z]{40}$/
const DISPLAY_PREFIX_LENGTH = 12
const TOUCH_INTERVAL_MS = 60_000

export class ApiKeys extends Effect.Service<ApiKeys>()("ApiKeys", {
  dependencies: [ApiKeysRepo.Default, Credentials.Default, Events.Default],
  effect: Effect.gen(function* () {
    const repo = orDie(yield* ApiKeysRepo)
    const credentials = yield* Credentials
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))

    /** The audit record of a change to a key (never its value). */
    const audit = (action: "api_key.created" | "api_key.revoked", key: { id: string; name: string }, owner: string) =>
      events.record(action, { type: "api_key", id: key.id }, { user: owner, name: key.name })

    /** Makes a key for `userId`. The value is returned here and never again; only its SHA-256 is kept. */
    const issue = traced("ApiKeys.issue")(function* (userId: string, input: NewApiKey) {
      const now = nowIso()
      const expires_at = input.expires_at ?? null
      if (expires_at !== null && expires_at <= now) {
        return yield* ValidationFailed.field("expires_at", "must be in the future")
      }
      const scopes = Array.from(new Set(input.scopes))
      const key = `${KEY_PREFIX}${randomBase62(40)}`
      const record = {
        id: ApiKeyId.make(makeId("apiKey")),
        user_id: userId,
        name: input.name,
        scopes,
        prefix: key.slice(0, DISPLAY_PREFIX_LENGTH),
        key_hash: sha256Hex(key),
        created_at: now,
        expires_at
      }
      yield* repo.insert(record).pipe(Effect.zipRight(audit("api_key.created", record, userId)), transaction)
      const created: CreatedApiKey = {
        id: record.id,
        name: record.name,
        scopes,
        prefix: record.prefix,
        status: "active",
        created_at: now,
        expires_at,
        last_used_at: null,
        revoked_at: null,
        key
      }
      return created
    })

    /**
     * Whether this credential may create `input`: it may hand on only scopes it has, and OAuth tokens manage no keys.
     * A rule of the credential, not of stored state: the `Idempotent` wrapper checks it before a key's replay too.
     */
    const mayCreate = (principal: Principal, input: NewApiKey): Effect.Effect<void, Forbidden> => {
      if (principal.credential.kind === "oauth") {
        return Effect.fail(new Forbidden({ message: "OAuth access tokens cannot manage API keys" }))
      }
      const missing = input.scopes.filter((scope) => !grants(principal.scopes, scope))
      if (missing.length === 0) return Effect.void
      return Effect.fail(
        new Forbidden({
          message: `This credential cannot grant scope${missing.length > 1 ? "s" : ""} it lacks: ${missing.join(", ")}`
        })
      )
    }

    /** `POST /v1/api-keys`. */
    const create = traced("ApiKeys.create")(function* (principal: Principal, input: NewApiKey) {
      yield* mayCreate(principal, input)
      return yield* issue(principal.userId, input)
    })

    const list = traced("ApiKeys.list")(function* (principal: Principal, query: ListQuery<ApiKeySort, ApiKeyStatus>) {
      if (principal.credential.kind === "oauth") {
        return yield* new Forbidden({ message: "OAuth access tokens cannot manage API keys" })
      }
      return yield* repo.list(principal.userId, query, nowIso())
    })

    /**
     * Revocation is immediate and idempotent: a key already revoked answers the same and records nothing. The
     * statement says whether it revoked the key, so of concurrent revocations only the one that did records it.
     */
    const revoke = traced("ApiKeys.revoke")(function* (principal: Principal, id: ApiKeyId) {
      if (principal.credential.kind === "oauth") {
        return yield* new Forbidden({ message: "OAuth access tokens cannot manage API keys" })
      }
      const found = yield* repo.find(principal.userId, id, nowIso())
      if (Option.isNone(found)) return yield* NotFound.resource("API key", id)
      yield* untaggedIfMatch
      yield* repo.revoke(principal.userId, id, nowIso()).pipe(
        Effect.tap(
          Option.match({
            onNone: () => Effect.void,
            onSome: (key) => audit("api_key.revoked", key, principal.userId)
          })
        ),
        transaction
      )
    })

    /** Turns a `pcs_…` bearer into a principal, or fails with 401 (unknown, expired or revoked alike). */
    const authenticate = traced("ApiKeys.authenticate")(function* (token: string) {
      // Built only when it is the answer: an error object (and its stack) per request costs.
      const invalid = () => new Unauthorized({ message: "The API key is invalid, expired or revoked" })
      if (!KEY_PATTERN.test(token)) return yield* invalid()
      const now = new Date()
      const hash = sha256Hex(token)
      const prefix = token.slice(0, DISPLAY_PREFIX_LENGTH)
      const found = yield* credentials.find(prefix, hash, now.toISOString())
      if (Option.isNone(found) || found.value.status !== "active") return yield* invalid()
      const match = found.value
      const notBefore = new Date(now.getTime() - TOUCH_INTERVAL_MS).toISOString()
      if (match.last_used_at === null || match.last_used_at < notBefore) {
        yield* credentials
          .touch(prefix, match, now.toISOString(), notBefore)
          .pipe(Effect.catchAll((error) => Effect.logWarning("could not record last_used_at", error)))
      }
      const principal: Principal = {
        userId: match.user_id,
        name: match.user_name,
        orgId: match.org_id,
        scopes: match.scopes,
        credential: { kind: "api_key", id: match.id }
      }
      return principal
    })

    /** `cli api-keys list`: every key (or one user's) with its owner, oldest first; never the key itself. */
    const listAll = traced("ApiKeys.listAll")(function* (userId: string | null) {
      return yield* repo.listAll(userId, nowIso())
    })

    /**
     * `cli api-keys revoke`: any user's key, idempotently (a revoked key keeps its first `revoked_at`, and revoking
     * it again records nothing).
     */
    const revokeAny = traced("ApiKeys.revokeAny")(function* (id: string) {
      const revoked = yield* repo.revokeAny(id, nowIso()).pipe(
        Effect.tap(
          Option.match({
            onNone: () => Effect.void,
            onSome: ({ changed, key }) => (changed ? audit("api_key.revoked", key, key.user_id) : Effect.void)
          })
        ),
        transaction
      )
      if (Option.isNone(revoked)) return yield* NotFound.resource("API key", id)
      return revoked.value.key
    })

    return { issue, mayCreate, create, list, revoke, authenticate, listAll, revokeAny } as const
  })
}) {}
