/**
 * SQLite's page cache on the service's one connection: SQLite's own default while the service runs, and large for
 * the length of a change that rewrites many rows, where a small one evicts and re-reads the same pages over and over.
 * A rename is copied onto every membership of the team or the user (their names sort the member and team lists).
 * Kept larger all the time, the cache fills with the pages creates touch and holds them, and the service's RSS with
 * it, for no gain the benchmarks show on GETs, list pages or creates; a deep page of a big list is a little slower
 * without it. The figures are in bench/README.md ("RSS after the creates is the SQLite page cache", "SQLite's page
 * cache back at its default"). PostgreSQL keeps its own buffers, in its own processes: nothing to do there.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/** The cache while the service runs, in KiB: SQLite's own default. */
export const STEADY_KIB = 2 * 1024
/** The cache for a change that rewrites many rows, in KiB. */
export const LARGE_KIB = 64 * 1024

const setTo = (sql: SqlClient.SqlClient, kib: number) => sql.unsafe(`PRAGMA cache_size = -${kib}`)

/** Sets the steady cache: part of the connection's set-up (src/Sql/Client.ts). */
export const steady = Effect.flatMap(SqlClient.SqlClient, (sql) => setTo(sql, STEADY_KIB))

/**
 * `effect`, on SQLite with the large cache while it runs, then the steady one again and the pages beyond it given
 * back (`shrink_memory`). Run inside the change's transaction, so that it sets the connection the change runs on.
 */
export const withLargeCache = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.onDialectOrElse({
      sqlite: () =>
        Effect.acquireUseRelease(
          Effect.orDie(setTo(sql, LARGE_KIB)),
          () => effect,
          () => Effect.orDie(Effect.zipRight(setTo(sql, STEADY_KIB), sql.unsafe("PRAGMA shrink_memory")))
        ),
      orElse: () => effect
    })
  )
