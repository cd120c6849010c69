/**
 * JWT sessions: `POST /oauth/login`, checked by an independent verifier (`jose` against our JWKS), key rotation,
 * and the tokens the server must refuse. A second server signs with a `JWT_PRIVATE_KEY` the test holds too, so the
 * test can forge tokens that are correctly signed but wrong in one claim. Also the sign-in rate limits.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as jose from "jose"
import { startInProcess } from "../support/in-process.ts"
import type { Server } from "../support/server.ts"

let server: Server // keys in the database
let keyed: Server // JWT_PRIVATE_KEY, default rate limits
let privateKey: CryptoKey
const password = "correct horse battery"

interface Account {
  readonly id: string
  readonly email: string
}

const account = async (on: Server): Promise<Account> => {
  const email = `jwt.${Math.random().toString(36).slice(2, 10)}@example.com`
  const created = await on.fixtures.account({ email, name: "Jwt User", password })
  return { id: created.id, email }
}

let ann: Account

beforeAll(async () => {
  const pair = await jose.generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true })
  privateKey = pair.privateKey
  const pem = await jose.exportPKCS8(pair.privateKey)
  ;[server, keyed] = await Promise.all([
    startInProcess({ env: { AUTH_IP_LIMIT_PER_MINUTE: "100000" } }),
    startInProcess({ env: { JWT_PRIVATE_KEY: pem } })
  ])
  ann = await account(server)
}, 60_000)
afterAll(async () => {
  await Promise.all([server?.stop(), keyed?.stop()])
}, 20_000)

const login = (on: Server, email: string, pw: string) =>
  on.request("/oauth/login", { method: "POST", body: { email, password: pw } })

const verifyRemote = (on: Server, token: string) =>
  jose.jwtVerify(token, jose.createRemoteJWKSet(new URL(`${on.url}/oauth/jwks.json`)), {
    algorithms: ["EdDSA"],
    issuer: `${on.url}/oauth`,
    audience: `${on.url}/v1`
  })

describe("POST /oauth/login", () => {
  test("answers a JWT that jose verifies against our JWKS, and that authenticates on /v1", async () => {
    const res = await login(server, ann.email, password)
    expect(res.status).toBe(200)
    expect(res.headers.get("cache-control")).toBe("no-store")
    expect(Object.keys(res.body).sort()).toEqual(["access_token", "expires_in", "token_type"])
    expect(res.body).toMatchObject({ token_type: "Bearer", expires_in: 3600 })
    const { payload, protectedHeader } = await verifyRemote(server, res.body.access_token)
    expect(protectedHeader.alg).toBe("EdDSA")
    expect(typeof protectedHeader.kid).toBe("string")
    expect(payload.sub).toBe(ann.id)
    expect(payload.org).toMatch(/^org_/)
    expect(payload.exp! - payload.iat!).toBe(3600)
    expect(typeof payload.jti).toBe("string")
    expect(String(payload.scope).split(" ")).toEqual(
      expect.arrayContaining(["read", "write", "projects:read", "projects:write", "team:manage"])
    )

    const me = await server.request("/v1/users/me", { key: res.body.access_token })
    expect(me.status).toBe(200)
    expect(me.body.data.id).toBe(ann.id)
    // A session is the user: it may manage API keys (OAuth tokens may not).
    const key = await server.request("/v1/api-keys", {
      method: "POST",
      key: res.body.access_token,
      body: { name: "from a session", scopes: ["read"] }
    })
    expect(key.status).toBe(201)
  }, 20_000)

  test("a wrong password and an unknown email get the same 401", async () => {
    const wrong = await login(server, ann.email, "wrong password")
    const unknown = await login(server, "nobody@example.com", password)
    expect(wrong.status).toBe(401)
    expect(unknown.status).toBe(401)
    expect(wrong.body).toEqual(unknown.body)
    expect(wrong.body.error).toBe("invalid_grant")
  }, 30_000)

  test("a changed password (cli users set-password) takes effect", async () => {
    const bob = await account(server)
    await server.cli("users", "set-password", "--user", bob.id, "--password", "another password")
    expect((await login(server, bob.email, password)).status).toBe(401)
    expect((await login(server, bob.email, "another password")).status).toBe(200)
  }, 30_000)

  test("tampered tokens and alg none are 401", async () => {
    const token: string = (await login(server, ann.email, password)).body.access_token
    const [header, payload, signature] = token.split(".")
    const claims = JSON.parse(Buffer.from(payload!, "base64url").toString())
    const forgedPayload = Buffer.from(JSON.stringify({ ...claims, sub: "usr_01jd3xkq8w0000000000000000" })).toString(
      "base64url"
    )
    const flipped = `${signature!.slice(0, 10)}${signature![10] === "A" ? "B" : "A"}${signature!.slice(11)}`
    const none = `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${payload}.`
    const noneWithKid = `${Buffer.from(JSON.stringify({ alg: "none", kid: JSON.parse(Buffer.from(header!, "base64url").toString()).kid })).toString("base64url")}.${payload}.`
    for (const bad of [
      `${header}.${forgedPayload}.${signature}`,
      `${header}.${payload}.${flipped}`,
      none,
      noneWithKid
    ]) {
      const res = await server.request("/v1/users/me", { key: bad })
      expect(res.status).toBe(401)
      expect(res.body.error.code).toBe("unauthorized")
      expect(res.headers.get("www-authenticate")).toContain(`error="invalid_token"`)
    }
  }, 20_000)

  test("jwt-keys rotate: the retired key stays in the JWKS and its tokens keep working", async () => {
    const before: string = (await login(server, ann.email, password)).body.access_token
    const oldKid = jose.decodeProtectedHeader(before).kid
    const rotated = await server.cli<{ kid: string; retired: Array<string> }>("jwt-keys", "rotate")
    expect(rotated.retired).toContain(oldKid!)
    const jwks = await server.request("/oauth/jwks.json")
    const kids = jwks.body.keys.map((key: { kid: string }) => key.kid)
    expect(kids).toEqual(expect.arrayContaining([oldKid, rotated.kid]))
    expect(jwks.body.keys.every((key: Record<string, unknown>) => !("d" in key))).toBe(true)

    const after: string = (await login(server, ann.email, password)).body.access_token
    expect(jose.decodeProtectedHeader(after).kid).toBe(rotated.kid)
    for (const token of [before, after]) {
      await verifyRemote(server, token)
      expect((await server.request("/v1/users/me", { key: token })).status).toBe(200)
    }
  }, 30_000)
})

describe("JWT_PRIVATE_KEY: tokens signed with the right key but wrong claims", () => {
  let bea: Account
  /** A live session of Bea's (from a sign-in): a forged token must name one, as every session JWT does. */
  let sid: string
  beforeAll(async () => {
    bea = await account(keyed)
    sid = String(jose.decodeJwt((await login(keyed, bea.email, password)).body.access_token).sid)
  }, 30_000)

  const forge = async (claims: { iss?: string; aud?: string; exp?: number; iat?: number; sid?: string | null }) => {
    const now = Math.floor(Date.now() / 1000)
    const jwks = await keyed.request("/oauth/jwks.json")
    const kid: string = jwks.body.keys[0].kid
    const session = claims.sid === undefined ? { sid } : claims.sid === null ? {} : { sid: claims.sid }
    return new jose.SignJWT({ org: "org_01jd3xkq8w0000000000000000", scope: "read write", ...session })
      .setProtectedHeader({ alg: "EdDSA", kid })
      .setSubject(bea.id)
      .setIssuer(claims.iss ?? `${keyed.url}/oauth`)
      .setAudience(claims.aud ?? `${keyed.url}/v1`)
      .setIssuedAt(claims.iat ?? now)
      .setExpirationTime(claims.exp ?? now + 600)
      .setJti(crypto.randomUUID())
      .sign(privateKey)
  }

  test("the configured key signs the sessions and is the one in the JWKS", async () => {
    const res = await login(keyed, bea.email, password)
    expect(res.status).toBe(200)
    const { payload } = await verifyRemote(keyed, res.body.access_token)
    expect(payload.sub).toBe(bea.id)
    const jwks = await keyed.request("/oauth/jwks.json")
    expect(jwks.body.keys).toHaveLength(1)
    expect(jwks.body.keys[0].kid).toBe(jose.decodeProtectedHeader(res.body.access_token).kid)
    // A correctly forged token with good claims and a live session is accepted: the test holds the server's key.
    expect((await keyed.request("/v1/users/me", { key: await forge({}) })).status).toBe(200)
    // Without a session, or naming one that does not exist, it is not.
    expect((await keyed.request("/v1/users/me", { key: await forge({ sid: null }) })).status).toBe(401)
    const made = await forge({ sid: "ses_01jd3xkq8w0000000000000000" })
    expect((await keyed.request("/v1/users/me", { key: made })).status).toBe(401)
  }, 20_000)

  test("wrong issuer, wrong audience and expired tokens are 401; 30 s of clock skew is allowed", async () => {
    const now = Math.floor(Date.now() / 1000)
    const cases: Array<[string, Parameters<typeof forge>[0], number]> = [
      ["wrong issuer", { iss: "http://evil.example/oauth" }, 401],
      ["wrong audience", { aud: "http://evil.example/v1" }, 401],
      ["issuer from another server", { iss: `${server.url}/oauth`, aud: `${server.url}/v1` }, 401],
      ["expired a minute ago", { exp: now - 60, iat: now - 3660 }, 401],
      ["expired 10 s ago (within skew)", { exp: now - 10, iat: now - 3610 }, 200]
    ]
    for (const [name, claims, status] of cases) {
      const res = await keyed.request("/v1/users/me", { key: await forge(claims) })
      expect({ name, status: res.status }).toEqual({ name, status })
    }
    // A JWT from the other server (another key) is refused here.
    const foreign = (await login(server, ann.email, password)).body.access_token
    expect((await keyed.request("/v1/users/me", { key: foreign })).status).toBe(401)
  }, 20_000)

  test("an HS256 token keyed with the public key (algorithm confusion) is 401", async () => {
    const jwks = await keyed.request("/oauth/jwks.json")
    const secret = new TextEncoder().encode(JSON.stringify(jwks.body.keys[0]))
    const now = Math.floor(Date.now() / 1000)
    const hs = await new jose.SignJWT({ org: "org_x", scope: "read" })
      .setProtectedHeader({ alg: "HS256", kid: jwks.body.keys[0].kid })
      .setSubject(bea.id)
      .setIssuer(`${keyed.url}/oauth`)
      .setAudience(`${keyed.url}/v1`)
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(secret)
    expect((await keyed.request("/v1/users/me", { key: hs })).status).toBe(401)
  }, 20_000)
})

