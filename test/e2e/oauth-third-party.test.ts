/**
 * OAuth for third-party clients (issue 43 part 3), with `oauth4webapi` as the client: the RFC 9728 and RFC 8414
 * metadata against their required fields, the `WWW-Authenticate` challenges of `/v1` (parsed by the library),
 * introspection (RFC 7662), the per-client limits on `/oauth/token` and `/oauth/revoke` (429
 * `temporarily_unavailable` with `Retry-After`, across two servers sharing Redis), and CORS as seen from outside a
 * browser (test/browser/cors.test.ts calls from a page of another origin).
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import * as oauth from "oauth4webapi"
import { runStatement } from "../support/databases.ts"
import { startInProcess } from "../support/in-process.ts"
import { throughSignIn } from "../support/oauthPages.ts"
import { REDIS_SERVER, type RedisProcess, startRedis } from "../support/redis.ts"
import type { Server } from "../support/server.ts"

const REDIRECT = "http://127.0.0.1:9/callback"
const insecure = { [oauth.allowInsecureRequests]: true } as const
const password = "correct horse battery"

let server: Server
let as: oauth.AuthorizationServer
const user = { id: "", email: "" }
let confidential: { client_id: string; client_secret: string }
let other: { client_id: string; client_secret: string }
let publicClient: { client_id: string }

const makeUser = async (on: Server) => {
  const email = `tp.${Math.random().toString(36).slice(2, 10)}@example.com`
  const created = await on.cli<{ id: string }>(
    "users",
    "create",
    "--email",
    email,
    "--name",
    "Third",
    "--password",
    password
  )
  return { id: created.id, email }
}
const makeClient = (on: Server, name: string, ...extra: Array<string>) =>
  on.cli<{ client_id: string; client_secret: string }>(
    "oauth-clients",
    "create",
    "--name",
    name,
    "--redirect-uri",
    REDIRECT,
    ...extra
  )
const discover = async (on: Server) => {
  const issuer = new URL(`${on.url}/oauth`)
  return oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure })
  )
}

beforeAll(async () => {
  server = await startInProcess({ env: { AUTH_IP_LIMIT_PER_MINUTE: "100000" } })
  Object.assign(user, await makeUser(server))
  confidential = await makeClient(server, "Backend App")
  other = await makeClient(server, "Other App")
  publicClient = await makeClient(server, "Browser App", "--public")
  as = await discover(server)
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

/** A person's way through the sign-in and consent pages: answers the redirect back to the client. */
const codeFor = async (on: Server, clientId: string, scope: string, email: string, challenge?: string) => {
  const url = new URL(`${on.url}/oauth/authorize`)
  for (const [key, value] of Object.entries({
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: "code",
    scope
  }))
    url.searchParams.set(key, value)
  if (challenge !== undefined) {
    url.searchParams.set("code_challenge", challenge)
    url.searchParams.set("code_challenge_method", "S256")
  }
  const answered = await (await throughSignIn(url, email, password)).answer("approve")
  return new URL(answered.headers.get("location")!)
}

/** Tokens for a confidential client through oauth4webapi. */
const tokensFor = async (
  on: Server,
  server_as: oauth.AuthorizationServer,
  client: { client_id: string; client_secret: string },
  scope = "read write"
) => {
  const params = oauth.validateAuthResponse(
    server_as,
    { client_id: client.client_id },
    await codeFor(on, client.client_id, scope, user.email),
    oauth.skipStateCheck
  )
  const response = await oauth.authorizationCodeGrantRequest(
    server_as,
    { client_id: client.client_id },
    oauth.ClientSecretBasic(client.client_secret),
    params,
    REDIRECT,
    oauth.nopkce,
    insecure
  )
  return oauth.processAuthorizationCodeResponse(server_as, { client_id: client.client_id }, response)
}

