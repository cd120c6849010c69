// engine-independent: SQLite's page cache on a file of its own; on PostgreSQL the helper does nothing
/**
 * SQLite's page cache (src/Sql/PageCache.ts): the service's connection starts with the steady size; a change wrapped
 * in `withLargeCache` runs with the large one and leaves the steady one behind, whether it succeeds or fails.
 */
import { expect, test } from "bun:test"
import { join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Exit, Layer } from "effect"
import { SqlClientLive } from "../../src/Sql/Client.ts"
import { LARGE_KIB, STEADY_KIB, withLargeCache } from "../../src/Sql/PageCache.ts"
import { withDatabaseUrl } from "../support/fixtures.ts"
import { tempDir } from "../support/temp.ts"

/** The connection's cache size as SQLite answers it (negative: KiB). */
const cacheSize = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql<{ cache_size: number }>`PRAGMA cache_size`, (rows) => rows[0]?.cache_size)
)

test("steady while the service runs; large for a wrapped change, then steady again, also after a failure", async () => {
  const layer = SqlClientLive.pipe(
    Layer.provide(withDatabaseUrl(`sqlite:${join(tempDir("page-cache-"), "cache.sqlite")}`))
  )
  const seen = await Effect.runPromise(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const atStart = yield* cacheSize
      const during = yield* withLargeCache(cacheSize)
      const afterwards = yield* cacheSize
      const inTransaction = yield* sql.withTransaction(withLargeCache(cacheSize))
      const failed = yield* Effect.exit(withLargeCache(Effect.fail("refused")))
      const afterFailure = yield* cacheSize
      return { atStart, during, afterwards, inTransaction, failed: Exit.isFailure(failed), afterFailure }
    }).pipe(Effect.scoped, Effect.provide(layer))
  )
  expect(seen).toEqual({
    atStart: -STEADY_KIB,
    during: -LARGE_KIB,
    afterwards: -STEADY_KIB,
    inTransaction: -LARGE_KIB,
    failed: true,
    afterFailure: -STEADY_KIB
  })
  expect(LARGE_KIB).toBeGreaterThan(STEADY_KIB)
}, 20_000)
