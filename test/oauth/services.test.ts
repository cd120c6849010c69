/**
 * The OAuth services in-process, on a fresh database of the engine under test (no HTTP): the pending
 * authorization's state machine, the code exchange with PKCE, refresh rotation with family revocation, revocation
 * and the bearer lookup, each on typed input with typed failures.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { Effect, Either, Layer, Logger, LogLevel, ManagedRuntime, Option } from "effect"
import { OAuthAuthorizations } from "../../src/OAuth/Authorizations.ts"
import { OAuthClients, type RegisteredClient } from "../../src/OAuth/Clients.ts"
import { OAuthTokens } from "../../src/OAuth/Tokens.ts"
import { SqlLive } from "../../src/Sql/Client.ts"
import { Users } from "../../src/Users/Users.ts"
import { withSettings } from "../support/fixtures.ts"
import { freshDatabaseUrl } from "../support/server.ts"

const REDIRECT = "https://app.example.com/callback"
const layer = (databaseUrl: string) =>
  Layer.mergeAll(OAuthClients.Default, OAuthAuthorizations.Default, OAuthTokens.Default, Users.Default).pipe(
    Layer.provideMerge(SqlLive),
    // The reuse warnings are expected here.
    Layer.provide(Logger.minimumLogLevel(LogLevel.Error)),
    Layer.provide(withSettings({ DATABASE_URL: databaseUrl }))
  )
type Services = OAuthClients | OAuthAuthorizations | OAuthTokens | Users
let runtime: ManagedRuntime.ManagedRuntime<Services, never>
const run = <A, E>(effect: Effect.Effect<A, E, Services>) => runtime.runPromise(effect)
const fails = <A, E>(effect: Effect.Effect<A, E, Services>) => runtime.runPromise(Effect.flip(effect))

let userId = ""
let confidential: RegisteredClient
let publicClient: RegisteredClient

const request = (clientId: string, extra: Partial<Parameters<OAuthAuthorizations["start"]>[0]> = {}) => ({
  clientId: Option.some(clientId),
  redirectUri: Option.some(REDIRECT),
  responseType: Option.some("code"),
  scope: ["write", "read"],
  state: Option.some("st"),
  codeChallenge: Option.none(),
  codeChallengeMethod: Option.none(),
  ...extra
})

/** start → sign-in → consent (approved): the code. */
const codeFor = (clientId: string, extra: Partial<Parameters<OAuthAuthorizations["start"]>[0]> = {}) =>
  Effect.gen(function* () {
    const authorizations = yield* OAuthAuthorizations
    const started = yield* authorizations.start(request(clientId, extra))
    const csrf = yield* authorizations.signedIn(started.pending.id, userId)
    const decided = yield* authorizations.decide({ pending: started.pending.id, csrf }, true)
    const outcome = Option.getOrThrow(decided).outcome
    if (outcome._tag !== "Approved") throw new Error("not approved")
    return outcome.code
  })

beforeAll(async () => {
  runtime = ManagedRuntime.make(layer(await freshDatabaseUrl()))
  userId = (await run(Effect.flatMap(Users, (users) => users.create({ email: "svc@example.com", name: "Svc" })))).id
  confidential = await run(
    Effect.flatMap(OAuthClients, (c) =>
      c.create({ name: " App ", redirectUris: [REDIRECT, REDIRECT], isPublic: false })
    )
  )
  publicClient = await run(
    Effect.flatMap(OAuthClients, (c) => c.create({ name: "Mobile", redirectUris: [REDIRECT], isPublic: true }))
  )
}, 60_000)
afterAll(async () => {
  await runtime?.dispose()
}, 20_000)