describe("metadata documents", () => {
  test("RFC 9728 protected-resource metadata at both places: resource = {base_url}/v1 and the required fields", async () => {
    const resource = new URL(`${server.url}/v1`)
    // oauth4webapi looks where RFC 9728 §3.1 says, and checks `resource` against the identifier.
    const found = await oauth.processResourceDiscoveryResponse(
      resource,
      await oauth.resourceDiscoveryRequest(resource, insecure)
    )
    const bare = await server.request("/.well-known/oauth-protected-resource")
    expect(bare.status).toBe(200)
    for (const document of [found, bare.body]) {
      // §2: `resource` is REQUIRED; the rest are the decision's.
      expect(document.resource).toBe(`${server.url}/v1`)
      expect(document.authorization_servers).toEqual([`${server.url}/oauth`])
      expect(document.scopes_supported).toEqual([
        "read",
        "write",
        "projects:read",
        "projects:write",
        "team:manage",
        "billing:read"
      ])
      expect(document.bearer_methods_supported).toEqual(["header"])
    }
    // Each authorization server it names publishes its RFC 8414 metadata, found by the library.
    const named = await discover(server)
    expect(named.issuer).toBe(found.authorization_servers![0]!)
  }, 15_000)

  test("RFC 8414: the required fields, every endpoint an absolute URL, and introspection_endpoint", async () => {
    const metadata = (await server.request("/.well-known/oauth-authorization-server/oauth")).body
    // §2: `issuer` and `response_types_supported` are REQUIRED; the authorization and token endpoints are
    // required where their grants are supported.
    for (const name of ["issuer", "response_types_supported", "authorization_endpoint", "token_endpoint"])
      expect({ name, present: metadata[name] !== undefined }).toEqual({ name, present: true })
    const issuer = new URL(metadata.issuer)
    expect(issuer.search + issuer.hash).toBe("")
    for (const name of [
      "authorization_endpoint",
      "token_endpoint",
      "revocation_endpoint",
      "introspection_endpoint",
      "jwks_uri"
    ]) {
      expect(new URL(metadata[name]).origin).toBe(issuer.origin)
    }
    expect(metadata.introspection_endpoint).toBe(`${server.url}/oauth/introspect`)
    expect(metadata.introspection_endpoint_auth_methods_supported).toEqual([
      "client_secret_basic",
      "client_secret_post"
    ])
    expect(as.introspection_endpoint).toBe(metadata.introspection_endpoint)
  }, 15_000)
})

describe("WWW-Authenticate challenges on /v1", () => {
  const resourceMetadata = () => `${server.url}/.well-known/oauth-protected-resource/v1`
  const challengeOf = async (token: string, method: string, path: string, body?: unknown) => {
    const error = await oauth
      .protectedResourceRequest(
        token,
        method,
        new URL(`${server.url}${path}`),
        new Headers(body === undefined ? {} : { "content-type": "application/json" }),
        body === undefined ? null : JSON.stringify(body),
        insecure
      )
      .then(
        () => undefined,
        (thrown: unknown) => thrown
      )
    expect(error).toBeInstanceOf(oauth.WWWAuthenticateChallengeError)
    const challenge = error as oauth.WWWAuthenticateChallengeError
    expect(challenge.cause).toHaveLength(1)
    return { status: challenge.status, ...challenge.cause[0]! }
  }

  test("a 403 refused for scope: insufficient_scope with the scopes that would do (oauth4webapi's parser)", async () => {
    const tokens = await tokensFor(server, as, confidential, "projects:read")
    const create = await challengeOf(tokens.access_token, "POST", "/v1/projects", { name: "nope" })
    expect(create).toEqual({
      status: 403,
      scheme: "bearer",
      parameters: {
        realm: "api",
        error: "insufficient_scope",
        scope: "write projects:write",
        resource_metadata: resourceMetadata()
      }
    })
    const me = await challengeOf(tokens.access_token, "GET", "/v1/users/me")
    expect(me.parameters.scope).toBe("read")
    // An API key refused for scope says the same.
    const key = (await server.user({ scopes: "projects:read" })).key
    const team = await challengeOf(key, "POST", "/v1/teams", { name: "nope" })
    expect(team).toMatchObject({ status: 403, parameters: { error: "insufficient_scope", scope: "team:manage" } })
  }, 20_000)

  test("a 401: invalid_token when a token was sent, no error when none was; both name the metadata", async () => {
    const invalid = await challengeOf(`pco_${"A".repeat(40)}`, "GET", "/v1/projects")
    expect(invalid).toEqual({
      status: 401,
      scheme: "bearer",
      parameters: { realm: "api", error: "invalid_token", resource_metadata: resourceMetadata() }
    })
    for (const token of ["pcs_nope", "a.b.c", "garbage"]) {
      expect((await challengeOf(token, "GET", "/v1/projects")).parameters.error).toBe("invalid_token")
    }
    const none = await server.request("/v1/projects")
    expect(none.status).toBe(401)
    expect(none.headers.get("www-authenticate")).toBe(`Bearer realm="api", resource_metadata="${resourceMetadata()}"`)
    // A revoked token too.
    const tokens = await tokensFor(server, as, confidential)
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(
        as,
        { client_id: confidential.client_id },
        oauth.ClientSecretBasic(confidential.client_secret),
        tokens.access_token,
        insecure
      )
    )
    expect((await challengeOf(tokens.access_token, "GET", "/v1/users/me")).parameters.error).toBe("invalid_token")
  }, 20_000)

  test("a 403 that no scope would cure carries no challenge", async () => {
    const tokens = await tokensFor(server, as, confidential, "read write")
    const keys = await server.request("/v1/api-keys", { key: tokens.access_token })
    expect(keys.status).toBe(403)
    expect(keys.headers.get("www-authenticate")).toBeNull()
    // Nor when the token also lacks the scope: `read` would not get it there either.
    const narrow = await tokensFor(server, as, confidential, "projects:read")
    for (const path of ["/v1/api-keys", "/v1/oauth-clients"]) {
      const refused = await server.request(path, { key: narrow.access_token })
      expect(refused.status).toBe(403)
      expect(refused.headers.get("www-authenticate")).toBeNull()
    }
  }, 20_000)
})

