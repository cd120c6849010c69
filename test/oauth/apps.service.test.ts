/**
 * Self-service OAuth in-process, on a fresh database of the engine under test: the clients a user registers
 * (ownership, OAuth tokens refused, the operator's clients never listed, rotation, deletion taking its tokens) and
 * the grants a user gave (one per client, listed with the client's name, revoked with every token under it).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type { SqlClient } from "@effect/sql"
import { Effect, Layer, Logger, LogLevel, Option } from "effect"
import { OAuthClientId } from "../../src/Domain/Ids.ts"
import type { OAuthClientWithSecret } from "../../src/Domain/OAuth.ts"
import type { Principal } from "../../src/Domain/Principal.ts"
import { OAuthAuthorizations } from "../../src/OAuth/Authorizations.ts"
import { OAuthClients } from "../../src/OAuth/Clients.ts"
import { OAuthGrants } from "../../src/OAuth/Grants.ts"
import { OAuthTokens } from "../../src/OAuth/Tokens.ts"
import { Users } from "../../src/Users/Users.ts"
import { approvedTokens } from "../support/oauthTokens.ts"
import { onSelectedEngine, principalOf, type ServiceHarness } from "../support/services.ts"

type Services = OAuthClients | OAuthAuthorizations | OAuthTokens | OAuthGrants | Users
let harness: ServiceHarness<Services>
type Needs = Services | SqlClient.SqlClient
const run = <A, E>(effect: Effect.Effect<A, E, Needs>) => harness.run(effect)
const fails = <A, E>(effect: Effect.Effect<A, E, Needs>) => harness.fail(effect)
/** Calls on the clients service, each expected to fail. */
type Attempt = (clients: OAuthClients) => Effect.Effect<unknown, unknown, SqlClient.SqlClient>

const REDIRECT = "https://app.example.com/callback"
const page = { page: 1, per_page: 20, sort: "created_at", order: "desc" } as const
let ann: Principal
let bob: Principal

const clients = <A, E>(f: (clients: OAuthClients) => Effect.Effect<A, E, SqlClient.SqlClient>) =>
  harness.run(Effect.flatMap(OAuthClients, f))
const register = (who: Principal, name: string, isPublic = false) =>
  clients((c) => c.register(who, { name, redirect_uris: [REDIRECT], public: isPublic }))

/** `user` signs in and approves the confidential `client` for `scope`, then it exchanges the code: its tokens. */
const authorize = (userId: string, client: OAuthClientWithSecret, scope: ReadonlyArray<string>) => {
  if (client.client_secret === undefined) throw new Error(`${client.name} is a public client: it has no secret`)
  return run(approvedTokens({ id: client.id, secret: client.client_secret }, REDIRECT, userId, scope))
}

beforeAll(async () => {
  harness = await onSelectedEngine(
    Layer.mergeAll(
      OAuthClients.Default,
      OAuthAuthorizations.Default,
      OAuthTokens.Default,
      OAuthGrants.Default,
      Users.Default
    ).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Error)))
  )
  const make = (email: string, name: string) => run(Effect.flatMap(Users, (users) => users.create({ email, name })))
  ann = principalOf(await make("ann@example.com", "Ann"))
  bob = principalOf(await make("bob@example.com", "Bob"))
}, 60_000)
afterAll(async () => {
  await harness?.dispose()
}, 20_000)

