/**
 * Test fixtures made in this process with the service's own layers (`Users`, `ApiKeys`, `Teams` over the
 * `SqlClient` that `DATABASE_URL` selects), against a database a server has already migrated: a user costs a few
 * milliseconds instead of two CLI processes. Keys come from `ApiKeys.issue`, the code path behind both the CLI and
 * `POST /v1/api-keys`, so nothing is faked. One runtime per database, built on first use; `dispose()` closes it.
 */
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { ConfigProvider, Effect, Layer, ManagedRuntime, Schema } from "effect"
import { ApiKeys } from "../../src/ApiKeys/ApiKeys.ts"
import { KeyName, KeyScopes } from "../../src/Domain/ApiKey.ts"
import { KeyRingLive, keyRingOf } from "../../src/Secrets/KeyRing.ts"
import { SqlClientLive, SqlLive } from "../../src/Sql/Client.ts"
import type { TeamRole } from "../../src/Teams/Api.ts"
import { Teams } from "../../src/Teams/Teams.ts"
import { Users } from "../../src/Users/Users.ts"
import { secretsSettings, TEST_PASSWORD_HASH_MEMORY_KIB } from "./secrets.ts"

/**
 * Settings given to the service's own configuration as the environment would give them, and nothing else but the
 * suite's password-hash cost (`TEST_PASSWORD_HASH_MEMORY_KIB`) unless they name one.
 */
export const withSettings = (settings: Readonly<Record<string, string>>) =>
  Layer.setConfigProvider(
    ConfigProvider.fromMap(
      new Map(
        Object.entries({
          PASSWORD_HASH_MEMORY_KIB: TEST_PASSWORD_HASH_MEMORY_KIB,
          // On PostgreSQL the key ring is required: the test key, unless the settings name one.
          ...secretsSettings(settings.DATABASE_URL ?? ""),
          ...settings
        })
      )
    )
  )

export { secretsSettings, TEST_SECRETS_KEY } from "./secrets.ts"

/** The key ring text a server on `databaseUrl` uses unless given another: the test key, or `secrets.key` beside the file. */
export const secretsKeyOf = (databaseUrl: string): string =>
  secretsSettings(databaseUrl).SECRETS_KEY ??
  readFileSync(join(dirname(databaseUrl.replace(/^sqlite:(\/\/)?/, "")), "secrets.key"), "utf8").trim()

/** `value` as a server on `databaseUrl` stores it for the row `rowId` (src/Secrets/KeyRing.ts): for rows a test writes. */
export const storedSecret = (databaseUrl: string, value: string, rowId: string): Promise<string> =>
  Effect.runPromise(Effect.flatMap(keyRingOf(secretsKeyOf(databaseUrl)), (ring) => ring.encrypt(value, rowId)))

/** The layer of a database URL: `DATABASE_URL` (and on PostgreSQL the test `SECRETS_KEY`), nothing else. */
export const withDatabaseUrl = (databaseUrl: string) =>
  withSettings({ DATABASE_URL: databaseUrl, ...secretsSettings(databaseUrl) })

const services = (sql: typeof SqlLive) =>
  Layer.mergeAll(Users.Default, ApiKeys.Default, Teams.Default).pipe(Layer.provideMerge(sql))

export type FixtureServices = Layer.Layer.Success<ReturnType<typeof services>>

export interface NewUser {
  readonly name?: string
  readonly email?: string
  readonly password?: string
  /** Comma-separated, as the CLI takes them; `read,write` unless given. */
  readonly scopes?: string
}

export interface FixtureUser {
  readonly id: string
  readonly email: string
  readonly name: string
  readonly key: string
  readonly keyId: string
}

export interface IssuedKey {
  readonly id: string
  readonly key: string
  readonly name: string
  readonly scopes: ReadonlyArray<string>
  readonly prefix: string
  readonly created_at: string
  readonly expires_at: string | null
}

export interface Team {
  readonly id: string
  readonly name: string
  readonly created_at: string
  readonly updated_at: string
  /** The owner's: `owner`. */
  readonly role: string
}

