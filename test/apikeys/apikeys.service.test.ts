// engine-independent: the services over SQLite in memory (inMemory), whichever engine the run is on
/**
 * The ApiKeys service in-process, over SQLite in memory with the real layers: what a key looks like and what is
 * stored of it, which scopes a credential may hand on, expiry and revocation as `authenticate` sees them, and
 * `last_used_at` written at most once a minute (decisions.md, "API key record").
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { ApiKeys } from "../../src/ApiKeys/ApiKeys.ts"
import type { Principal } from "../../src/Domain/Principal.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { inMemory, principalOf } from "../support/services.ts"

const harness = inMemory(Layer.mergeAll(ApiKeys.Default, Users.Default))
const { run, fail } = harness

const keys = <A, E, R>(f: (service: ApiKeys) => Effect.Effect<A, E, R>) => Effect.flatMap(ApiKeys, f)

const newUser = (name: string) =>
  run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail(name.toLowerCase()), name })))

const row = (id: string) =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ readonly key_hash: string; readonly prefix: string; readonly last_used_at: string | null }>`
      SELECT key_hash, prefix, last_used_at FROM api_keys WHERE id = ${id}`
    )
  ).then((rows) => rows[0])

/** Moves a key's expiry into the past, as time would. */
const expire = (id: string) =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql`UPDATE api_keys SET expires_at = ${new Date(Date.now() - 1000).toISOString()} WHERE id = ${id}`
    )
  )

const listAll = (who: Principal, status?: "active" | "expired" | "revoked") =>
  run(keys((k) => k.list(who, { page: 1, per_page: 100, sort: "created_at", order: "asc", status })))

let ann: Principal
let bob: Principal

beforeAll(async () => {
  const [a, b] = await Promise.all([newUser("Ann"), newUser("Bob")])
  ann = principalOf(a!)
  bob = principalOf(b!)
})
afterAll(() => harness.dispose(), 20_000)

