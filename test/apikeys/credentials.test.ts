/**
 * How authentication finds a key (src/ApiKeys/Credentials.ts): the `credential-cache` fast path and its idiomatic
 * twin, the same tests on both, over SQLite in a file (the fast one keeps credentials only there). A key revoked,
 * deleted or moved past its expiry fails at its next request whoever wrote the change, this process or another
 * connection to the file (as `cli api-keys revoke` is); and the number the fast one reads (migration 0017) moves with
 * exactly the writes that can change a credential.
 */

import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime, Option } from "effect"
import { ApiKeys } from "../../src/ApiKeys/ApiKeys.ts"
import { Credentials, MAX_KEPT } from "../../src/ApiKeys/Credentials.ts"
import type { Principal } from "../../src/Domain/Principal.ts"
import { sha256Hex } from "../../src/Domain/Secrets.ts"
import { SqlLive } from "../../src/Sql/Client.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail, withSettings } from "../support/fixtures.ts"
import { twinsOf } from "../support/helpers.ts"
import { freshDatabaseUrl, usingPostgres } from "../support/server.ts"

const layers = Layer.mergeAll(ApiKeys.Default, Credentials.Default, Users.Default)

const runtimeOn = (databaseUrl: string, fastPaths: string) =>
  ManagedRuntime.make(
    layers.pipe(
      Layer.provideMerge(SqlLive),
      Layer.provide(withSettings({ DATABASE_URL: databaseUrl, FAST_PATHS: fastPaths }))
    )
  )

