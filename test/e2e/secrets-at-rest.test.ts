/**
 * Secrets at rest (decisions "Secrets at rest"): after every kind of secret the service issues or is given has been
 * made, replayed and rotated, none of them is in the database's files (SQLite: the database and its WAL, read as
 * bytes) or in a `pg_dump` of it (PostgreSQL); nor is any JWT signing key's private part (`d`). The OAuth ones come
 * from a code flow through the sign-in and consent pages with `oauth4webapi`: the pages' form tokens, the PKCE
 * verifier, the code, the access and refresh tokens, and those the refresh rotates in.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import * as oauth from "oauth4webapi"
import { Webhook } from "standardwebhooks"
import { keyIdOf, keyRingOf } from "../../src/Secrets/KeyRing.ts"
import { secretsSettings } from "../support/fixtures.ts"
import { startInProcess } from "../support/in-process.ts"
import { formAction, formField } from "../support/oauthPages.ts"
import { startReceiver } from "../support/receiver.ts"
import { freshDatabaseUrl, type Server, usingPostgres } from "../support/server.ts"

const PG_DUMP = "/usr/lib/postgresql/15/bin/pg_dump"
const receiver = startReceiver()
afterAll(() => receiver.stop(), 20_000)

let server: Server | undefined
afterAll(() => server?.stop(), 20_000)

/** Where SQLite keeps `url`'s database. */
const sqliteFile = (url: string) => url.replace(/^sqlite:/, "")

/** The database as a thief would have it: the SQLite files (database, WAL), or a dump of the PostgreSQL database. */
const copyOf = async (url: string): Promise<Buffer> => {
  if (usingPostgres()) {
    const dump = Bun.spawn([PG_DUMP, "--no-owner", `--dbname=${url}`], { stdout: "pipe", stderr: "pipe" })
    const [out, err, code] = await Promise.all([
      new Response(dump.stdout).arrayBuffer(),
      new Response(dump.stderr).text(),
      dump.exited
    ])
    if (code !== 0) throw new Error(`pg_dump failed: ${err}`)
    return Buffer.from(out)
  }
  const file = sqliteFile(url)
  return Buffer.concat([file, `${file}-wal`].filter((path) => existsSync(path)).map((path) => readFileSync(path)))
}

/** The secrets of `found` that `copy` holds, as UTF-8 bytes. */
const leaked = (copy: Buffer, found: Record<string, string>) =>
  Object.entries(found)
    .filter(([, value]) => copy.includes(Buffer.from(value, "utf8")))
    .map(([name]) => name)

const insecure = { [oauth.allowInsecureRequests]: true } as const

/**
 * A person's way through the sign-in and consent pages for `clientId` with PKCE, as a browser goes: the redirect's
 * URL, and the form tokens the pages handed out on the way.
 */
const authorize = async (
  as: oauth.AuthorizationServer,
  options: { clientId: string; redirectUri: string; challenge: string; email: string; password: string }
) => {
  const url = new URL(as.authorization_endpoint!)
  url.search = new URLSearchParams({
    client_id: options.clientId,
    redirect_uri: options.redirectUri,
    response_type: "code",
    scope: "read write",
    code_challenge: options.challenge,
    code_challenge_method: "S256"
  }).toString()
  const page = await fetch(url)
  expect(page.status).toBe(200)
  const signIn = await page.text()
  const pending = formField(signIn, "pending")
  const signInToken = formField(signIn, "csrf_token")
  const signedIn = await fetch(formAction(signIn, page.url), {
    method: "POST",
    redirect: "manual",
    body: new URLSearchParams({ pending, csrf_token: signInToken, email: options.email, password: options.password })
  })
  expect(signedIn.status).toBe(303)
  const consentUrl = new URL(signedIn.headers.get("location")!, page.url)
  const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0]!
  const consent = await (await fetch(consentUrl, { headers: { cookie } })).text()
  const consentToken = formField(consent, "csrf_token")
  const answered = await fetch(formAction(consent, consentUrl.href), {
    method: "POST",
    redirect: "manual",
    body: new URLSearchParams({ pending, csrf_token: consentToken, decision: "approve" })
  })
  expect(answered.status).toBe(302)
  return { callback: new URL(answered.headers.get("location")!), signInToken, consentToken }
}

/** Rows read on `s`'s database. */
const rowsOf = <T extends object>(s: Server, query: string) =>
  s.fixtures.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<T>(query)))

/** The private part (`d`) of every JWT signing key stored, decrypted as the server would. */
const signingKeyDs = async (s: Server, databaseUrl: string): Promise<Array<string>> => {
  const stored = await rowsOf<{ readonly kid: string; readonly private_jwk: string }>(
    s,
    "SELECT kid, private_jwk FROM jwt_signing_keys"
  )
  const keyText = usingPostgres()
    ? (secretsSettings(databaseUrl).SECRETS_KEY ?? "")
    : readFileSync(join(dirname(sqliteFile(databaseUrl)), "secrets.key"), "utf8").trim()
  const ds: Array<string> = []
  for (const row of stored) {
    const jwk = row.private_jwk.startsWith("{")
      ? row.private_jwk
      : await Effect.runPromise(Effect.flatMap(keyRingOf(keyText), (ring) => ring.decrypt(row.private_jwk, row.kid)))
    ds.push(JSON.parse(jwk).d)
  }
  return ds
}

beforeAll(async () => {
  server = await startInProcess({
    databaseUrl: await freshDatabaseUrl(),
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" }
  })
}, 60_000)

