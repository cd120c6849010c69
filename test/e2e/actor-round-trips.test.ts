/**
 * Issue 45, goal 6: a write names its actor (decisions.md "Who did it") from what authentication already read. The
 * credential's check reads the user's row (their organisation, whether they are suspended), so it reads their name
 * there too, and an OAuth access token's client with the token: the write's transaction sends no statement of its
 * own to learn who acts. Served in this process on the engine `DATABASE_URL` selects; the statements each request
 * sends are counted by its request id (a `Statement` transformer), not timed. The name stays current: after a
 * rename, the next write with each kind of credential names the user by their new name (on SQLite the credential
 * cache forgets what it kept when a user's row changes).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import { confidentialClient, type OAuthHarness, oauthLayers, oauthTokensOf } from "../support/oauthTokens.ts"
import type { Server } from "../support/server.ts"
import { onDatabase } from "../support/services.ts"
import { countedByRequest } from "../support/statements.ts"

/** The statements sent while serving each request, by its request id. */
const { sent, around } = countedByRequest()

const password = "correct horse battery"
const REDIRECT = "https://app.example.com/callback"

let server: Server
let oauth: OAuthHarness
let userId = ""
let clientId = ""
/** The user's three credentials, and the id each is recorded by in an audit record. */
const credentials: Array<{ kind: "api_key" | "session" | "oauth"; bearer: string; recordedAs: string }> = []

beforeAll(async () => {
  server = await startInProcess({ around })
  oauth = onDatabase(oauthLayers, server.databaseUrl)
  const email = `actor.${Math.random().toString(36).slice(2, 10)}@example.com`
  const account = await server.fixtures.account({ email, name: "Rita", password })
  userId = account.id
  const key = await server.fixtures.apiKey(account.id, { scopes: "read,write" })
  credentials.push({ kind: "api_key", bearer: key.key, recordedAs: key.id })

  const login = await server.request("/oauth/login", { method: "POST", body: { email, password } })
  expect(login.status).toBe(200)
  const sid = JSON.parse(atob(String(login.body.access_token).split(".")[1] ?? "")).sid
  credentials.push({ kind: "session", bearer: login.body.access_token, recordedAs: sid })

  const client = await confidentialClient(oauth, "Actor app", REDIRECT)
  const tokens = await oauthTokensOf(oauth, client, REDIRECT, account.id)
  clientId = client.id
  credentials.push({ kind: "oauth", bearer: tokens.accessToken, recordedAs: client.id })
}, 60_000)
afterAll(async () => {
  await oauth?.dispose()
  await server?.stop()
}, 20_000)

/** Creates a project with `bearer`; answers its id and the statements the request sent. */
const create = async (bearer: string, name: string) => {
  const requestId = crypto.randomUUID()
  const res = await server.request("/v1/projects", {
    method: "POST",
    key: bearer,
    body: { name },
    headers: { "x-request-id": requestId }
  })
  expect(res.status).toBe(201)
  return { id: String(res.body.data.id), statements: sent.get(`req_${requestId}`) ?? [] }
}

/** The caller's audit record of the project's creation. */
const recordOf = async (projectId: string) => {
  const log = await server.request("/v1/users/me/audit-log?action=project.created&per_page=100", {
    key: credentials[0]!.bearer
  })
  expect(log.status).toBe(200)
  return log.body.data.find((record: { target: { id: string } }) => record.target.id === projectId)
}

/** A statement that reads the users table or an OAuth token's client: what a write needed to learn who acts. */
const LOOKS_UP_ACTOR = /\bFROM\s+"?(users|oauth_tokens)"?/i

describe("a write's actor", () => {
  test("comes from the credential's check: the write sends no statement to learn who acts", async () => {
    for (const credential of credentials) {
      const made = await create(credential.bearer, `By ${credential.kind}`)
      // The count sees the create's own writes.
      expect(made.statements.some((text) => /INSERT\s+INTO\s+"?projects"?/i.test(text))).toBe(true)
      // The credential's own lookup may read `users` (on PostgreSQL, and on SQLite when nothing is kept); it is the
      // statement that finds the credential, before any write. After the first write nothing reads them.
      const firstWrite = made.statements.findIndex((text) => /^\s*(INSERT|UPDATE|DELETE)\b/i.test(text))
      expect({
        credential: credential.kind,
        after: made.statements.slice(firstWrite).filter((text) => LOOKS_UP_ACTOR.test(text))
      }).toEqual({ credential: credential.kind, after: [] })
      expect(await recordOf(made.id)).toMatchObject({
        actor: { type: "user", id: userId, name: "Rita" },
        credential: { type: credential.kind, id: credential.recordedAs }
      })
    }
    expect(credentials.map((credential) => credential.kind)).toEqual(["api_key", "session", "oauth"])
    expect(clientId).toMatch(/^cli_/)
  }, 60_000)

  test("is named as they are now: after a rename, every credential's next write carries the new name", async () => {
    // Each credential is used (and, on SQLite, kept) before the rename.
    for (const credential of credentials) await create(credential.bearer, `Before, by ${credential.kind}`)
    const renamed = await server.request("/v1/users/me", {
      method: "PUT",
      key: credentials[1]!.bearer,
      body: { name: "Rita Renamed" }
    })
    expect(renamed.status).toBe(200)
    for (const credential of credentials) {
      const made = await create(credential.bearer, `After, by ${credential.kind}`)
      expect(await recordOf(made.id)).toMatchObject({
        actor: { type: "user", id: userId, name: "Rita Renamed" },
        credential: { type: credential.kind, id: credential.recordedAs }
      })
      const event = await server.request(`/v1/events?type=project.created&per_page=100`, {
        key: credentials[0]!.bearer
      })
      expect(event.status).toBe(200)
      expect(event.body.data.find((e: { data: { id: string } }) => e.data.id === made.id)).toMatchObject({
        actor: { type: "user", id: userId, name: "Rita Renamed" }
      })
    }
  }, 60_000)
})