describe("sign-in rate limits (defaults)", () => {
  test("10 failed sign-ins lock the account (one more try per 90 s after that), even with the right password", async () => {
    const cy = await account(keyed)
    for (let i = 0; i < 10; i++) expect((await login(keyed, cy.email, "wrong password")).status).toBe(401)
    const locked = await login(keyed, cy.email, password)
    expect(locked.status).toBe(429)
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(60)
    expect(locked.body.error).toBe("temporarily_unavailable")
  }, 20_000)

  test("20 requests a minute per IP on /oauth/token, then 429 with Retry-After", async () => {
    const statuses: Array<number> = []
    for (let i = 0; i < 21; i++) {
      const res = await keyed.request("/oauth/token", {
        method: "POST",
        rawBody: "grant_type=refresh_token&refresh_token=x&client_id=cli_x",
        headers: { "content-type": "application/x-www-form-urlencoded" }
      })
      statuses.push(res.status)
    }
    expect(statuses.slice(0, 20).every((status) => status === 401)).toBe(true)
    expect(statuses[20]).toBe(429)
  }, 20_000)

  test("and on /oauth/login", async () => {
    let limited: Awaited<ReturnType<typeof login>> | undefined
    for (let i = 0; i < 21 && limited === undefined; i++) {
      const res = await login(keyed, "nobody@example.com", "whatever password")
      if (res.status === 429) limited = res
    }
    expect(limited?.status).toBe(429)
    expect(Number(limited?.headers.get("retry-after"))).toBeGreaterThan(0)
  }, 20_000)
})