for (const [name, fastPaths] of twinsOf("credential-cache")) {
  describe.skipIf(usingPostgres())(`credentials: ${name}`, () => {
    let runtime: ReturnType<typeof runtimeOn>
    /** Another connection to the file, as another process (the CLI) has. */
    let other: Database
    const run = <A, E>(effect: Effect.Effect<A, E, ApiKeys | Credentials | Users | SqlClient.SqlClient>) =>
      runtime.runPromise(effect)

    beforeAll(async () => {
      const databaseUrl = await freshDatabaseUrl()
      runtime = runtimeOn(databaseUrl, fastPaths)
      await run(Effect.void)
      other = new Database(databaseUrl.slice("sqlite:".length))
      other.run("PRAGMA busy_timeout = 5000")
      other.run("PRAGMA foreign_keys = ON")
    }, 60_000)
    afterAll(async () => {
      other.close()
      await runtime.dispose()
    }, 20_000)

    const newKey = async (options: { readonly expiresAt?: string } = {}) => {
      const user = await run(
        Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("cred"), name: "Cred" }))
      )
      const key = await run(
        Effect.flatMap(ApiKeys, (keys) =>
          keys.issue(user.id, { name: "k", scopes: ["read", "write"], expires_at: options.expiresAt ?? null })
        )
      )
      return { user, key }
    }
    const authenticate = (token: string) =>
      run(Effect.either(Effect.flatMap(ApiKeys, (keys) => keys.authenticate(token))))
    const accepted = async (token: string) => {
      const outcome = await authenticate(token)
      if (outcome._tag === "Left") throw new Error(`refused: ${outcome.left.message}`)
      return outcome.right
    }
    const refused = async (token: string) => {
      const outcome = await authenticate(token)
      expect(outcome._tag).toBe("Left")
      if (outcome._tag === "Left") expect(outcome.left._tag).toBe("Unauthorized")
    }

    test(`the store is the ${name} one`, async () => {
      expect((await run(Credentials)).implementation).toBe(name)
    })

    test("a key authenticates request after request; the same prefix with another secret does not", async () => {
      const { key, user } = await newKey()
      for (let i = 0; i < 3; i++) {
        const principal: Principal = await accepted(key.key)
        expect(principal.userId).toBe(user.id)
        expect(principal.orgId).toBe(user.org_id)
        expect(principal.scopes).toEqual(["read", "write"])
        expect(principal.credential).toEqual({ kind: "api_key", id: key.id })
      }
      const forged = `${key.key.slice(0, 12)}${"A".repeat(key.key.length - 12)}`
      await refused(forged)
      await accepted(key.key)
    })

    test("revoked through the service: its next request fails", async () => {
      const { key, user } = await newKey()
      await accepted(key.key)
      await run(
        Effect.flatMap(ApiKeys, (keys) =>
          keys.revoke(
            {
              userId: user.id,
              orgId: user.org_id,
              scopes: ["read", "write"],
              credential: { kind: "api_key", id: key.id }
            },
            key.id
          )
        )
      )
      await refused(key.key)
    })

    test("revoked by another process: its next request fails", async () => {
      const { key } = await newKey()
      await accepted(key.key)
      other.run("UPDATE api_keys SET revoked_at = ? WHERE id = ?", [new Date().toISOString(), key.id])
      await refused(key.key)
    })

    test("its expiry moved into the past by another process: its next request fails", async () => {
      const { key } = await newKey()
      await accepted(key.key)
      other.run("UPDATE api_keys SET expires_at = ? WHERE id = ?", [new Date(Date.now() - 1000).toISOString(), key.id])
      await refused(key.key)
    })

    test("deleted with its user by another process: its next request fails", async () => {
      const { key, user } = await newKey()
      await accepted(key.key)
      other.run("DELETE FROM users WHERE id = ?", [user.id])
      await refused(key.key)
    })

    test("its expiry comes while nothing is written: the request after it fails", async () => {
      // A key that expires soon, accepted before it does: on a loaded machine the first request may come after the
      // expiry, so a longer one is tried then (no assertion on how long anything takes).
      const accepting = async (window: number): Promise<{ readonly token: string; readonly expiresAt: number }> => {
        const expiresAt = Date.now() + window
        const { key } = await newKey({ expiresAt: new Date(expiresAt).toISOString() })
        const outcome = await authenticate(key.key)
        if (outcome._tag === "Right") return { token: key.key, expiresAt }
        expect(Date.now()).toBeGreaterThanOrEqual(expiresAt)
        return accepting(window * 4)
      }
      const expiring = await accepting(400)
      await Bun.sleep(Math.max(0, expiring.expiresAt - Date.now()) + 100)
      await refused(expiring.token)
    }, 30_000)

    test("last_used_at is written by the first request, not again within the minute", async () => {
      const { key } = await newKey()
      const lastUsed = () =>
        (other.query("SELECT last_used_at FROM api_keys WHERE id = ?").get(key.id) as { last_used_at: string | null })
          .last_used_at
      expect(lastUsed()).toBeNull()
      await accepted(key.key)
      const first = lastUsed()
      expect(first).not.toBeNull()
      await Bun.sleep(5)
      await accepted(key.key)
      await accepted(key.key)
      expect(lastUsed()).toBe(first)
    })

    test("a lookup answers what was committed; the fast store keeps it until a credential may have changed", async () => {
      const { key } = await newKey()
      const find = () =>
        run(
          Effect.flatMap(Credentials, (store) =>
            store.find(key.key.slice(0, 12), sha256Hex(key.key), new Date().toISOString())
          )
        ).then(Option.getOrThrow)
      expect(await find()).toMatchObject({ id: key.id, status: "active", last_used_at: null })
      // A touch (`last_used_at` alone, which the store learns of itself): the fast store keeps what it found.
      const longAgo = "2000-01-01T00:00:00.000Z"
      other.run("UPDATE api_keys SET last_used_at = ? WHERE id = ?", [longAgo, key.id])
      expect((await find()).last_used_at).toBe(name === "fast" ? null : longAgo)
      // A write one may depend on: both read it afresh.
      other.run("UPDATE api_keys SET revoked_at = ? WHERE id = ?", [new Date().toISOString(), key.id])
      expect(await find()).toMatchObject({ status: "revoked", last_used_at: longAgo })
    })

    test("a key made under a prefix already kept is found: making a key moves no number", async () => {
      const { key, user } = await newKey()
      await accepted(key.key)
      // Another key with the same prefix (1 in 62^8 a pair; here on purpose), written by another connection.
      const twin = `${key.key.slice(0, 12)}${"B".repeat(key.key.length - 12)}`
      const at = new Date().toISOString()
      other.run(
        `INSERT INTO api_keys (id, user_id, name, scopes, prefix, key_hash, created_at)
          VALUES (?, ?, 'same prefix', '["read"]', ?, ?, ?)`,
        ["key_01m8samepref1xzzzzzzzzzzzz", user.id, twin.slice(0, 12), sha256Hex(twin), at]
      )
      expect((await accepted(twin)).credential).toEqual({ kind: "api_key", id: "key_01m8samepref1xzzzzzzzzzzzz" })
      await accepted(key.key)
    })

    test(`at most ${MAX_KEPT} prefixes are kept; past them, the one looked up longest ago is read afresh`, async () => {
      const { user } = await newKey()
      const tokens = Array.from(
        { length: MAX_KEPT + 1 },
        (_, i) => `pcs_${i.toString(36).padStart(8, "0")}${"k".repeat(32)}`
      )
      const at = new Date().toISOString()
      const insert = other.prepare(
        `INSERT INTO api_keys (id, user_id, name, scopes, prefix, key_hash, created_at)
          VALUES (?, ?, 'bound', '["read"]', ?, ?, ?)`
      )
      other.transaction(() => {
        tokens.forEach((token, i) => {
          insert.run(`key_bound${i.toString().padStart(19, "0")}`, user.id, token.slice(0, 12), sha256Hex(token), at)
        })
      })()
      const find = (token: string) =>
        run(
          Effect.flatMap(Credentials, (store) =>
            store.find(token.slice(0, 12), sha256Hex(token), new Date().toISOString())
          )
        ).then(Option.getOrThrow)
      for (const token of tokens) await find(token)
      const longAgo = "2000-01-01T00:00:00.000Z"
      other.run("UPDATE api_keys SET last_used_at = ? WHERE name = 'bound'", [longAgo])
      const [oldest, newest] = [tokens[0] ?? "", tokens[MAX_KEPT] ?? ""]
      expect((await find(oldest)).last_used_at).toBe(longAgo)
      expect((await find(newest)).last_used_at).toBe(name === "fast" ? null : longAgo)
      // Ten thousand keys written and looked up: seconds on a loaded machine, so a timeout of its own.
    }, 60_000)
  })
}

