/**
 * A key belongs to the user, any of their credentials (docs/idempotency.md), but a replay answers only a credential
 * the request would not refuse: an OAuth access token cannot manage API keys or OAuth clients, and a credential
 * cannot hand on a scope it lacks, so neither gets the recorded answer (a new key's or client's secret) of a keyed
 * request another of the user's credentials made. It gets the 403 it gets without the key, and the key is left as
 * it was: another credential that may make the request still gets the replay.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import { confidentialClient, type OAuthHarness, oauthLayers, oauthTokensOf } from "../support/oauthTokens.ts"
import type { Response, Server } from "../support/server.ts"
import { onDatabase } from "../support/services.ts"

const REDIRECT = "https://app.example.com/callback"
let server: Server
let oauth: OAuthHarness
let app = { id: "", secret: "" }

beforeAll(async () => {
  server = await startInProcess()
  oauth = onDatabase(oauthLayers, server.databaseUrl)
  app = await confidentialClient(oauth, "Third-party app", REDIRECT)
}, 60_000)
afterAll(async () => {
  await oauth?.dispose()
  await server?.stop()
}, 20_000)

const keyed = (idempotencyKey: string) => ({ "idempotency-key": idempotencyKey })

/** `replayed` is `first` again, byte for byte, marked as a replay. */
const expectReplayOf = (first: Response, replayed: Response) =>
  expect({
    status: replayed.status,
    replayed: replayed.headers.get("idempotent-replayed"),
    text: replayed.text
  }).toEqual({ status: first.status, replayed: "true", text: first.text })

describe("a replay answers only a credential the request would not refuse", () => {
  test("an OAuth access token gets 403, not the API key another credential of the user created", async () => {
    const ann = await server.user({ name: "Ann", scopes: "read,write" })
    const body = { name: "ci", scopes: ["read"] }
    const headers = keyed(`api-key-${crypto.randomUUID()}`)
    const first = await server.request("/v1/api-keys", { method: "POST", key: ann.key, body, headers })
    expect(first.status).toBe(201)
    const token = (await oauthTokensOf(oauth, app, REDIRECT, ann.id)).accessToken

    const replayed = await server.request("/v1/api-keys", { method: "POST", key: token, body, headers })
    expect({ status: replayed.status, replayed: replayed.headers.get("idempotent-replayed") }).toEqual({
      status: 403,
      replayed: null
    })
    expect(JSON.stringify(replayed.body)).not.toContain(first.body.data.key)
    expect(replayed.body.error.message).toBe("OAuth access tokens cannot manage API keys")

    // The key is as it was: the user's own credential still gets the recorded answer.
    expectReplayOf(first, await server.request("/v1/api-keys", { method: "POST", key: ann.key, body, headers }))
  }, 30_000)

  test("a key without a scope gets 403, not the key with that scope another credential created", async () => {
    const bo = await server.user({ name: "Bo", scopes: "read,write,team:manage" })
    const weaker = (await server.fixtures.apiKey(bo.id, { scopes: "read,write" })).key
    const equal = (await server.fixtures.apiKey(bo.id, { scopes: "read,write,team:manage" })).key
    const body = { name: "admin", scopes: ["team:manage"] }
    const headers = keyed(`api-key-${crypto.randomUUID()}`)
    const first = await server.request("/v1/api-keys", { method: "POST", key: bo.key, body, headers })
    expect(first.status).toBe(201)

    const replayed = await server.request("/v1/api-keys", { method: "POST", key: weaker, body, headers })
    expect({ status: replayed.status, message: replayed.body.error?.message }).toEqual({
      status: 403,
      message: "This credential cannot grant scope it lacks: team:manage"
    })
    expect(JSON.stringify(replayed.body)).not.toContain(first.body.data.key)

    // Any credential of the user that may make the request replays it.
    expectReplayOf(first, await server.request("/v1/api-keys", { method: "POST", key: equal, body, headers }))
  }, 30_000)

  test("an OAuth access token gets 403, not the OAuth client (or its rotated secret) the user made", async () => {
    const cy = await server.user({ name: "Cy", scopes: "read,write" })
    const token = (await oauthTokensOf(oauth, app, REDIRECT, cy.id)).accessToken

    const body = { name: "Cy's app", redirect_uris: [REDIRECT] }
    const created = keyed(`client-${crypto.randomUUID()}`)
    const first = await server.request("/v1/oauth-clients", { method: "POST", key: cy.key, body, headers: created })
    expect(first.status).toBe(201)
    const replayed = await server.request("/v1/oauth-clients", { method: "POST", key: token, body, headers: created })
    expect(replayed.status).toBe(403)
    expect(JSON.stringify(replayed.body)).not.toContain(first.body.data.client_secret)

    const path = `/v1/oauth-clients/${first.body.data.id}/rotate-secret`
    const rotated = keyed(`rotate-${crypto.randomUUID()}`)
    const rotation = await server.request(path, { method: "POST", key: cy.key, headers: rotated })
    expect(rotation.status).toBe(200)
    const replayedRotation = await server.request(path, { method: "POST", key: token, headers: rotated })
    expect(replayedRotation.status).toBe(403)
    expect(JSON.stringify(replayedRotation.body)).not.toContain(rotation.body.data.client_secret)
  }, 30_000)
})
