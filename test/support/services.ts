/**
 * In-process service tests: the real service layers over a fresh SQLite database in memory (or, where engines
 * differ, the one `DATABASE_URL` selects) with every migration applied, no HTTP and no process. Fast and precise where the wire adds nothing (rules, edge cases, rows).
 */
import type { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import type { Principal } from "../../src/Domain/Principal.ts"
import type { Scope } from "../../src/Domain/Scopes.ts"
import type { KeyRing } from "../../src/Secrets/KeyRing.ts"
import { SqlLive } from "../../src/Sql/Client.ts"
import { withDatabaseUrl } from "./fixtures.ts"
import { migratedDatabaseUrl } from "./server.ts"

export interface ServiceHarness<R> {
  /** Runs an effect against the services; its failure rejects. */
  run<A, E>(effect: Effect.Effect<A, E, R | SqlClient.SqlClient | KeyRing>): Promise<A>
  /** Runs an effect that must fail, and answers its (typed) error; rejects if it succeeds. */
  fail<A, E>(effect: Effect.Effect<A, E, R | SqlClient.SqlClient | KeyRing>): Promise<E>
  dispose(): Promise<void>
}

/** The given service layers over the database at `databaseUrl`, migrated. */
const harnessOf = <R, E>(
  services: Layer.Layer<R, E, SqlClient.SqlClient | KeyRing>,
  databaseUrl: string
): ServiceHarness<R> => {
  const runtime = ManagedRuntime.make(
    services.pipe(Layer.provideMerge(SqlLive), Layer.provide(withDatabaseUrl(databaseUrl)))
  )
  return {
    run: (effect) => runtime.runPromise(effect),
    fail: (effect) => runtime.runPromise(Effect.flip(effect)),
    dispose: () => runtime.dispose()
  }
}

/** The given service layers over `sqlite::memory:`, migrated; one database per harness. */
export const inMemory = <R, E>(services: Layer.Layer<R, E, SqlClient.SqlClient | KeyRing>): ServiceHarness<R> =>
  harnessOf(services, "sqlite::memory:")

/** The given service layers over the database at `databaseUrl` (from `freshDatabaseUrl`), migrated. */
export const onDatabase = <R, E>(
  services: Layer.Layer<R, E, SqlClient.SqlClient | KeyRing>,
  databaseUrl: string
): ServiceHarness<R> => harnessOf(services, databaseUrl)

/**
 * The given service layers over a fresh database of the engine `DATABASE_URL` selects (SQLite in a temporary file
 * without it), migrated: for what differs by engine.
 */
export const onSelectedEngine = async <R, E>(
  services: Layer.Layer<R, E, SqlClient.SqlClient | KeyRing>
): Promise<ServiceHarness<R>> => harnessOf(services, await migratedDatabaseUrl())

/** The principal a credential of `user` would give (an API key with `read,write` unless told otherwise). */
export const principalOf = (
  user: { readonly id: string; readonly org_id: string },
  options: {
    readonly scopes?: ReadonlyArray<Scope>
    readonly kind?: Principal["credential"]["kind"]
    readonly credentialId?: string
  } = {}
): Principal => ({
  userId: user.id,
  orgId: user.org_id,
  scopes: options.scopes ?? ["read", "write"],
  credential: { kind: options.kind ?? "api_key", id: options.credentialId ?? "key_01jd3xkq8w0000000000000000" }
})