describe("OAuth clients a user registers", () => {
  test("registration answers the record and, for a confidential client only, its secret", async () => {
    const confidential = await register(ann, "Ann's app")
    expect(confidential).toMatchObject({ name: "Ann's app", redirect_uris: [REDIRECT], public: false })
    expect(confidential.id).toMatch(/^cli_/)
    expect(confidential.client_secret).toMatch(/^pcc_[0-9A-Za-z]{40}$/)
    expect(confidential.updated_at).toBe(confidential.created_at)
    const mobile = await register(ann, "Ann's phone app", true)
    expect(mobile.public).toBe(true)
    expect("client_secret" in mobile).toBe(false)
    // The secret works at the token endpoint's client authentication.
    const authenticated = await clients((c) =>
      c.authenticate({ id: confidential.id, secret: Option.fromNullable(confidential.client_secret) })
    )
    expect(authenticated.id).toBe(confidential.id)
  })

  test("a user lists, reads and changes only their own clients; the operator's CLI clients are nobody's", async () => {
    const bobs = await register(bob, "Bob's app")
    const operators = await clients((c) =>
      c.create({ name: "Operator app", redirectUris: [REDIRECT], isPublic: false })
    )
    const listed = await clients((c) => c.list(bob, { ...page, sort: "name", order: "asc" }))
    expect(listed.items.map((client) => client.name)).toEqual(["Bob's app"])
    expect(listed.total).toBe(1)
    const annList = await clients((c) => c.list(ann, page))
    expect(annList.items.map((client) => client.id)).not.toContain(bobs.id)
    expect(annList.items.map((client) => client.id)).not.toContain(operators.client_id)

    const attempts: Array<Attempt> = [
      (c: OAuthClients) => c.get(ann, bobs.id),
      (c: OAuthClients) => c.update(ann, bobs.id, { name: "stolen" }),
      (c: OAuthClients) => c.rotateOwned(ann, bobs.id),
      (c: OAuthClients) => c.delete(ann, bobs.id),
      (c: OAuthClients) => c.get(bob, OAuthClientId.make(operators.client_id))
    ]
    for (const attempt of attempts) {
      expect(await fails(Effect.flatMap(OAuthClients, attempt))).toMatchObject({ _tag: "NotFound" })
    }
    expect((await clients((c) => c.get(bob, bobs.id))).name).toBe("Bob's app")
  })

  test("an update changes the name and redirect URIs (kept once each) and moves updated_at", async () => {
    const client = await register(ann, "Before")
    const updated = await clients((c) =>
      c.update(ann, client.id, { name: "After", redirect_uris: [REDIRECT, "myapp:/cb", REDIRECT] })
    )
    expect(updated).toMatchObject({ name: "After", redirect_uris: [REDIRECT, "myapp:/cb"], public: false })
    expect(updated.updated_at >= client.updated_at).toBe(true)
    expect(updated.created_at).toBe(client.created_at)
  })

  test("OAuth access tokens manage no clients: 403 on every method", async () => {
    const viaOAuth = principalOf({ id: ann.userId, org_id: ann.orgId }, { kind: "oauth", credentialId: "tok_x" })
    const mine = await register(ann, "Mine")
    const attempts: Array<Attempt> = [
      (c: OAuthClients) => c.list(viaOAuth, page),
      (c: OAuthClients) => c.register(viaOAuth, { name: "x", redirect_uris: [REDIRECT] }),
      (c: OAuthClients) => c.get(viaOAuth, mine.id),
      (c: OAuthClients) => c.update(viaOAuth, mine.id, { name: "x" }),
      (c: OAuthClients) => c.rotateOwned(viaOAuth, mine.id),
      (c: OAuthClients) => c.delete(viaOAuth, mine.id)
    ]
    for (const attempt of attempts) {
      expect(await fails(Effect.flatMap(OAuthClients, attempt))).toMatchObject({
        _tag: "Forbidden",
        message: "OAuth access tokens cannot manage OAuth clients"
      })
    }
  })

  test("rotating the secret: the new one works, the old one fails at once; a public client has none", async () => {
    const client = await register(ann, "Rotating")
    const rotated = await clients((c) => c.rotateOwned(ann, client.id))
    expect(rotated.client_secret).toMatch(/^pcc_/)
    expect(rotated.client_secret).not.toBe(client.client_secret)
    const authenticate = (secret: string | undefined) =>
      Effect.flatMap(OAuthClients, (c) => c.authenticate({ id: client.id, secret: Option.fromNullable(secret) }))
    expect((await fails(authenticate(client.client_secret))).error).toBe("invalid_client")
    expect((await run(authenticate(rotated.client_secret))).id).toBe(client.id)
    const mobile = await register(ann, "No secret", true)
    expect(await fails(Effect.flatMap(OAuthClients, (c) => c.rotateOwned(ann, mobile.id)))).toMatchObject({
      _tag: "ValidationFailed"
    })
  })

  test("a client id no engine can store (a NUL byte) is an unknown client, not a database error", async () => {
    for (const id of ["cli_\u0000", `cli_01jd3xkq8w00000000000000\u0000`, "\ud800"]) {
      expect(Option.isNone(await clients((c) => c.find(id)))).toBe(true)
      expect(
        await fails(Effect.flatMap(OAuthClients, (c) => c.authenticate({ id, secret: Option.some("pcc_\u0000") })))
      ).toMatchObject({ _tag: "OAuthError", error: "invalid_client" })
    }
  })

  test("the CLI's registration keeps its rules: no fragment, no relative or script URL, at most ten", async () => {
    for (const redirectUris of [
      ["https://a.example/cb#x"],
      ["/callback"],
      ["javascript:alert(1)"],
      ["https://a.example/c b"],
      Array.from({ length: 11 }, (_, i) => `https://a.example/${i}`)
    ]) {
      const error = await fails(
        Effect.flatMap(OAuthClients, (c) => c.create({ name: "X", redirectUris, isPublic: false }))
      )
      expect(error).toMatchObject({ _tag: "ValidationFailed" })
    }
  })
})

