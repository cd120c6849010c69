/**
 * The SQLite credential cache's number (migrations 0017, 0022) fails closed: it moves with every update and deletion
 * of the tables the cache reads (`api_keys`, `users`, `sessions`) but a touch of `last_used_at` alone. Checked
 * column by column, from the tables as the database has them, so a column added later is covered; and the tables'
 * columns are compared with `CACHE_READS`, so a new one forces a decision in the migration (a touch that also
 * changes a new column would otherwise keep the cache).
 */
import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Layer, ManagedRuntime } from "effect"
import { ApiKeys } from "../../src/ApiKeys/ApiKeys.ts"
import { Sessions } from "../../src/Sessions/Sessions.ts"
import { SqlLive } from "../../src/Sql/Client.ts"
import { CACHE_READS } from "../../src/Sql/migrations/0022_sessions.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail, withSettings } from "../support/fixtures.ts"
import { freshDatabaseUrl, usingPostgres } from "../support/server.ts"

const TABLES = ["api_keys", "users", "sessions"] as const

describe.skipIf(usingPostgres())("credential_generation fails closed", () => {
  let runtime: ManagedRuntime.ManagedRuntime<Users | ApiKeys | Sessions, never>
  let other: Database
  const generation = () => (other.query("SELECT n FROM credential_generation WHERE id = 1").get() as { n: number }).n
  const columnsOf = (table: string) =>
    (other.query(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((column) => column.name)

  beforeAll(async () => {
    const databaseUrl = await freshDatabaseUrl()
    runtime = ManagedRuntime.make(
      Layer.mergeAll(Users.Default, ApiKeys.Default, Sessions.Default).pipe(
        Layer.provideMerge(SqlLive),
        Layer.provide(withSettings({ DATABASE_URL: databaseUrl }))
      )
    )
    await runtime.runPromise(Effect.void)
    other = new Database(databaseUrl.slice("sqlite:".length))
    other.run("PRAGMA foreign_keys = ON")
  }, 60_000)
  afterAll(async () => {
    other?.close()
    await runtime?.dispose()
  }, 20_000)

  test("the tables the cache reads have exactly the columns the migration decided on", () => {
    for (const table of TABLES) {
      expect({ table, columns: columnsOf(table).sort() }).toEqual({ table, columns: [...CACHE_READS[table]].sort() })
    }
  })

  test("an update of any column but a touch of last_used_at moves the number; a deletion does", async () => {
    const { key, session, user } = await runtime.runPromise(
      Effect.gen(function* () {
        const user = yield* (yield* Users).create({ email: uniqueEmail("closed"), name: "Closed" })
        const key = yield* (yield* ApiKeys).issue(user.id, { name: "k", scopes: ["read"], expires_at: null })
        const session = yield* (yield* Sessions).start(user.id, { ip: "127.0.0.1", userAgent: "test" })
        return { key, session, user }
      })
    )
    const ids: Record<(typeof TABLES)[number], string> = { api_keys: key.id, users: user.id, sessions: session.id }
    const moves = (statement: string, params: Array<string>) => {
      const before = generation()
      other.run(statement, params)
      return generation() - before
    }
    for (const table of TABLES) {
      for (const column of columnsOf(table)) {
        // Set to itself: nothing changes, yet the number moves (an update that moves no `last_used_at` is no touch).
        const moved = moves(`UPDATE ${table} SET ${column} = ${column} WHERE id = ?`, [ids[table]])
        expect({ table, column, moved: moved > 0 }).toEqual({ table, column, moved: true })
      }
      if (columnsOf(table).includes("last_used_at")) {
        const touched = moves(`UPDATE ${table} SET last_used_at = ? WHERE id = ?`, [
          new Date().toISOString(),
          ids[table]
        ])
        expect({ table, touched }).toEqual({ table, touched: 0 })
        // A touch that changes anything else with it is no touch.
        const other = table === "api_keys" ? "name" : "user_agent"
        const mixed = moves(`UPDATE ${table} SET last_used_at = ?, ${other} = 'x' WHERE id = ?`, [
          new Date(Date.now() + 1000).toISOString(),
          ids[table]
        ])
        expect({ table, mixed: mixed > 0 }).toEqual({ table, mixed: true })
      }
    }
    expect(moves("DELETE FROM sessions WHERE id = ?", [session.id])).toBe(1)
    expect(moves("DELETE FROM api_keys WHERE id = ?", [key.id])).toBe(1)
    expect(moves("DELETE FROM users WHERE id = ?", [user.id])).toBeGreaterThan(0)
  })
})