describe("introspection (RFC 7662) with oauth4webapi", () => {
  const introspect = async (token: string, client = confidential) =>
    oauth.processIntrospectionResponse(
      as,
      { client_id: client.client_id },
      await oauth.introspectionRequest(
        as,
        { client_id: client.client_id },
        oauth.ClientSecretBasic(client.client_secret),
        token,
        insecure
      )
    )

  test("the client's own live access and refresh tokens are active, with what they are", async () => {
    const before = Math.floor(Date.now() / 1000)
    const tokens = await tokensFor(server, as, confidential, "read projects:write")
    const access = await introspect(tokens.access_token)
    expect(access).toEqual({
      active: true,
      scope: "read projects:write",
      client_id: confidential.client_id,
      sub: user.id,
      exp: expect.any(Number),
      iat: expect.any(Number),
      token_type: "Bearer"
    })
    expect(access.iat).toBeGreaterThanOrEqual(before - 1)
    expect(access.exp! - access.iat!).toBe(3600)
    const refresh = await introspect(tokens.refresh_token!)
    expect(refresh).toMatchObject({ active: true, token_type: "refresh_token", sub: user.id })
    // The same through client_secret_post.
    const posted = await oauth.processIntrospectionResponse(
      as,
      { client_id: confidential.client_id },
      await oauth.introspectionRequest(
        as,
        { client_id: confidential.client_id },
        oauth.ClientSecretPost(confidential.client_secret),
        tokens.access_token,
        insecure
      )
    )
    expect(posted.active).toBe(true)
  }, 20_000)

  test("inactive: another client's token, a rotated, revoked or expired one, an API key, a session JWT, garbage", async () => {
    const tokens = await tokensFor(server, as, confidential)
    const others = await tokensFor(server, as, other)
    expect(await introspect(others.access_token)).toEqual({ active: false })
    expect((await introspect(others.access_token, other)).active).toBe(true)

    // Rotated: the old refresh token is spent.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      { client_id: confidential.client_id },
      await oauth.refreshTokenGrantRequest(
        as,
        { client_id: confidential.client_id },
        oauth.ClientSecretBasic(confidential.client_secret),
        tokens.refresh_token!,
        insecure
      )
    )
    expect(await introspect(tokens.refresh_token!)).toEqual({ active: false })
    expect((await introspect(refreshed.refresh_token!)).active).toBe(true)

    // Revoked.
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(
        as,
        { client_id: confidential.client_id },
        oauth.ClientSecretBasic(confidential.client_secret),
        refreshed.access_token,
        insecure
      )
    )
    expect(await introspect(refreshed.access_token)).toEqual({ active: false })

    // Expired.
    const hash = createHash("sha256").update(refreshed.refresh_token!).digest("hex")
    await runStatement(
      server.databaseUrl,
      `UPDATE oauth_tokens SET expires_at = '2000-01-01T00:00:00.000Z' WHERE token_hash = '${hash}'`
    )
    expect(await introspect(refreshed.refresh_token!)).toEqual({ active: false })

    // Not OAuth tokens at all.
    const login = await fetch(`${server.url}/oauth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: user.email, password })
    })
    const session: { access_token: string } = await login.json()
    expect(await introspect(session.access_token)).toEqual({ active: false })
    expect(await introspect((await server.user()).key)).toEqual({ active: false })
    expect(await introspect("garbage")).toEqual({ active: false })
  }, 30_000)

  test("a suspended user's tokens introspect as inactive and do not refresh; reactivated, they are live again", async () => {
    const tokens = await tokensFor(server, as, confidential)
    expect((await introspect(tokens.access_token)).active).toBe(true)
    await server.cli("users", "suspend", "--email", user.email)
    try {
      expect(await introspect(tokens.access_token)).toEqual({ active: false })
      expect(await introspect(tokens.refresh_token!)).toEqual({ active: false })
      const refused = await oauth.refreshTokenGrantRequest(
        as,
        { client_id: confidential.client_id },
        oauth.ClientSecretBasic(confidential.client_secret),
        tokens.refresh_token!,
        insecure
      )
      expect(refused.status).toBe(400)
      expect((await refused.json()).error).toBe("invalid_grant")
    } finally {
      await server.cli("users", "reactivate", "--email", user.email)
    }
    expect((await introspect(tokens.access_token)).active).toBe(true)
  }, 30_000)

  test("a public client, a wrong secret or no client at all: 401 invalid_client; no token: invalid_request", async () => {
    const tokens = await tokensFor(server, as, confidential)
    const refused = async (response: Response) => {
      const error = await oauth.processIntrospectionResponse(as, { client_id: "x" }, response).then(
        () => undefined,
        (thrown: unknown) => thrown
      )
      expect(error).toBeInstanceOf(oauth.ResponseBodyError)
      const body = error as oauth.ResponseBodyError
      return { status: body.status, error: body.error }
    }
    const asPublic = await oauth.introspectionRequest(
      as,
      { client_id: publicClient.client_id },
      oauth.None(),
      tokens.access_token,
      insecure
    )
    expect(await refused(asPublic)).toEqual({ status: 401, error: "invalid_client" })
    const wrong = await oauth.introspectionRequest(
      as,
      { client_id: confidential.client_id },
      oauth.ClientSecretPost("pcc_wrong"),
      tokens.access_token,
      insecure
    )
    expect(await refused(wrong)).toEqual({ status: 401, error: "invalid_client" })
    const anonymous = await fetch(`${server.url}/oauth/introspect`, {
      method: "POST",
      body: new URLSearchParams({ token: tokens.access_token })
    })
    expect(await refused(anonymous)).toEqual({ status: 401, error: "invalid_client" })
    const noToken = await fetch(`${server.url}/oauth/introspect`, {
      method: "POST",
      body: new URLSearchParams({ client_id: confidential.client_id, client_secret: confidential.client_secret })
    })
    expect(await refused(noToken)).toEqual({ status: 400, error: "invalid_request" })
  }, 20_000)
})

describe("CORS (without a browser: test/browser/cors.test.ts has one)", () => {
  test("preflights on /v1 and the token endpoints: 204 with the methods and the headers a client sends", async () => {
    for (const [path, methods] of [
      ["/v1/projects", "GET, HEAD, POST, PUT, DELETE"],
      ["/v1/projects/proj_01jd3xkq8w0000000000000000", "GET, HEAD, POST, PUT, DELETE"],
      ["/oauth/token", "POST"],
      ["/oauth/revoke", "POST"],
      ["/.well-known/oauth-authorization-server/oauth", "GET, HEAD"],
      ["/.well-known/oauth-protected-resource/v1", "GET, HEAD"]
    ] as const) {
      const res = await fetch(`${server.url}${path}`, {
        method: "OPTIONS",
        headers: {
          origin: "http://127.0.0.1:9",
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization, content-type, idempotency-key"
        }
      })
      expect({ path, status: res.status }).toEqual({ path, status: 204 })
      expect(res.headers.get("access-control-allow-origin")).toBe("*")
      expect(res.headers.get("access-control-allow-methods")).toBe(methods)
      expect(res.headers.get("access-control-allow-headers")).toBe(
        "Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, X-Request-Id"
      )
      expect(res.headers.get("access-control-allow-credentials")).toBeNull()
    }
  }, 15_000)

  test("answers say who may read them and which headers; pages, sign-in and introspection send no CORS", async () => {
    const key = (await server.user()).key
    const me = await server.request("/v1/users/me", { key, headers: { origin: "http://127.0.0.1:9" } })
    expect(me.status).toBe(200)
    expect(me.headers.get("access-control-allow-origin")).toBe("*")
    expect(me.headers.get("access-control-expose-headers")).toBe(
      "ETag, Link, Retry-After, X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, " +
        "Idempotent-Replayed, WWW-Authenticate"
    )
    const unauthorized = await server.request("/v1/users/me")
    expect(unauthorized.headers.get("access-control-allow-origin")).toBe("*")
    const token = await server.request("/oauth/token", { method: "POST", rawBody: "" })
    expect(token.headers.get("access-control-allow-origin")).toBe("*")
    for (const [method, path] of [
      ["GET", "/dashboard"],
      ["GET", `/oauth/authorize?client_id=${publicClient.client_id}`],
      ["POST", "/oauth/login"],
      ["POST", "/oauth/introspect"],
      ["OPTIONS", "/oauth/introspect"],
      ["OPTIONS", "/oauth/login"],
      ["GET", "/docs"],
      ["GET", "/health/live"]
    ] as const) {
      const res = await fetch(`${server.url}${path}`, { method, headers: { origin: "http://127.0.0.1:9" } })
      expect({ path, method, cors: res.headers.get("access-control-allow-origin") }).toEqual({
        path,
        method,
        cors: null
      })
      expect(res.status).not.toBe(204)
    }
  }, 30_000)
})

describe("limits per client on /oauth/token and /oauth/revoke", () => {
  let limited: Server
  let limitedAs: oauth.AuthorizationServer
  let backend: { client_id: string; client_secret: string }
  let second: { client_id: string; client_secret: string }
  let browserApp: { client_id: string }
  let person: { id: string; email: string }

  beforeAll(async () => {
    limited = await startInProcess({
      env: { OAUTH_CLIENT_LIMIT_PER_MINUTE: "3", AUTH_IP_LIMIT_PER_MINUTE: "2", TRUSTED_PROXIES: "127.0.0.1" }
    })
    person = await makeUser(limited)
    backend = await makeClient(limited, "Backend")
    second = await makeClient(limited, "Second")
    browserApp = await makeClient(limited, "Browser", "--public")
    limitedAs = await discover(limited)
  }, 60_000)
  afterAll(async () => {
    await limited?.stop()
  }, 20_000)

  const revoke = (client: { client_id: string; client_secret: string }, secret = client.client_secret) =>
    oauth.revocationRequest(
      limitedAs,
      { client_id: client.client_id },
      oauth.ClientSecretPost(secret),
      `pco_${"B".repeat(40)}`,
      insecure
    )

  test("each client has its own count, not its IP's: over it, 429 temporarily_unavailable with Retry-After", async () => {
    // More calls from this one address than the per-IP limit (2), each client within its own (3).
    for (const client of [backend, second]) {
      for (let i = 0; i < 2; i++) await oauth.processRevocationResponse(await revoke(client))
    }
    // The third of the backend's calls is a token request: one count for both endpoints.
    const callback = await codeFor(limited, backend.client_id, "read", person.email)
    const tokens = await oauth.processAuthorizationCodeResponse(
      limitedAs,
      { client_id: backend.client_id },
      await oauth.authorizationCodeGrantRequest(
        limitedAs,
        { client_id: backend.client_id },
        oauth.ClientSecretPost(backend.client_secret),
        oauth.validateAuthResponse(limitedAs, { client_id: backend.client_id }, callback, oauth.skipStateCheck),
        REDIRECT,
        oauth.nopkce,
        insecure
      )
    )
    const response = await oauth.refreshTokenGrantRequest(
      limitedAs,
      { client_id: backend.client_id },
      oauth.ClientSecretPost(backend.client_secret),
      tokens.refresh_token!,
      insecure
    )
    expect(response.status).toBe(429)
    expect(Number(response.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    const error = await oauth.processRefreshTokenResponse(limitedAs, { client_id: backend.client_id }, response).then(
      () => undefined,
      (thrown: unknown) => thrown
    )
    expect(error).toBeInstanceOf(oauth.ResponseBodyError)
    expect((error as oauth.ResponseBodyError).error).toBe("temporarily_unavailable")
    expect((error as oauth.ResponseBodyError).error_description).toContain("retry in")
    // The refresh token was not spent by the refused call.
    const other = await revoke(backend)
    expect(other.status).toBe(429)
    // The second client still has one call left.
    await oauth.processRevocationResponse(await revoke(second))
  }, 30_000)

  test("failed client authentication counts against the IP (then nothing from it is looked at)", async () => {
    const third = await makeClient(limited, "Third")
    const statuses: Array<number> = []
    for (let i = 0; i < 3; i++) statuses.push((await revoke(third, "pcc_wrong")).status)
    expect(statuses).toEqual([401, 401, 429])
    const refused = await revoke(third)
    expect(refused.status).toBe(429)
    expect(await refused.json()).toMatchObject({ error: "temporarily_unavailable" })
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    // Not a word of rate_limited outside /v1: /oauth/login's 429 is RFC 6749's too.
    let login: globalThis.Response | undefined
    for (let i = 0; i < 5 && login?.status !== 429; i++) {
      login = await fetch(`${limited.url}/oauth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "nobody@example.com", password: "whatever" })
      })
    }
    expect(login?.status).toBe(429)
    expect(await login!.json()).toMatchObject({ error: "temporarily_unavailable" })
  }, 30_000)

  test("a public client (its id is all it shows) has a count per address: no one spends everyone's", async () => {
    const from = (address: string) =>
      fetch(`${limited.url}/oauth/revoke`, {
        method: "POST",
        headers: { "x-forwarded-for": address },
        body: new URLSearchParams({ token: "pco_x", client_id: browserApp.client_id })
      })
    const statuses: Array<number> = []
    for (let i = 0; i < 4; i++) statuses.push((await from("10.0.0.1")).status)
    expect(statuses).toEqual([200, 200, 200, 429])
    expect((await from("10.0.0.2")).status).toBe(200)
  }, 15_000)
})