describe("OAuthClients", () => {
  test("registration trims the name, keeps redirect URIs once, and shows a secret only to confidential clients", () => {
    expect(confidential).toMatchObject({ name: "App", redirect_uris: [REDIRECT], public: false })
    expect(confidential.client_secret).toMatch(/^pcc_[0-9A-Za-z]{40}$/)
    expect(publicClient.client_secret).toBeUndefined()
  })

  test("registration refuses a fragment, a relative URL, no URL at all, and a blank or over-long name", async () => {
    for (const redirectUris of [["https://a.example/cb#x"], ["/callback"], []]) {
      const error = await fails(
        Effect.flatMap(OAuthClients, (c) => c.create({ name: "X", redirectUris, isPublic: false }))
      )
      expect(error._tag).toBe("ValidationFailed")
    }
    for (const name of ["", "   ", "x".repeat(101)]) {
      const error = await fails(
        Effect.flatMap(OAuthClients, (c) => c.create({ name, redirectUris: [REDIRECT], isPublic: false }))
      )
      expect(error).toMatchObject({ _tag: "ValidationFailed", message: "name must be 1 to 100 characters" })
    }
  })

  test("authentication: the right secret, never a wrong one, and no secret for a public client", async () => {
    const authenticate = (id: string, secret: Option.Option<string>) =>
      Effect.flatMap(OAuthClients, (c) => c.authenticate({ id, secret }))
    expect((await run(authenticate(confidential.client_id, Option.some(confidential.client_secret!)))).id).toBe(
      confidential.client_id
    )
    for (const [id, secret] of [
      [confidential.client_id, Option.some("pcc_wrong")],
      [confidential.client_id, Option.none()],
      [publicClient.client_id, Option.some("anything")],
      ["cli_01jd3xkq8w0000000000000000", Option.none()]
    ] as const) {
      const error = await fails(authenticate(id, secret))
      expect(error).toMatchObject({ _tag: "OAuthError", error: "invalid_client" })
    }
    expect((await run(authenticate(publicClient.client_id, Option.none()))).isPublic).toBe(true)
  })
})

describe("OAuthAuthorizations", () => {
  test("an unknown client or redirect URI is untrusted; later faults are sent back with the state", async () => {
    const start = (clientId: string, extra: Partial<Parameters<OAuthAuthorizations["start"]>[0]> = {}) =>
      fails(Effect.flatMap(OAuthAuthorizations, (a) => a.start(request(clientId, extra))))
    expect((await start("cli_01jd3xkq8w0000000000000000"))._tag).toBe("UntrustedAuthorizationRequest")
    expect((await start(confidential.client_id, { redirectUri: Option.some(`${REDIRECT}/`) }))._tag).toBe(
      "UntrustedAuthorizationRequest"
    )
    expect(await start(publicClient.client_id)).toMatchObject({
      _tag: "AuthorizationRejected",
      error: "invalid_request",
      redirectUri: REDIRECT,
      state: "st"
    })
    expect(await start(confidential.client_id, { scope: ["read", "admin"] })).toMatchObject({ error: "invalid_scope" })
  })

  test("the forms: the sign-in token works once, the consent is answered once, scopes come back canonical", async () => {
    const authorizations = await run(OAuthAuthorizations)
    const started = await run(authorizations.start(request(confidential.client_id)))
    expect(started.scopes).toEqual(["read", "write"])
    const form = { pending: started.pending.id, csrf: started.csrf }
    expect(Option.isNone(await run(authorizations.find({ ...form, csrf: "forged" }, "sign_in")))).toBe(true)
    expect(Option.isNone(await run(authorizations.find(form, "consent")))).toBe(true)
    expect(Option.getOrThrow(await run(authorizations.find(form, "sign_in"))).client.name).toBe("App")
    const csrf = await run(authorizations.signedIn(started.pending.id, userId))
    expect(Option.isNone(await run(authorizations.find(form, "sign_in")))).toBe(true)
    const consent = { pending: started.pending.id, csrf }
    const denied = Option.getOrThrow(await run(authorizations.decide(consent, false)))
    expect(denied).toEqual({ redirectUri: REDIRECT, state: "st", outcome: { _tag: "Denied" } })
    expect(Option.isNone(await run(authorizations.decide(consent, true)))).toBe(true)
  })
})

