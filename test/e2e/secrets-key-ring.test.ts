/**
 * The key ring of the secrets at rest (decisions "Secrets at rest", docs/operations.md): start with key A, add B in
 * front and `secrets rotate` while requests run, drop A: webhooks still sign verifiably, JWTs verify, keyed replays
 * show their secret. Migration 0021 encrypts rows written before it. A missing or wrong key stops start-up with a
 * message naming SECRETS_KEY; an altered stored value is a 500, never garbage.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { statSync } from "node:fs"
import { dirname, join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, ManagedRuntime, Option } from "effect"
import * as jose from "jose"
import { Webhook } from "standardwebhooks"
import { makeId } from "../../src/Domain/Ids.ts"
import { requestHash } from "../../src/Idempotency/Idempotency.ts"
import { keyIdFor, keyIdOf, keyRingOf, newKeyText } from "../../src/Secrets/KeyRing.ts"
import { SqlClientLive } from "../../src/Sql/Client.ts"
import { runMigrationsBefore } from "../../src/Sql/Migrations.ts"
import { UsersRepo } from "../../src/Users/Repo.ts"
import { Users } from "../../src/Users/Users.ts"
import { withSettings } from "../support/fixtures.ts"
import { webhookRow } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { startReceiver } from "../support/receiver.ts"
import { freshDatabaseUrl, migratedDatabaseUrl, runCli, type Server, usingPostgres } from "../support/server.ts"

const receiver = startReceiver()
afterAll(() => receiver.stop(), 20_000)
const started: Array<Server> = []
afterAll(() => Promise.all(started.map((s) => s.stop())), 20_000)

const A = newKeyText()
const B = newKeyText()
const idOf = (text: string) => keyIdFor(Buffer.from(text, "base64"))

const start = async (databaseUrl: string, secretsKey: string) => {
  const server = await startInProcess({
    databaseUrl,
    // One issuer for every server on the database, whatever its port: JWTs outlive a server here.
    env: { SECRETS_KEY: secretsKey, WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", BASE_URL: "http://127.0.0.1:9" }
  })
  started.push(server)
  return server
}
/** The start-up failure on `databaseUrl` with `secretsKey` (undefined if it started after all). */
const refusal = (databaseUrl: string, secretsKey: string) =>
  startInProcess({ databaseUrl, env: { SECRETS_KEY: secretsKey } }).then(
    async (unexpected) => {
      await unexpected.stop()
      return undefined
    },
    (error: unknown) => String(error)
  )

const stop = async (server: Server) => {
  expect(await server.stop()).toBe(0)
}

const rowsOf = <T extends object>(server: Server, query: string) =>
  server.fixtures.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<T>(query)))

/** Every stored secret's key id. */
const storedKeyIds = async (server: Server) => {
  const rows = await rowsOf<{ readonly value: string | null }>(
    server,
    `SELECT secret AS value FROM webhooks UNION ALL SELECT previous_secret FROM webhooks
     UNION ALL SELECT private_jwk FROM jwt_signing_keys UNION ALL SELECT body FROM idempotency_keys`
  )
  return new Set(
    rows.flatMap((row) => (row.value === null ? [] : [Option.getOrElse(keyIdOf(row.value), () => "clear")]))
  )
}

const signIn = async (server: Server, email: string, password: string) => {
  const login = await server.request("/oauth/login", { method: "POST", body: { email, password } })
  expect(login.status).toBe(200)
  return login.body.access_token as string
}

const verifies = (secret: string, request: { readonly body: string; readonly headers: Record<string, string> }) => {
  try {
    new Webhook(secret).verify(request.body, request.headers)
    return true
  } catch {
    return false
  }
}