describe.skipIf(REDIS_SERVER === null)("per-client limits shared by two servers through Redis", () => {
  let redis: RedisProcess
  let a: Server
  let b: Server
  beforeAll(async () => {
    redis = await startRedis()
    const env = { REDIS_URL: redis.url, OAUTH_CLIENT_LIMIT_PER_MINUTE: "3", AUTH_IP_LIMIT_PER_MINUTE: "100" }
    a = await startInProcess({ env })
    b = await startInProcess({ env, databaseUrl: a.databaseUrl })
  }, 60_000)
  afterAll(async () => {
    await b?.stop()
    await a?.stop()
    redis?.process.kill()
  }, 30_000)

  test("the fourth call of a client is refused whichever server takes it", async () => {
    const client = await makeClient(a, "Shared")
    const call = (on: Server) =>
      fetch(`${on.url}/oauth/revoke`, {
        method: "POST",
        body: new URLSearchParams({ token: "pco_x", client_id: client.client_id, client_secret: client.client_secret })
      })
    const statuses = [(await call(a)).status, (await call(b)).status, (await call(a)).status]
    expect(statuses).toEqual([200, 200, 200])
    const fourth = await call(b)
    expect(fourth.status).toBe(429)
    expect(await fourth.json()).toMatchObject({ error: "temporarily_unavailable" })
  }, 30_000)
})
