/**
 * The Sessions service and its two stores (src/Sessions/Credentials.ts), under the same tests: a session JWT's
 * principal is accepted while its session is live, and refused at its next request once the session is ended,
 * expired, its user suspended or deleted — also when another connection to the file (another process: the CLI, a
 * second server) wrote the change. On SQLite in a file the fast store runs (it keeps sessions until the credential
 * number moves); on PostgreSQL, or without `credential-cache`, the twin looks every request up.
 */
import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import type { Principal } from "../../src/Domain/Principal.ts"
import { SessionCredentials } from "../../src/Sessions/Credentials.ts"
import { Sessions } from "../../src/Sessions/Sessions.ts"
import { SqlLive } from "../../src/Sql/Client.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail, withSettings } from "../support/fixtures.ts"
import { twinsOf } from "../support/helpers.ts"
import { migratedDatabaseUrl, usingPostgres } from "../support/server.ts"

const layers = Layer.mergeAll(Sessions.Default, SessionCredentials.Default, Users.Default)
const runtimeOn = (databaseUrl: string, fastPaths: string) =>
  ManagedRuntime.make(
    layers.pipe(
      Layer.provideMerge(SqlLive),
      Layer.provide(withSettings({ DATABASE_URL: databaseUrl, FAST_PATHS: fastPaths }))
    )
  )

for (const [name, fastPaths] of twinsOf("credential-cache")) {
  describe(`sessions: ${name} store`, () => {
    let runtime: ReturnType<typeof runtimeOn>
    /** Another connection to the SQLite file, as another process has (none on PostgreSQL). */
    let other: Database | undefined
    const run = <A, E>(effect: Effect.Effect<A, E, Sessions | SessionCredentials | Users>) => runtime.runPromise(effect)
    const refused = <A, E>(effect: Effect.Effect<A, E, Sessions | SessionCredentials | Users>) =>
      runtime.runPromise(Effect.flip(effect))

    beforeAll(async () => {
      const databaseUrl = await migratedDatabaseUrl()
      runtime = runtimeOn(databaseUrl, fastPaths)
      await run(Effect.void)
      if (databaseUrl.startsWith("sqlite:")) {
        other = new Database(databaseUrl.slice("sqlite:".length))
        other.run("PRAGMA busy_timeout = 5000")
        other.run("PRAGMA foreign_keys = ON")
      }
    }, 60_000)
    afterAll(async () => {
      other?.close()
      await runtime?.dispose()
    }, 20_000)

    /** A user with a session, and the principal its JWT would give. */
    const signedIn = async () => {
      const user = await run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("ses"), name: "Ses" })))
      const started = await run(
        Effect.flatMap(Sessions, (sessions) => sessions.start(user.id, { ip: "127.0.0.1", userAgent: "test" }))
      )
      const principal: Principal = {
        userId: user.id,
        orgId: "org_from_the_jwt",
        scopes: ["read"],
        credential: { kind: "jwt", id: started.id }
      }
      return { user, principal }
    }
    const authenticate = (principal: Principal) =>
      Effect.flatMap(Sessions, (sessions) => sessions.authenticate(principal))
    /** A write by another process on SQLite (another connection to the file); on PostgreSQL, any connection. */
    const elsewhere = async (statement: string, params: ReadonlyArray<string | null>) => {
      if (other !== undefined) {
        other.run(statement, [...params])
        return
      }
      let n = 0
      const text = statement.replace(/\?/g, () => `$${++n}`)
      await runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(text, [...params])))
    }

    test("the store is the one the engine and FAST_PATHS call for", async () => {
      const store = await run(SessionCredentials)
      expect(store.implementation).toBe(name === "fast" && !usingPostgres() ? "fast" : "idiomatic")
    })

    test("a live session is accepted request after request, with its user's stored organisation and name", async () => {
      const { principal, user } = await signedIn()
      for (let i = 0; i < 3; i++) {
        const accepted = await run(authenticate(principal))
        expect(accepted).toMatchObject({
          userId: user.id,
          name: "Ses",
          orgId: user.org_id,
          credential: principal.credential
        })
      }
      // Another user's principal naming this session is refused.
      const { principal: stranger } = await signedIn()
      expect((await refused(authenticate({ ...stranger, credential: principal.credential })))._tag).toBe("Unauthorized")
    })

    test("ended through the service (logout): refused at its next request", async () => {
      const { principal } = await signedIn()
      await run(authenticate(principal))
      await run(Effect.flatMap(Sessions, (sessions) => sessions.end(principal)))
      expect((await refused(authenticate(principal)))._tag).toBe("Unauthorized")
    })

    test("ended, expired, its user suspended or deleted by another connection: refused at its next request", async () => {
      type Write = (sessionId: string, userId: string) => readonly [string, ReadonlyArray<string>]
      const writes: ReadonlyArray<Write> = [
        (id) => ["UPDATE sessions SET revoked_at = ? WHERE id = ?", [new Date().toISOString(), id]],
        (id) => ["UPDATE sessions SET expires_at = ? WHERE id = ?", ["2000-01-01T00:00:00.000Z", id]],
        (_, userId) => ["UPDATE users SET suspended_at = ? WHERE id = ?", [new Date().toISOString(), userId]],
        (_, userId) => ["DELETE FROM users WHERE id = ?", [userId]]
      ]
      for (const write of writes) {
        const { principal, user } = await signedIn()
        await run(authenticate(principal))
        const [statement, params] = write(principal.credential.id, user.id)
        await elsewhere(statement, params)
        expect({ statement, tag: (await refused(authenticate(principal)))._tag }).toEqual({
          statement,
          tag: "Unauthorized"
        })
      }
    })

    test("a touch (last_used_at, once a minute) keeps the session accepted", async () => {
      const { principal } = await signedIn()
      await run(authenticate(principal))
      await elsewhere("UPDATE sessions SET last_used_at = ? WHERE id = ?", [
        "2000-01-01T00:00:00.000Z",
        principal.credential.id
      ])
      expect((await run(authenticate(principal))).userId).toBe(principal.userId)
    })
  })
}