describe("the key ring", () => {
  test("A, then B,A with `secrets rotate` while requests run, then B alone: everything still verifies and replays", async () => {
    const databaseUrl = await migratedDatabaseUrl()
    const password = "correct horse battery staple"
    const email = `ring.${Date.now()}@example.com`

    // Key A.
    const first = await start(databaseUrl, A)
    await first.fixtures.account({ email, name: "Ring", password })
    const jwtA = await signIn(first, email, password)
    const keyed = (server: Server, jwt: string, path: string, body: unknown, key: string) =>
      server.request(`/v1${path}`, { method: "POST", key: jwt, body, headers: { "idempotency-key": key } })
    const apiKeyBody = { name: "Under A", scopes: ["projects:read"] }
    const apiKeyA = await keyed(first, jwtA, "/api-keys", apiKeyBody, "under-a")
    expect(apiKeyA.status).toBe(201)
    const hookBody = { url: receiver.url("/ring"), events: ["project.created"] }
    const hook = await keyed(first, jwtA, "/webhooks", hookBody, "hook-a")
    expect(hook.status).toBe(201)
    const rotatedA = await first.request(`/v1/webhooks/${hook.body.data.id}/rotate-secret`, {
      method: "POST",
      key: jwtA,
      body: {}
    })
    expect(rotatedA.status).toBe(200)
    const secret: string = rotatedA.body.data.secret
    // A second webhook whose secret the requests below keep rotating, against the rotation's compare-and-set.
    const busy = await first.request("/v1/webhooks", {
      method: "POST",
      key: jwtA,
      body: { url: receiver.url("/busy"), events: ["project.created"] }
    })
    expect(await storedKeyIds(first)).toEqual(new Set([idOf(A)]))
    await stop(first)

    // B in front of A: new values under B; `secrets rotate` moves the rest while requests run.
    const second = await start(databaseUrl, `${B},${A}`)
    const jwtBA = await signIn(second, email, password)
    let running = true
    const replaysDuring: Array<{ readonly key: string; readonly text: string }> = []
    // On SQLite the operator's process and the server share one writer: a write of the server's that meets the
    // command's lock may be answered 503 (with Retry-After, nothing done), and a client sends it again, as here.
    const retried = async (send: () => Promise<{ readonly status: number; readonly text: string }>) => {
      for (let tries = 1; ; tries++) {
        const response = await send()
        if (response.status !== 503 || tries === 20) return response
        await Bun.sleep(100)
      }
    }
    const traffic = (async () => {
      for (let n = 0; running; n++) {
        const key = `during-${n}`
        const made = await retried(() =>
          keyed(second, jwtBA, "/api-keys", { name: `During ${n}`, scopes: ["projects:read"] }, key)
        )
        expect(made.status).toBe(201)
        replaysDuring.push({ key, text: made.text })
        const rotated = await retried(() =>
          second.request(`/v1/webhooks/${busy.body.data.id}/rotate-secret`, { method: "POST", key: jwtBA, body: {} })
        )
        expect(rotated.status).toBe(200)
        const project = await retried(() =>
          second.request("/v1/projects", { method: "POST", key: jwtBA, body: { name: `p${n}` } })
        )
        expect(project.status).toBe(201)
      }
    })()
    // A process of its own, as an operator runs it: in this process its SQLite connection would wait for the
    // server's write lock synchronously, on the thread the server needs to release it.
    const rotation = await runCli(databaseUrl, ["secrets", "rotate", "--batch", "2"], {
      env: { ...process.env, LOG_LEVEL: "warn", SECRETS_KEY: `${B},${A}` }
    })
    running = false
    await traffic
    // The whole outcome, so a failure shows what the command printed.
    expect(rotation).toMatchObject({ code: 0 })
    const report = JSON.parse(rotation.stdout).data
    expect(report.key).toBe(idOf(B))
    expect(report.reencrypted).toBeGreaterThanOrEqual(5)
    expect(replaysDuring.length).toBeGreaterThan(0)
    // Deliveries under B,A sign with the webhook's secret.
    const signedDuring = await receiver.waitFor(1, { path: "/ring", timeoutMs: 15_000 })
    expect(verifies(secret, signedDuring[0]!)).toBe(true)
    await stop(second)

    // Nothing is left under A: A alone no longer starts, and says which key it lacks.
    const refused = await refusal(databaseUrl, A)
    expect(refused).toContain("SECRETS_KEY")
    expect(refused).toContain(idOf(B))

    // B alone.
    const third = await start(databaseUrl, B)
    expect(await storedKeyIds(third)).toEqual(new Set([idOf(B)]))
    receiver.reset()
    expect((await third.request("/v1/projects", { method: "POST", key: jwtA, body: { name: "after" } })).status).toBe(
      201
    )
    const [delivery] = await receiver.waitFor(1, { path: "/ring", timeoutMs: 15_000 })
    expect(verifies(secret, delivery!)).toBe(true)
    // The JWTs signed under A and under B,A verify; a new sign-in signs with the (re-encrypted) key.
    for (const jwt of [jwtA, jwtBA, await signIn(third, email, password)]) {
      expect((await third.request("/v1/users/me", { key: jwt })).status).toBe(200)
    }
    // Keyed replays show the secret they showed the first time.
    const replayA = await keyed(third, jwtA, "/api-keys", apiKeyBody, "under-a")
    expect(replayA.headers.get("idempotent-replayed")).toBe("true")
    expect(replayA.text).toBe(apiKeyA.text)
    expect(replayA.body.data.key).toMatch(/^pcs_/)
    expect((await keyed(third, jwtA, "/webhooks", hookBody, "hook-a")).text).toBe(hook.text)
    for (const { key, text } of replaysDuring.slice(-3)) {
      const n = key.slice("during-".length)
      const replay = await keyed(third, jwtA, "/api-keys", { name: `During ${n}`, scopes: ["projects:read"] }, key)
      expect(replay.text).toBe(text)
    }

    // An altered stored answer is refused (500), never replayed as whatever it decrypts to.
    await third.fixtures.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) =>
          sql`UPDATE idempotency_keys SET body = ${sql`substr(body, 1, length(body) - 4) || 'AAAA'`}
              WHERE idempotency_key = 'under-a'`
      )
    )
    const altered = await keyed(third, jwtA, "/api-keys", apiKeyBody, "under-a")
    expect(altered.status).toBe(500)
    expect(altered.body.error.code).toBe("internal_error")
    expect(altered.text).not.toContain("pcs_")
    expect(third.logs.some((line) => line.includes("does not decrypt"))).toBe(true)
    await stop(third)
  }, 180_000)
})