test("no secret issued, given, replayed or rotated is in the database files or a dump", async () => {
  const s = server!
  const secrets: Record<string, string> = {}
  const password = `pw-${crypto.randomUUID()}`
  secrets.password = password
  const email = `secrets.${Date.now()}@example.com`
  await s.fixtures.account({ email, name: "Secretive", password })
  const signIn = async () => {
    const login = await s.request("/oauth/login", { method: "POST", body: { email, password } })
    expect(login.status).toBe(200)
    return login.body.access_token as string
  }
  const jwt = await signIn()
  secrets.session = jwt

  /** A keyed POST, replayed: the replay shows the same answer. */
  const keyed = async (path: string, body: unknown) => {
    const key = crypto.randomUUID()
    const send = () => s.request(`/v1${path}`, { method: "POST", key: jwt, body, headers: { "idempotency-key": key } })
    const first = await send()
    expect(first.status).toBeLessThan(300)
    const again = await send()
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.text).toBe(first.text)
    return first.body.data
  }

  secrets.apiKey = (await keyed("/api-keys", { name: "Kept", scopes: ["projects:read"] })).key
  const client = await keyed("/oauth-clients", { name: "App", redirect_uris: ["http://127.0.0.1:9/cb"] })
  secrets.clientSecret = client.client_secret
  const clientSecret: string = (await keyed(`/oauth-clients/${client.id}/rotate-secret`, {})).client_secret
  secrets.clientSecretRotated = clientSecret

  // The OAuth client's code flow (PKCE), its tokens, and a refresh that rotates them.
  const issuer = new URL(`${s.url}/oauth`)
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure })
  )
  const clientId: string = client.id
  const oauthClient = { client_id: clientId }
  const clientAuth = oauth.ClientSecretBasic(clientSecret)
  const verifier = oauth.generateRandomCodeVerifier()
  secrets.pkceVerifier = verifier
  const flow = await authorize(as, {
    clientId,
    redirectUri: "http://127.0.0.1:9/cb",
    challenge: await oauth.calculatePKCECodeChallenge(verifier),
    email,
    password
  })
  secrets.signInFormToken = flow.signInToken
  secrets.consentFormToken = flow.consentToken
  const params = oauth.validateAuthResponse(as, oauthClient, flow.callback, oauth.skipStateCheck)
  const code = params.get("code")
  expect(code).toBeString()
  secrets.authorizationCode = code ?? ""
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    oauthClient,
    await oauth.authorizationCodeGrantRequest(
      as,
      oauthClient,
      clientAuth,
      params,
      "http://127.0.0.1:9/cb",
      verifier,
      insecure
    )
  )
  expect(tokens.refresh_token).toBeString()
  secrets.accessToken = tokens.access_token
  secrets.refreshToken = tokens.refresh_token ?? ""
  const refreshed = await oauth.processRefreshTokenResponse(
    as,
    oauthClient,
    await oauth.refreshTokenGrantRequest(as, oauthClient, clientAuth, secrets.refreshToken, insecure)
  )
  expect(refreshed.refresh_token).toBeString()
  expect(refreshed.refresh_token).not.toBe(secrets.refreshToken)
  secrets.accessTokenRefreshed = refreshed.access_token
  secrets.refreshTokenRotated = refreshed.refresh_token ?? ""
  expect((await s.request("/v1/users/me", { key: refreshed.access_token })).status).toBe(200)

  const given = `given-${crypto.randomUUID()}`
  secrets.webhookGiven = given
  const withGiven = await keyed("/webhooks", {
    url: receiver.url("/given"),
    events: ["project.created"],
    secret: given
  })
  const generated = await keyed("/webhooks", { url: receiver.url("/generated"), events: ["project.created"] })
  secrets.webhookGenerated = generated.secret
  const rotated = await keyed(`/webhooks/${generated.id}/rotate-secret`, {})
  secrets.webhookRotated = rotated.secret
  const rotatedGiven = `rotated-${crypto.randomUUID()}`
  secrets.webhookRotatedGiven = rotatedGiven
  expect(
    (
      await s.request(`/v1/webhooks/${withGiven.id}/rotate-secret`, {
        method: "POST",
        key: jwt,
        body: { secret: rotatedGiven }
      })
    ).status
  ).toBe(200)

  // The secrets sign: a delivery to each, verified (the rotated secret signs, the one before it too).
  expect((await s.request("/v1/projects", { method: "POST", key: jwt, body: { name: "Signed" } })).status).toBe(201)
  const [delivery] = await receiver.waitFor(1, { path: "/generated", timeoutMs: 15_000 })
  expect(() => new Webhook(rotated.secret).verify(delivery!.body, delivery!.headers)).not.toThrow()
  expect(() => new Webhook(generated.secret).verify(delivery!.body, delivery!.headers)).not.toThrow()
  await receiver.waitFor(1, { path: "/given", timeoutMs: 15_000 })

  // The JWT signing key rotates; a session is signed by the new one.
  await s.cli("jwt-keys", "rotate")
  secrets.sessionAfterRotation = await signIn()

  const ds = await signingKeyDs(s, s.databaseUrl)
  expect(ds.length).toBe(2)
  for (const [i, d] of ds.entries()) secrets[`signingKey${i}.d`] = d
  const stored = await rowsOf<{ readonly secret: string }>(s, "SELECT secret FROM webhooks")

  // What the copy does hold, to show the search finds text that is there.
  const before = await copyOf(s.databaseUrl)
  expect(before.includes(Buffer.from(email))).toBe(true)
  expect(leaked(before, secrets)).toEqual([])
  expect(await s.stop()).toBe(0)
  server = undefined
  const after = await copyOf(s.databaseUrl)
  expect(after.includes(Buffer.from(email))).toBe(true)
  expect(leaked(after, secrets)).toEqual([])
  // Stored in the format of src/Secrets/KeyRing.ts.
  for (const row of stored) expect(keyIdOf(row.secret)._tag).toBe("Some")
}, 90_000)
