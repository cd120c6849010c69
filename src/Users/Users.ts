import { Effect, Option } from "effect"
import { PasswordHashMemoryConfig } from "../Config.js"
import { changesOf } from "../Domain/Audit.js"
import { Conflict, NotFound, ValidationFailed } from "../Domain/Errors.js"
import { makeId } from "../Domain/Ids.js"
import { validName } from "../Domain/Payload.js"
import { nowIso } from "../Domain/Time.js"
import { User, type UserPatch } from "../Domain/User.js"
import { Events } from "../Events/Events.js"
import { traced } from "../Observability/Traced.js"
import { definedOnly, isUniqueViolation } from "../Sql/Errors.js"
import { readForWrite } from "../Sql/Preconditions.js"
import { dieOnSqlError, orDie } from "../Sql/Repository.js"
import { UsersRepo } from "./Repo.js"

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

export interface CreateUser {
  readonly email: string
  readonly name: string
  readonly password?: string | undefined
}

export class Users extends Effect.Service<Users>()("Users", {
  dependencies: [UsersRepo.Default, Events.Default],
  effect: Effect.gen(function* () {
    const usersRepo = yield* UsersRepo
    const repo = orDie(usersRepo)
    const events = yield* Events
    const transaction = <A, E, R>(change: Effect.Effect<A, E, R>) => dieOnSqlError(events.transaction(change))
    const memoryCost = yield* Effect.orDie(PasswordHashMemoryConfig)

    /** A new argon2id hash of `password`: two passes over `PASSWORD_HASH_MEMORY_KIB` of memory. */
    const hashPassword = (password: string) =>
      Effect.promise(() => Bun.password.hash(password, { algorithm: "argon2id", memoryCost, timeCost: 2 }))

    /** A new user, with an organisation of their own and the record `user.created`, in one transaction. */
    const create = traced("Users.create")(function* (input: CreateUser) {
      const email = input.email.trim().toLowerCase()
      if (!EMAIL.test(email) || email.length > 254) {
        return yield* ValidationFailed.field("email", "must be an email address")
      }
      const name = yield* validName("name")(input.name)
      if (input.password !== undefined && input.password.length < 8) {
        return yield* ValidationFailed.field("password", "must be at least 8 characters")
      }
      const password_hash = input.password === undefined ? null : yield* hashPassword(input.password)
      const now = nowIso()
      const org = { id: makeId("org"), name: `${name}'s organization`, created_at: now }
      const user = { id: makeId("user"), org_id: org.id, email, name, password_hash, created_at: now }
      // The repository as it is, for its unique-key clash (a taken email) is the caller's 409.
      yield* Effect.zipRight(usersRepo.insertOrg(org), usersRepo.insert(user)).pipe(
        Effect.zipRight(events.record("user.created", { type: "user", id: user.id }, { user: user.id, name })),
        events.transaction,
        Effect.catchTag("SqlError", (error) =>
          isUniqueViolation(error)
            ? Effect.fail(new Conflict({ message: `A user with email ${email} already exists` }))
            : Effect.die(error)
        )
      )
      return yield* Effect.flatMap(
        repo.findById(user.id),
        Option.match({
          onNone: () => Effect.dieMessage("user vanished after insert"),
          onSome: Effect.succeed
        })
      )
    })

    const get = traced("Users.get")(function* (id: string) {
      const found = yield* repo.findById(id)
      return yield* Option.match(found, {
        onNone: () => Effect.fail(NotFound.resource("user", id)),
        onSome: Effect.succeed
      })
    })

    const updateMe = traced("Users.updateMe")(function* (id: string, patch: UserPatch) {
      const before = yield* readForWrite(User, "users", id, get(id))
      const updated = yield* repo.update(id, definedOnly(patch), nowIso())
      if (Option.isNone(updated)) return yield* NotFound.resource("user", id)
      yield* events.record(
        "user.updated",
        { type: "user", id },
        { user: id, name: updated.value.name, changes: changesOf(before, updated.value, ["name", "avatar_url"]) }
      )
      return updated.value
    }, transaction)

    /** `cli users set-password`: a new argon2id hash replaces the old one. */
    const setPassword = traced("Users.setPassword")(function* (id: string, password: string) {
      if (password.length < 8) return yield* ValidationFailed.field("password", "must be at least 8 characters")
      const hash = yield* hashPassword(password)
      const updated = yield* repo.setPasswordHash(id, hash, nowIso()).pipe(
        Effect.tap((done) =>
          done
            ? events.record(
                "user.updated",
                { type: "user", id },
                // That the password changed, never what it was or is.
                { user: id, changes: { password: ["[redacted]", "[redacted]"] } }
              )
            : Effect.void
        ),
        transaction
      )
      if (!updated) return yield* NotFound.resource("user", id)
      return yield* get(id)
    })

    /**
     * `cli users suspend` / `users reactivate`: while `suspended_at` is set, every credential of the user is refused
     * (their keys' lookup, their OAuth tokens' and their sessions' join on it) and they cannot sign in; nothing of
     * theirs is deleted, so reactivating restores what has not expired meanwhile. Suspending a suspended user, or
     * reactivating an active one, changes nothing and records nothing.
     */
    const setSuspended = (id: string, suspended: boolean) =>
      Effect.gen(function* () {
        const user = yield* get(id)
        const row = yield* repo.setSuspended(id, suspended ? nowIso() : null).pipe(
          Effect.tap((found) =>
            Option.isSome(found) && found.value.changed
              ? events.record(
                  suspended ? "user.suspended" : "user.reactivated",
                  { type: "user", id },
                  {
                    user: id,
                    name: user.name
                  }
                )
              : Effect.void
          ),
          transaction
        )
        if (Option.isNone(row)) return yield* NotFound.resource("user", id)
        return { id: user.id, email: user.email, name: user.name, suspended_at: row.value.suspended_at }
      })
    const suspend = traced("Users.suspend")(function* (id: string) {
      return yield* setSuspended(id, true)
    })
    const reactivate = traced("Users.reactivate")(function* (id: string) {
      return yield* setSuspended(id, false)
    })

    /** What signing in reads: the user with this (lower-cased) email and their password hash. */
    const findCredentials = (email: string) => repo.findCredentials(email)

    /** The CLI's `--email`: the user with this address (any case, surrounding spaces ignored). */
    const getByEmail = traced("Users.getByEmail")(function* (email: string) {
      const normalized = email.trim().toLowerCase()
      const found = yield* findCredentials(normalized)
      return yield* Option.match(found, {
        onNone: () => Effect.fail(new NotFound({ message: `No user with email ${normalized}` })),
        onSome: (credentials) => get(credentials.id)
      })
    })

    /** `cli users list`: every user, oldest first, without the organisation. */
    const listAll = traced("Users.listAll")(function* () {
      return yield* repo.listAll()
    })

    /**
     * `cli users delete`. Refused while the user owns a project, belongs to a team or started a deployment that
     * is still on record: deleting them would delete those (or change a team) without the events the spec
     * promises. Their keys, webhooks and OAuth grants go with them, in the transaction that records `user.deleted`
     * (in their own log: no foreign key ties a record to its user, so it outlives them until the retention sweep).
     */
    const remove = traced("Users.remove")(function* (id: string) {
      const user = yield* get(id)
      const { projects, teams, deployments } = yield* repo.holdings(id)
      const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`
      const held = [
        ...(projects > 0 ? [`owns ${plural(projects, "project")} (delete them first)`] : []),
        ...(teams > 0 ? [`belongs to ${plural(teams, "team")} (leave them first)`] : []),
        ...(deployments > 0 ? [`started ${plural(deployments, "deployment")} in projects still on record`] : [])
      ]
      if (held.length > 0)
        return yield* new Conflict({ message: `User ${user.name} (${user.email}) still ${held.join(", ")}` })
      if (!(yield* repo.remove(id))) return yield* NotFound.resource("user", id)
      yield* events.record("user.deleted", { type: "user", id }, { user: id, name: user.name })
      return { id, deleted: true } as const
    }, transaction)

    return {
      create,
      hashPassword,
      get,
      getByEmail,
      updateMe,
      setPassword,
      findCredentials,
      listAll,
      remove,
      suspend,
      reactivate
    } as const
  })
}) {}