describe("migration 0021", () => {
  test("encrypts the secrets stored before it, which then sign, sign in and replay as before", async () => {
    const databaseUrl = await freshDatabaseUrl()
    const settings = withSettings({ DATABASE_URL: databaseUrl })
    const old = ManagedRuntime.make(
      Layer.mergeAll(Users.Default, UsersRepo.Default).pipe(Layer.provideMerge(SqlClientLive), Layer.provide(settings))
    )
    const password = "correct horse battery staple"
    const email = `migrated.${Date.now()}@example.com`
    const secret = `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64")}`
    const { privateKey } = await jose.generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })
    const privateJwk = await jose.exportJWK(privateKey)
    const publicJwk = { kty: privateJwk.kty, crv: privateJwk.crv, x: privateJwk.x }
    const kid = await jose.calculateJwkThumbprint(publicJwk)
    const answer = JSON.stringify({ data: { key: "pcs_recordedbeforeencryption" } })
    const apiKeyBody = JSON.stringify({ name: "Before", scopes: ["projects:read"] })
    const hookId = makeId("webhook")
    const userId = await old.runPromise(
      Effect.gen(function* () {
        yield* runMigrationsBefore("0021_secrets_at_rest")
        // The user's rows as they were then: `Users.create` writes its audit record, whose table comes later (0023).
        const now = new Date().toISOString()
        const password_hash = yield* Effect.flatMap(Users, (users) => users.hashPassword(password))
        const org = { id: makeId("org"), name: "Before's organization", created_at: now }
        const user = { id: makeId("user"), org_id: org.id, email, name: "Before", password_hash, created_at: now }
        const usersRepo = yield* UsersRepo
        yield* Effect.zipRight(usersRepo.insertOrg(org), usersRepo.insert(user))
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO webhooks ${sql.insert(
          webhookRow({ id: hookId, userId: user.id, url: receiver.url("/migrated"), secret, at: now })
        )}`
        yield* sql`INSERT INTO jwt_signing_keys ${sql.insert({
          kid,
          private_jwk: JSON.stringify(privateJwk),
          public_jwk: JSON.stringify(publicJwk),
          created_at: now,
          retired_at: null
        })}`
        yield* sql`INSERT INTO idempotency_keys ${sql.insert({
          user_id: user.id,
          idempotency_key: "before",
          request_hash: requestHash("POST", "/v1/api-keys", apiKeyBody),
          status: 201,
          content_type: "application/json",
          body: answer,
          created_at: now,
          expires_at: new Date(Date.now() + 3_600_000).toISOString()
        })}`
        return user.id
      })
    )
    await old.dispose()

    // The first start with a key applies 0021.
    const server = await start(databaseUrl, A)
    const stored = await rowsOf<{ readonly value: string }>(
      server,
      `SELECT secret AS value FROM webhooks UNION ALL SELECT private_jwk FROM jwt_signing_keys
       UNION ALL SELECT body FROM idempotency_keys`
    )
    expect(stored.length).toBe(3)
    for (const { value } of stored) expect(Option.getOrUndefined(keyIdOf(value))).toBe(idOf(A))
    const ring = await Effect.runPromise(keyRingOf(A))
    const [webhook] = await rowsOf<{ readonly secret: string }>(server, "SELECT secret FROM webhooks")
    expect(await Effect.runPromise(ring.decrypt(webhook!.secret, hookId))).toBe(secret)

    // The migrated key signs sessions, the migrated secret signs deliveries, the recorded answer replays.
    const jwt = await signIn(server, email, password)
    expect(jose.decodeProtectedHeader(jwt).kid).toBe(kid)
    const verified = await jose.jwtVerify(jwt, await jose.importJWK({ ...publicJwk, alg: "EdDSA" }, "EdDSA"))
    expect(verified.payload.sub).toBe(userId)
    const project = await server.request("/v1/projects", { method: "POST", key: jwt, body: { name: "m" } })
    expect({ status: project.status, logs: project.status === 201 ? [] : server.logs.slice(-5) }).toEqual({
      status: 201,
      logs: []
    })
    const [delivery] = await receiver.waitFor(1, { path: "/migrated", timeoutMs: 15_000 })
    expect(verifies(secret, delivery!)).toBe(true)
    const replay = await server.request("/v1/api-keys", {
      method: "POST",
      key: jwt,
      rawBody: apiKeyBody,
      headers: { "idempotency-key": "before", "content-type": "application/json" }
    })
    expect(replay.headers.get("idempotent-replayed")).toBe("true")
    expect(replay.text).toBe(answer)
    await stop(server)
  }, 90_000)
})

describe("a missing or wrong key", () => {
  test("unset: SQLite makes secrets.key (0600) beside the database and says so; PostgreSQL refuses", async () => {
    const databaseUrl = await freshDatabaseUrl()
    if (usingPostgres()) {
      const refused = await refusal(databaseUrl, "")
      expect(refused).toContain("SECRETS_KEY is required with PostgreSQL")
      return
    }
    const server = await start(databaseUrl, "")
    const file = join(dirname(databaseUrl.replace(/^sqlite:/, "")), "secrets.key")
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(server.logs.some((line) => line.includes("SECRETS_KEY is unset: made") && line.includes(file))).toBe(true)
    await stop(server)
    // The next start reads it, and says nothing.
    const again = await start(databaseUrl, "")
    expect(again.logs.some((line) => line.includes("SECRETS_KEY is unset: made"))).toBe(false)
    await stop(again)
  }, 60_000)

  test("a malformed key stops start-up, naming SECRETS_KEY and not echoing it", async () => {
    const databaseUrl = await freshDatabaseUrl()
    const bad = "c2hvcnQta2V5"
    const refused = await refusal(databaseUrl, `${A},${bad}`)
    expect(refused).toContain("SECRETS_KEY must be one or more base64 keys of 32 bytes")
    expect(refused).not.toContain(bad)
    expect(refused).not.toContain(A)
  }, 60_000)

  test("another key than the one the secrets are under stops start-up, naming the key it needs", async () => {
    const databaseUrl = await migratedDatabaseUrl()
    const server = await start(databaseUrl, A)
    await stop(server)
    const refused = await refusal(databaseUrl, B)
    expect(refused).toContain("SECRETS_KEY does not hold the key")
    expect(refused).toContain(idOf(A))
  }, 60_000)
})
