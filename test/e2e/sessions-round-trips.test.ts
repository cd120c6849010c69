/**
 * Issue 41: checking that a session is live costs a request no more trips to the database than an API key's check
 * (decisions.md "Sessions that end"; the figures are bench/README.md's `session.sh`). A GET of a project by id is
 * served in this process on the engine `DATABASE_URL` selects, and the statements each request sends are counted as
 * they go to the database (a `Statement` transformer, by the request's id), not timed: with a session JWT no more
 * than with an API key (on PostgreSQL the credential's lookup and the project's read; on SQLite the credential cache
 * answers both). The once-a-minute touch of `last_used_at` is left out of the count: it is not on every request.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import type { Server } from "../support/server.ts"
import { countedByRequest } from "../support/statements.ts"

/** The statements sent while serving each request, by its request id. */
const { sent, around } = countedByRequest()

const password = "correct horse battery"
let server: Server
let key = ""
let session = ""
let projectId = ""

beforeAll(async () => {
  server = await startInProcess({ around })
  const email = `round.trips.${Math.random().toString(36).slice(2, 10)}@example.com`
  const account = await server.fixtures.account({ email, name: "Rita", password })
  key = (await server.fixtures.apiKey(account.id, { scopes: "read,write" })).key
  const login = await server.request("/oauth/login", { method: "POST", body: { email, password } })
  expect(login.status).toBe(200)
  session = login.body.access_token
  const made = await server.request("/v1/projects", { method: "POST", key, body: { name: "Counted" } })
  expect(made.status).toBe(201)
  projectId = made.body.data.id
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

/** The touch of `last_used_at` (at most once a minute per credential), not part of every request. */
const TOUCH = /^\s*UPDATE\s+"?(sessions|api_keys)"?\s+SET\s+"?last_used_at/i

/** The statements one GET of the project by id sends with `credential` (after one request to warm what is kept). */
const statementsOf = async (credential: string) => {
  expect((await server.request(`/v1/projects/${projectId}`, { key: credential })).status).toBe(200)
  const requestId = crypto.randomUUID()
  const res = await server.request(`/v1/projects/${projectId}`, {
    key: credential,
    headers: { "x-request-id": requestId }
  })
  expect(res.status).toBe(200)
  return (sent.get(`req_${requestId}`) ?? []).filter((text) => !TOUCH.test(text))
}

describe("a GET by id with a session JWT", () => {
  test("sends no more statements than with an API key (the count sees the project's read)", async () => {
    for (let round = 0; round < 3; round++) {
      const withKey = await statementsOf(key)
      const withSession = await statementsOf(session)
      expect(withKey.some((text) => /\bprojects\b/i.test(text))).toBe(true)
      expect(withSession.some((text) => /\bprojects\b/i.test(text))).toBe(true)
      expect({ round, statements: withSession.length <= withKey.length, withSession, withKey }).toMatchObject({
        round,
        statements: true
      })
    }
  }, 30_000)
})