describe("issue", () => {
  test("pcs_ and 40 base62 characters; the prefix is its first 12; only its SHA-256 is stored", async () => {
    const created = await run(keys((k) => k.issue(ann.userId, { name: "laptop", scopes: ["read", "write", "read"] })))
    expect(created.key).toMatch(/^pcs_[0-9A-Za-z]{40}$/)
    expect(created.prefix).toBe(created.key.slice(0, 12))
    expect(created).toMatchObject({ name: "laptop", scopes: ["read", "write"], status: "active", expires_at: null })
    const stored = await row(created.id)
    expect(stored?.key_hash).toBe(createHash("sha256").update(created.key).digest("hex"))
    const everything = await run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT * FROM api_keys WHERE id = ${created.id}`)
    )
    expect(JSON.stringify(everything)).not.toContain(created.key)
    // The listed record is the created one without the key.
    const listed = (await listAll(ann)).items.find((item) => item.id === created.id)
    const { key: _, ...record } = created
    expect(listed).toEqual(record)
  })

  test("an expiry that is not in the future is refused, and nothing is stored", async () => {
    const before = (await listAll(bob)).total
    for (const expires_at of [new Date(Date.now() - 60_000).toISOString(), new Date(Date.now() - 1).toISOString()]) {
      const refused = await fail(keys((k) => k.issue(bob.userId, { name: "late", scopes: ["read"], expires_at })))
      expect(refused).toMatchObject({ _tag: "ValidationFailed", details: [{ field: "expires_at" }] })
    }
    expect((await listAll(bob)).total).toBe(before)
  })
})

describe("scopes a credential may hand on", () => {
  test("only scopes it holds, by name or through broad read/write; the message names what it lacks", async () => {
    const reader = principalOf({ id: ann.userId, org_id: ann.orgId }, { scopes: ["read"] })
    const refused = await fail(keys((k) => k.create(reader, { name: "x", scopes: ["read", "write", "team:manage"] })))
    expect(refused._tag).toBe("Forbidden")
    expect(refused.message).toContain("write")
    expect(refused.message).toContain("team:manage")
    // `read` stands for every `*:read`, `write` for every `*:write`.
    const writer = principalOf({ id: ann.userId, org_id: ann.orgId }, { scopes: ["read", "write"] })
    const narrowed = await run(
      keys((k) => k.create(writer, { name: "narrow", scopes: ["projects:read", "projects:write"] }))
    )
    expect(narrowed.scopes).toEqual(["projects:read", "projects:write"])
    // `team:manage` is granted only by name, never through `write`.
    expect((await fail(keys((k) => k.create(writer, { name: "x", scopes: ["team:manage"] }))))._tag).toBe("Forbidden")
    // And the narrower key cannot widen itself.
    const narrow = principalOf({ id: ann.userId, org_id: ann.orgId }, { scopes: ["projects:write"] })
    expect((await fail(keys((k) => k.create(narrow, { name: "x", scopes: ["write"] }))))._tag).toBe("Forbidden")
  })

  test("OAuth access tokens manage no keys: create, list and revoke are all Forbidden", async () => {
    const oauth = principalOf({ id: ann.userId, org_id: ann.orgId }, { kind: "oauth", scopes: ["read", "write"] })
    const mine = await run(keys((k) => k.issue(ann.userId, { name: "kept", scopes: ["read"] })))
    expect((await fail(keys((k) => k.create(oauth, { name: "x", scopes: ["read"] }))))._tag).toBe("Forbidden")
    expect(
      (await fail(keys((k) => k.list(oauth, { page: 1, per_page: 20, sort: "created_at", order: "desc" }))))._tag
    ).toBe("Forbidden")
    expect((await fail(keys((k) => k.revoke(oauth, mine.id))))._tag).toBe("Forbidden")
    expect((await run(keys((k) => k.authenticate(mine.key)))).credential.id).toBe(mine.id)
  })
})

describe("authenticate", () => {
  test("a live key gives its user (with their name), organisation, scopes and credential", async () => {
    const created = await run(keys((k) => k.issue(bob.userId, { name: "ci", scopes: ["projects:read"] })))
    const principal = await run(keys((k) => k.authenticate(created.key)))
    expect(principal).toEqual({
      userId: bob.userId,
      name: "Bob",
      orgId: bob.orgId,
      scopes: ["projects:read"],
      credential: { kind: "api_key", id: created.id }
    })
  })

  test("malformed, unknown, one character off, expired and revoked keys are all the same Unauthorized", async () => {
    const live = await run(keys((k) => k.issue(bob.userId, { name: "live", scopes: ["read"] })))
    const expiring = await run(
      keys((k) =>
        k.issue(bob.userId, {
          name: "expiring",
          scopes: ["read"],
          expires_at: new Date(Date.now() + 3_600_000).toISOString()
        })
      )
    )
    const revoked = await run(keys((k) => k.issue(bob.userId, { name: "revoked", scopes: ["read"] })))
    await expire(expiring.id)
    await run(keys((k) => k.revoke(bob, revoked.id)))
    const last = live.key.at(-1) === "a" ? "b" : "a"
    const refused = [
      "pcs_short",
      `${live.key}x`,
      live.key.replace(/^pcs_/, "pcx_"),
      `${live.key.slice(0, -1)}${last}`, // same prefix, wrong hash
      expiring.key,
      revoked.key
    ]
    const errors = await Promise.all(refused.map((token) => fail(keys((k) => k.authenticate(token)))))
    for (const error of errors) {
      expect(error._tag).toBe("Unauthorized")
      expect(error.message).toBe(errors[0]!.message)
    }
    expect((await run(keys((k) => k.authenticate(live.key)))).credential.id).toBe(live.id)
  })

  test("last_used_at is written on first use, then not again within the minute", async () => {
    const created = await run(keys((k) => k.issue(ann.userId, { name: "touched", scopes: ["read"] })))
    expect((await row(created.id))?.last_used_at).toBeNull()
    await run(keys((k) => k.authenticate(created.key)))
    const first = (await row(created.id))?.last_used_at
    expect(first).toMatch(/^\d{4}-\d{2}-\d{2}T/)
    await Bun.sleep(5)
    await run(keys((k) => k.authenticate(created.key)))
    expect((await row(created.id))?.last_used_at).toBe(first)
  })
})

describe("status and revocation", () => {
  test("expired and revoked keys stay listed with their status; the status filter selects each", async () => {
    const carol = principalOf(await newUser("Carol"))
    const active = await run(keys((k) => k.issue(carol.userId, { name: "active", scopes: ["read"] })))
    const expired = await run(
      keys((k) =>
        k.issue(carol.userId, {
          name: "expired",
          scopes: ["read"],
          expires_at: new Date(Date.now() + 3_600_000).toISOString()
        })
      )
    )
    const revoked = await run(keys((k) => k.issue(carol.userId, { name: "revoked", scopes: ["read"] })))
    await expire(expired.id)
    await run(keys((k) => k.revoke(carol, revoked.id)))
    const all = await listAll(carol)
    expect(all.total).toBe(3)
    expect(Object.fromEntries(all.items.map((item) => [item.name, item.status]))).toEqual({
      active: "active",
      expired: "expired",
      revoked: "revoked"
    })
    expect((await listAll(carol, "active")).items.map((item) => item.id)).toEqual([active.id])
    expect((await listAll(carol, "expired")).items.map((item) => item.id)).toEqual([expired.id])
    expect((await listAll(carol, "revoked")).items.map((item) => item.id)).toEqual([revoked.id])
  })

  test("revoking twice answers the same and keeps the first revoked_at; another user's key is NotFound", async () => {
    const created = await run(keys((k) => k.issue(ann.userId, { name: "twice", scopes: ["read"] })))
    await run(keys((k) => k.revoke(ann, created.id)))
    const first = (await listAll(ann, "revoked")).items.find((item) => item.id === created.id)?.revoked_at
    expect(first).toMatch(/^\d{4}-\d{2}-\d{2}T/)
    await Bun.sleep(5)
    await run(keys((k) => k.revoke(ann, created.id)))
    expect((await listAll(ann, "revoked")).items.find((item) => item.id === created.id)?.revoked_at).toBe(first)

    const annsLive = await run(keys((k) => k.issue(ann.userId, { name: "not bob's", scopes: ["read"] })))
    expect((await fail(keys((k) => k.revoke(bob, annsLive.id))))._tag).toBe("NotFound")
    expect((await run(keys((k) => k.authenticate(annsLive.key)))).userId).toBe(ann.userId)
    expect((await listAll(bob)).items.map((item) => item.id)).not.toContain(annsLive.id)
  })
})
