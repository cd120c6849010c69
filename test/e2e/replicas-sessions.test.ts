/**
 * Sessions and suspension across two server processes on one PostgreSQL database (decisions.md "Sessions that end,
 * and users who can be stopped"): a session ended through one replica (logout, or DELETE of one session) answers
 * 401 on the other (the contract allows a second; here it is at once); a user suspended by the CLI is refused on both at once, with every credential,
 * and reactivating restores them on both. The next request is checked, with no waiting: on PostgreSQL every request
 * reads its credential. Only on PostgreSQL: SQLite is one process's file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as jose from "jose"
import { migratedDatabaseUrl, type ServerProcess, startServer, usingPostgres } from "../support/server.ts"

const POSTGRES = usingPostgres()
if (!POSTGRES) console.warn("replicas-sessions.test.ts: skipped: DATABASE_URL is not a postgres:// URL")

const BASE_URL = "http://replicas.test"
const ENV = {
  BASE_URL,
  RATE_LIMIT_PER_MINUTE: "100000",
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "100000",
  AUTH_IP_LIMIT_PER_MINUTE: "100000"
}
const password = "correct horse battery"

let replicas: Array<ServerProcess> = []

describe.skipIf(!POSTGRES)("sessions and suspension across two replicas on one PostgreSQL", () => {
  beforeAll(async () => {
    // Migrated already (test/e2e/replicas.test.ts starts replicas on an empty database); one after the other, so a
    // busy machine starts each within its time.
    const databaseUrl = await migratedDatabaseUrl()
    replicas = [await startServer({ databaseUrl, env: ENV })]
    replicas.push(await startServer({ databaseUrl, env: ENV }))
  }, 90_000)
  afterAll(async () => {
    await Promise.all(replicas.map((server) => server.stop()))
  }, 30_000)

  const [a, b] = [() => replicas[0]!, () => replicas[1]!]
  let counter = 0
  const person = async () => {
    const email = `replica.${++counter}.${Math.random().toString(36).slice(2, 8)}@example.com`
    const account = await a().fixtures.account({ email, name: `Replica ${counter}`, password })
    const key = (await a().fixtures.apiKey(account.id, { scopes: "read,write" })).key
    return { ...account, key }
  }
  const signIn = async (on: ServerProcess, email: string) => {
    const res = await on.request("/oauth/login", { method: "POST", body: { email, password } })
    expect(res.status).toBe(200)
    return res.body.access_token as string
  }
  const statusOn = async (on: ServerProcess, token: string) => (await on.request("/v1/users/me", { key: token })).status

  test("logout through one replica: the JWT is 401 unauthorized on the other", async () => {
    const ann = await person()
    const token = await signIn(a(), ann.email)
    expect(await statusOn(b(), token)).toBe(200)
    expect((await a().request("/oauth/logout", { method: "POST", key: token })).status).toBe(204)
    // At once: each request reads its session on PostgreSQL, so the next request on any replica is refused.
    expect(await statusOn(b(), token)).toBe(401)
    const res = await b().request("/v1/users/me", { key: token })
    expect(res.status).toBe(401)
    expect(res.body.error.code).toBe("unauthorized")
    expect(await statusOn(a(), token)).toBe(401)
  }, 60_000)

  test("a session ended on one replica through DELETE /v1/users/me/sessions/:id is 401 on the other", async () => {
    const bo = await person()
    const kept = await signIn(b(), bo.email)
    const ended = await signIn(a(), bo.email)
    const sid = String(jose.decodeJwt(ended).sid)
    expect(await statusOn(b(), ended)).toBe(200)
    expect((await b().request(`/v1/users/me/sessions/${sid}`, { method: "DELETE", key: kept })).status).toBe(204)
    expect(await statusOn(a(), ended)).toBe(401)
    expect(await statusOn(a(), kept)).toBe(200)
  }, 60_000)

  test("suspension and reactivation by the CLI hold on both replicas, for a key and a session", async () => {
    const cy = await person()
    const session = await signIn(a(), cy.email)
    for (const on of [a(), b()])
      for (const credential of [cy.key, session]) expect(await statusOn(on, credential)).toBe(200)
    await a().cli("users", "suspend", "--email", cy.email)
    for (const on of [a(), b()]) {
      for (const credential of [cy.key, session]) {
        expect(await statusOn(on, credential)).toBe(401)
      }
      expect((await on.request("/oauth/login", { method: "POST", body: { email: cy.email, password } })).status).toBe(
        401
      )
    }
    await b().cli("users", "reactivate", "--email", cy.email)
    for (const on of [a(), b()]) {
      for (const credential of [cy.key, session]) {
        expect(await statusOn(on, credential)).toBe(200)
      }
    }
  }, 60_000)
})