describe.skipIf(usingPostgres())("credential_generation (migrations 0017, 0022)", () => {
  let runtime: ReturnType<typeof runtimeOn>
  let other: Database
  const generation = () => (other.query("SELECT n FROM credential_generation WHERE id = 1").get() as { n: number }).n

  beforeAll(async () => {
    const databaseUrl = await freshDatabaseUrl()
    runtime = runtimeOn(databaseUrl, "all")
    await runtime.runPromise(Effect.void)
    other = new Database(databaseUrl.slice("sqlite:".length))
    other.run("PRAGMA foreign_keys = ON")
  }, 60_000)
  afterAll(async () => {
    other.close()
    await runtime.dispose()
  }, 20_000)

  test("moves with each write that can change a credential, and with no other", async () => {
    const user = await runtime.runPromise(
      Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("gen"), name: "Gen" }))
    )
    const issue = () =>
      runtime.runPromise(
        Effect.flatMap(ApiKeys, (keys) => keys.issue(user.id, { name: "k", scopes: ["read"], expires_at: null }))
      )
    const moves = (write: () => void) => {
      const before = generation()
      write()
      return generation() - before
    }
    const one = await issue()
    const two = await issue()
    const at = new Date().toISOString()
    // Only a touch (`last_used_at` alone) leaves it; since migration 0022 the triggers fail closed: any other
    // update of the tables the cache reads moves it, a rename and a suspension included.
    expect(moves(() => other.run("UPDATE api_keys SET last_used_at = ? WHERE id = ?", [at, one.id]))).toBe(0)
    expect(moves(() => other.run("UPDATE api_keys SET name = ? WHERE id = ?", ["renamed", one.id]))).toBe(1)
    expect(moves(() => other.run("UPDATE users SET name = ? WHERE id = ?", ["Renamed", user.id]))).toBe(1)
    expect(moves(() => other.run("UPDATE users SET suspended_at = ? WHERE id = ?", [at, user.id]))).toBe(1)
    expect(moves(() => other.run("UPDATE users SET suspended_at = NULL WHERE id = ?", [user.id]))).toBe(1)
    expect(moves(() => other.run("UPDATE api_keys SET scopes = ? WHERE id = ?", ['["write"]', one.id]))).toBe(1)
    expect(moves(() => other.run("UPDATE api_keys SET expires_at = ? WHERE id = ?", [at, one.id]))).toBe(1)
    expect(moves(() => other.run("UPDATE api_keys SET revoked_at = ? WHERE id = ?", [at, one.id]))).toBe(1)
    expect(moves(() => other.run("DELETE FROM api_keys WHERE id = ?", [one.id]))).toBe(1)
    // A user's deletion takes their keys with it (a cascade): each one counts, and the user.
    await issue()
    expect(moves(() => other.run("DELETE FROM users WHERE id = ?", [user.id]))).toBe(3)
    expect(two.id).not.toBe(one.id)
  })

  test("when the number cannot be read, the fast store looks every key up, and a revocation still holds", async () => {
    const databaseUrl = await freshDatabaseUrl()
    const own = runtimeOn(databaseUrl, "all")
    const file = new Database(databaseUrl.slice("sqlite:".length))
    try {
      const key = await own.runPromise(
        Effect.gen(function* () {
          const user = yield* (yield* Users).create({ email: uniqueEmail("nonumber"), name: "No number" })
          return yield* (yield* ApiKeys).issue(user.id, { name: "k", scopes: ["read"], expires_at: null })
        })
      )
      expect((await own.runPromise(Credentials)).implementation).toBe("fast")
      const authenticate = () =>
        own.runPromise(Effect.either(Effect.flatMap(ApiKeys, (keys) => keys.authenticate(key.key))))
      // Kept, with the number read once.
      expect((await authenticate())._tag).toBe("Right")
      for (const trigger of ["key_update", "key_delete", "user_update", "user_delete"]) {
        file.run(`DROP TRIGGER credential_generation_${trigger}`)
      }
      file.run("DROP TABLE credential_generation")
      expect((await authenticate())._tag).toBe("Right")
      file.run("UPDATE api_keys SET revoked_at = ? WHERE id = ?", [new Date().toISOString(), key.id])
      expect((await authenticate())._tag).toBe("Left")
    } finally {
      file.close()
      await own.dispose()
    }
  }, 60_000)

  test("in memory, the store is the twin: no other connection can read that database", async () => {
    const memory = runtimeOn("sqlite::memory:", "all")
    try {
      expect((await memory.runPromise(Credentials)).implementation).toBe("idiomatic")
    } finally {
      await memory.dispose()
    }
  }, 60_000)
})

test.skipIf(!usingPostgres())(
  "on PostgreSQL the store is the twin",
  async () => {
    const runtime = runtimeOn(await freshDatabaseUrl(), "all")
    try {
      expect((await runtime.runPromise(Credentials)).implementation).toBe("idiomatic")
    } finally {
      await runtime.dispose()
    }
  },
  60_000
)