export interface Fixtures {
  /** A new user with one API key (`read,write` unless other scopes are given). */
  user(options?: NewUser): Promise<FixtureUser>
  /** A user without any key (e.g. one that signs in with a password). */
  account(
    options?: Omit<NewUser, "scopes">
  ): Promise<{ readonly id: string; readonly email: string; readonly name: string }>
  /** Another API key for a user, as `cli api-keys create` makes it. */
  apiKey(
    userId: string,
    options?: { readonly name?: string; readonly scopes?: string; readonly expiresAt?: string }
  ): Promise<IssuedKey>
  /** A team owned by `ownerId`, as `cli teams create` makes it. */
  team(name: string, ownerId: string): Promise<Team>
  /** Adds a member, as `cli teams add-member` does (`member` unless a role is given). */
  addMember(teamId: string, userId: string, role?: TeamRole): Promise<void>
  /** Runs any effect against the services (and the `SqlClient`) of this database. */
  run<A, E>(effect: Effect.Effect<A, E, FixtureServices>): Promise<A>
  dispose(): Promise<void>
}

let counter = 0

/** A unique e-mail address for a test user. */
export const uniqueEmail = (tag = "user") => `${tag}${++counter}.${Math.random().toString(36).slice(2, 8)}@example.com`

/**
 * Fixtures on `databaseUrl`. `migrate: true` applies the migrations first (a database no server has opened,
 * e.g. `sqlite::memory:` for in-process service tests); by default the database is taken as migrated.
 */
export const fixtures = (
  databaseUrl: string,
  options: {
    readonly migrate?: boolean
    /** The server's `SECRETS_KEY` when it was given one (else the test key on PostgreSQL, `secrets.key` on SQLite). */
    readonly secretsKey?: string | undefined
  } = {}
): Fixtures => {
  const layer = services(options.migrate === true ? SqlLive : Layer.merge(SqlClientLive, KeyRingLive)).pipe(
    Layer.provide(
      options.secretsKey === undefined
        ? withDatabaseUrl(databaseUrl)
        : withSettings({ DATABASE_URL: databaseUrl, SECRETS_KEY: options.secretsKey })
    )
  )
  let runtime: ManagedRuntime.ManagedRuntime<FixtureServices, never> | undefined
  const run = <A, E>(effect: Effect.Effect<A, E, FixtureServices>): Promise<A> => {
    runtime ??= ManagedRuntime.make(layer)
    return runtime.runPromise(effect)
  }

  const issue = (userId: string, name: string, scopes: string, expiresAt?: string) =>
    run(
      Effect.gen(function* () {
        const decodedName = yield* Schema.decodeUnknown(KeyName)(name)
        const decodedScopes = yield* Schema.decodeUnknown(KeyScopes)(scopes.split(","))
        return yield* (yield* ApiKeys).issue(userId, {
          name: decodedName,
          scopes: decodedScopes,
          expires_at: expiresAt ?? null
        })
      })
    )

  const account: Fixtures["account"] = async (opts = {}) => {
    const n = ++counter
    const created = await run(
      Effect.flatMap(Users, (users) =>
        users.create({ email: opts.email ?? uniqueEmail(), name: opts.name ?? `User ${n}`, password: opts.password })
      )
    )
    return { id: created.id, email: created.email, name: created.name }
  }

  return {
    account,
    user: async (opts = {}) => {
      const created = await account(opts)
      const key = await issue(created.id, `key ${counter}`, opts.scopes ?? "read,write")
      return { ...created, key: key.key, keyId: key.id }
    },
    apiKey: (userId, opts = {}) =>
      issue(userId, opts.name ?? "another key", opts.scopes ?? "read,write", opts.expiresAt),
    team: (name, ownerId) => run(Effect.flatMap(Teams, (teams) => teams.create({ name, ownerId }))),
    addMember: async (teamId, userId, role = "member") => {
      await run(Effect.flatMap(Teams, (teams) => teams.addMember({ teamId, userId, role })))
    },
    run,
    dispose: async () => {
      const disposing = runtime
      runtime = undefined
      await disposing?.dispose()
    }
  }
}