describe("OAuthTokens", () => {
  test("PKCE: the verifier must match the challenge; a code works once and its reuse revokes its tokens", async () => {
    const verifier = "v".repeat(43)
    const challenge = createHash("sha256").update(verifier).digest("base64url")
    const code = await run(
      codeFor(confidential.client_id, {
        codeChallenge: Option.some(challenge),
        codeChallengeMethod: Option.some("S256")
      })
    )
    const client = await run(
      Effect.flatMap(OAuthClients, (c) => c.find(confidential.client_id)).pipe(Effect.map(Option.getOrThrow))
    )
    const tokens = await run(OAuthTokens)
    const wrong = await fails(
      tokens.exchangeCode(client, { code, redirectUri: REDIRECT, codeVerifier: Option.some("w".repeat(43)) })
    )
    expect(wrong).toMatchObject({
      error: "invalid_grant",
      description: "code_verifier does not match the code_challenge"
    })
    const issued = await run(
      tokens.exchangeCode(client, { code, redirectUri: REDIRECT, codeVerifier: Option.some(verifier) })
    )
    expect(issued).toMatchObject({ expiresIn: 3600, scope: "read write" })
    const principal = await run(tokens.authenticate(issued.accessToken))
    expect(principal).toMatchObject({
      userId,
      name: "Svc",
      scopes: ["read", "write"],
      credential: { kind: "oauth", clientId: confidential.client_id }
    })
    const again = await fails(
      tokens.exchangeCode(client, { code, redirectUri: REDIRECT, codeVerifier: Option.some(verifier) })
    )
    expect(again.error).toBe("invalid_grant")
    expect((await fails(tokens.authenticate(issued.accessToken)))._tag).toBe("Unauthorized")
  })

  test("refresh narrows the access token only, rotates, and a reused refresh token revokes the family", async () => {
    const code = await run(codeFor(confidential.client_id))
    const client = await run(
      Effect.flatMap(OAuthClients, (c) => c.find(confidential.client_id)).pipe(Effect.map(Option.getOrThrow))
    )
    const tokens = await run(OAuthTokens)
    const first = await run(tokens.exchangeCode(client, { code, redirectUri: REDIRECT, codeVerifier: Option.none() }))
    const wider = await fails(
      tokens.refresh(client, { refreshToken: first.refreshToken, scope: Option.some(["billing:read"]) })
    )
    expect(wider.error).toBe("invalid_scope")
    const narrowed = await run(
      tokens.refresh(client, { refreshToken: first.refreshToken, scope: Option.some(["read"]) })
    )
    expect(narrowed.scope).toBe("read")
    expect((await run(tokens.authenticate(narrowed.accessToken))).scopes).toEqual(["read"])
    const rotated = await run(tokens.refresh(client, { refreshToken: narrowed.refreshToken, scope: Option.none() }))
    expect(rotated.scope).toBe("read write")
    const reused = await fails(tokens.refresh(client, { refreshToken: first.refreshToken, scope: Option.none() }))
    expect(reused.error).toBe("invalid_grant")
    for (const token of [first.accessToken, narrowed.accessToken, rotated.accessToken]) {
      expect(Either.isLeft(await run(Effect.either(tokens.authenticate(token))))).toBe(true)
    }
    // Revocation (RFC 7009) leaves other clients' tokens alone.
    const other = await run(codeFor(confidential.client_id))
    const live = await run(
      tokens.exchangeCode(client, { code: other, redirectUri: REDIRECT, codeVerifier: Option.none() })
    )
    const publicRecord = await run(
      Effect.flatMap(OAuthClients, (c) => c.find(publicClient.client_id)).pipe(Effect.map(Option.getOrThrow))
    )
    await run(tokens.revoke(publicRecord, live.accessToken))
    expect((await run(tokens.authenticate(live.accessToken))).userId).toBe(userId)
    await run(tokens.revoke(client, live.refreshToken))
    expect((await fails(tokens.authenticate(live.accessToken)))._tag).toBe("Unauthorized")
  })
})
