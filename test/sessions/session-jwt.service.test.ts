/**
 * A session JWT lasts exactly as long as its session (JWT_TTL_SECONDS): its `iat` is the second the session started,
 * not the second it was signed. CI once signed a session in the second after it started, and the token said
 * `exp - iat = 3599`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { Effect, Layer, ManagedRuntime } from "effect"
import * as jose from "jose"
import { JWT_TTL_SECONDS, SigningKeys } from "../../src/Auth/Jwt.ts"
import { SqlLive } from "../../src/Sql/Client.ts"
import { withSettings } from "../support/fixtures.ts"
import { migratedDatabaseUrl } from "../support/server.ts"

let runtime: ManagedRuntime.ManagedRuntime<SigningKeys, unknown>

beforeAll(async () => {
  const databaseUrl = await migratedDatabaseUrl()
  runtime = ManagedRuntime.make(
    SigningKeys.Default.pipe(Layer.provide(SqlLive), Layer.provide(withSettings({ DATABASE_URL: databaseUrl })))
  )
  await runtime.runPromise(Effect.void)
}, 60_000)
afterAll(() => runtime.dispose())

const issuer = { baseUrl: "http://localhost", authUrl: "http://localhost/oauth", audience: "http://localhost/v1" }

test("a session started in the second before it is signed: iat is its start, exp - iat is the TTL", async () => {
  const startedAt = Math.floor(Date.now() / 1000) - 1
  const session = { id: "session_test", issuedAt: startedAt, expiresAt: startedAt + JWT_TTL_SECONDS }
  const token = await runtime.runPromise(
    Effect.flatMap(SigningKeys, (keys) => keys.signSession({ id: "user_test", org_id: "org_test" }, issuer, session))
  )
  const claims = jose.decodeJwt(token)
  expect(claims.iat).toBe(startedAt)
  expect(claims.exp! - claims.iat!).toBe(JWT_TTL_SECONDS)
})