describe("authorizations (the grants a user gave)", () => {
  test("a consent makes one grant per client; a second consent widens its scopes; the list names the client", async () => {
    const client = await register(bob, "Grant app")
    await authorize(ann.userId, client, ["read"])
    await authorize(ann.userId, client, ["projects:write"])
    const listed = await run(Effect.flatMap(OAuthGrants, (g) => g.list(ann, page)))
    const grants = listed.items.filter((grant) => grant.client.id === client.id)
    expect(grants).toHaveLength(1)
    expect(grants[0]).toMatchObject({
      client: { id: client.id, name: "Grant app" },
      scopes: ["read", "projects:write"]
    })
    expect(grants[0]?.id).toMatch(/^grant_/)
    // Issuing tokens counts as use.
    expect(grants[0]?.last_used_at).not.toBeNull()
    // Bob registered the app but gave no grant: his list is empty of it.
    const bobs = await run(Effect.flatMap(OAuthGrants, (g) => g.list(bob, page)))
    expect(bobs.items.map((grant) => grant.client.id)).not.toContain(client.id)
  })

  test("revoking a grant: its access and refresh tokens fail at once; another user's grant is not found", async () => {
    const client = await register(bob, "Revoked app")
    const tokens = await authorize(ann.userId, client, ["read"])
    expect((await run(Effect.flatMap(OAuthTokens, (t) => t.authenticate(tokens.accessToken)))).userId).toBe(ann.userId)
    const grant = (await run(Effect.flatMap(OAuthGrants, (g) => g.list(ann, page)))).items.find(
      (item) => item.client.id === client.id
    )
    if (grant === undefined) throw new Error("no grant listed")
    expect(await fails(Effect.flatMap(OAuthGrants, (g) => g.revoke(bob, grant.id)))).toMatchObject({ _tag: "NotFound" })
    await run(Effect.flatMap(OAuthGrants, (g) => g.revoke(ann, grant.id)))
    expect(await fails(Effect.flatMap(OAuthTokens, (t) => t.authenticate(tokens.accessToken)))).toMatchObject({
      _tag: "Unauthorized"
    })
    const registered = Option.getOrThrow(await clients((c) => c.find(client.id)))
    expect(
      await fails(
        Effect.flatMap(OAuthTokens, (t) =>
          t.refresh(registered, { refreshToken: tokens.refreshToken, scope: Option.none() })
        )
      )
    ).toMatchObject({ error: "invalid_grant" })
    expect(await fails(Effect.flatMap(OAuthGrants, (g) => g.revoke(ann, grant.id)))).toMatchObject({ _tag: "NotFound" })
    // A new consent makes a new grant.
    await authorize(ann.userId, client, ["read"])
    const again = (await run(Effect.flatMap(OAuthGrants, (g) => g.list(ann, page)))).items.find(
      (item) => item.client.id === client.id
    )
    expect(again?.id).not.toBe(grant.id)
  })

  test("deleting a client revokes every grant and token it holds", async () => {
    const client = await register(bob, "Deleted app")
    const tokens = await authorize(ann.userId, client, ["read", "write"])
    await clients((c) => c.delete(bob, client.id))
    expect(await fails(Effect.flatMap(OAuthTokens, (t) => t.authenticate(tokens.accessToken)))).toMatchObject({
      _tag: "Unauthorized"
    })
    const grants = await run(Effect.flatMap(OAuthGrants, (g) => g.list(ann, page)))
    expect(grants.items.map((grant) => grant.client.id)).not.toContain(client.id)
    expect(await fails(Effect.flatMap(OAuthClients, (c) => c.get(bob, client.id)))).toMatchObject({ _tag: "NotFound" })
  })
})
