/**
 * Three server processes on one PostgreSQL database (and one Redis), started together on an empty database, as an
 * operator runs them behind a load balancer: whatever a client does through one holds on the others. Each test
 * speaks HTTP to the replicas in turn. Only on PostgreSQL: SQLite is one process's file.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type { SQL } from "bun"
import * as jose from "jose"
import { sqlOn } from "../support/databases.ts"
import { eventually, stopWithin } from "../support/helpers.ts"
import { formField } from "../support/oauthPages.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { REDIS_SERVER, type RedisProcess, startRedis } from "../support/redis.ts"
import {
  freshDatabaseUrl,
  runCli,
  type Server,
  type ServerProcess,
  startServer,
  type TestUser,
  usingPostgres
} from "../support/server.ts"

const POSTGRES = usingPostgres()
const REDIS = REDIS_SERVER
if (!POSTGRES) {
  console.warn(
    "replicas.test.ts: skipped: DATABASE_URL is not a postgres:// URL (replicas share one PostgreSQL database)"
  )
} else if (REDIS === null) {
  console.warn("replicas.test.ts: redis-server not found; the shared rate-limit test is skipped")
}

/** The public address the replicas share (their JWT issuer and audience), as behind one load balancer. */
const BASE_URL = "http://replicas.test"
const RATE_LIMIT = 40
/** A read-only key per user, for polling. */
const readers = new Map<string, string>()

const ENV = {
  BASE_URL,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "300ms,300ms,300ms,300ms",
  WEBHOOK_TIMEOUT: "3s",
  WEBHOOK_CLAIM_TIMEOUT: "4s",
  WEBHOOK_POLL_INTERVAL: "100ms",
  // A day's window: no token comes back while a test counts, however slow the machine.
  RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT),
  RATE_LIMIT_WINDOW: "24h",
  RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: "100000",
  AUTH_IP_LIMIT_PER_MINUTE: "100000",
  SHUTDOWN_TIMEOUT: "2s"
}

let databaseUrl = ""
let replicas: Array<ServerProcess> = []
let redis: RedisProcess | undefined
const receivers: Array<Receiver> = []
let db: SQL

/** Replica `i` of the three, round-robin for any `i`. */
const at = (i: number): ServerProcess => replicas[i % replicas.length]!

describe.skipIf(!POSTGRES)("three replicas on one PostgreSQL", () => {
  beforeAll(async () => {
    if (REDIS !== null) redis = await startRedis()
    databaseUrl = await freshDatabaseUrl()
    db = sqlOn(databaseUrl)
    const env = { ...ENV, ...(redis !== undefined ? { REDIS_URL: redis.url } : {}) }
    // All three at once on an empty database: each runs the migrations on start-up.
    replicas = await Promise.all([0, 1, 2].map(() => startServer({ databaseUrl, env })))
  }, 60_000)

  afterAll(async () => {
    // A replica that died by itself (not the one the last test kills) shows why.
    for (const server of replicas) {
      if (server.process.exitCode !== null) console.error(`a replica exited:\n${server.logs.join("\n")}`)
    }
    await Promise.all(replicas.map((server) => stopWithin(server)))
    await Promise.all(receivers.splice(0).map((receiver) => receiver.stop()))
    await db?.close()
    redis?.process.kill()
    await redis?.process.exited
  }, 30_000)

  test("started together on an empty database, all three come up, with the migrations applied once", async () => {
    for (const server of replicas) expect((await server.request("/health/ready")).status).toBe(200)
    const applied: Array<{ migration_id: number; n: number }> =
      await db`SELECT migration_id, CAST(count(*) AS INTEGER) AS n FROM effect_sql_migrations GROUP BY migration_id ORDER BY migration_id`
    expect(applied.length).toBeGreaterThanOrEqual(9)
    expect(applied.every((row) => row.n === 1)).toBe(true)
    // Nothing is left to apply, and one signing key was made, not one per replica.
    const { stdout, code } = await runCli(databaseUrl, ["migrate"])
    expect(code).toBe(0)
    expect(JSON.parse(stdout).data).toEqual([])
    const [keys] = await db`SELECT CAST(count(*) AS INTEGER) AS n FROM jwt_signing_keys`
    expect(keys.n).toBe(1)
  }, 60_000)

  test("an API key made through one replica authenticates on the others; revoked on one, it fails on all", async () => {
    const owner = await at(0).user()
    const made = await at(0).request("/v1/api-keys", {
      method: "POST",
      key: owner.key,
      body: { name: "made on replica 0", scopes: ["read"] }
    })
    expect(made.status).toBe(201)
    const key: string = made.body.data.key
    for (const i of [1, 2, 0]) {
      const me = await at(i).request("/v1/users/me", { key })
      expect(me.status).toBe(200)
      expect(me.body.data.id).toBe(owner.id)
    }
    const revoked = await at(1).request(`/v1/api-keys/${made.body.data.id}`, { method: "DELETE", key: owner.key })
    expect(revoked.status).toBeLessThan(300)
    for (const i of [2, 0, 1]) expect((await at(i).request("/v1/users/me", { key })).status).toBe(401)
  }, 30_000)

  test("an OAuth code issued by one replica is redeemed on another, and its token works on the third", async () => {
    const password = "correct horse battery"
    const email = `replica.${Math.random().toString(36).slice(2, 8)}@example.com`
    await at(0).cli("users", "create", "--email", email, "--name", "Replica User", "--password", password)
    const redirect = "http://127.0.0.1:9/callback"
    const client = await at(0).cli<{ client_id: string; client_secret: string }>(
      "oauth-clients",
      "create",
      "--name",
      "Replica App",
      "--redirect-uri",
      redirect
    )
    /** A form's target, on replica `i` (the action's path, whatever origin it names). */
    const action = (html: string, i: number) => {
      const target = new URL(/<form method="post" action="([^"]+)"/.exec(html)![1]!, BASE_URL)
      return `${at(i).url}${target.pathname}${target.search}`
    }
    const authorize = new URL(`${at(0).url}/oauth/authorize`)
    authorize.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: redirect,
      response_type: "code",
      scope: "read write",
      state: "replica-state"
    }).toString()
    // The sign-in page from replica 0, the sign-in on 1, the consent on 2: a browser behind a load balancer.
    const page = await fetch(authorize, { redirect: "manual" })
    expect(page.status).toBe(200)
    const signIn = await page.text()
    const pending = formField(signIn, "pending")
    const signedIn = await fetch(action(signIn, 1), {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({ pending, csrf_token: formField(signIn, "csrf_token"), email, password })
    })
    // Post/Redirect/Get: the consent page, followed with the cookie the sign-in set, is asked of replica 0.
    expect(signedIn.status).toBe(303)
    const consentPage = new URL(signedIn.headers.get("location")!, BASE_URL)
    const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0]!
    const consent = await fetch(`${at(0).url}${consentPage.pathname}${consentPage.search}`, {
      redirect: "manual",
      headers: { cookie }
    })
    expect(consent.status).toBe(200)
    const consentHtml = await consent.text()
    const answered = await fetch(action(consentHtml, 2), {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({ pending, csrf_token: formField(consentHtml, "csrf_token"), decision: "approve" })
    })
    expect(answered.status).toBe(302)
    const location = new URL(answered.headers.get("location")!)
    expect(location.searchParams.get("state")).toBe("replica-state")
    const code = location.searchParams.get("code")!
    // Issued by replica 2, redeemed on replica 0.
    const token = await fetch(`${at(0).url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: redirect,
        client_id: client.client_id,
        client_secret: client.client_secret
      })
    })
    expect(token.status).toBe(200)
    const tokens = await token.json()
    const me = await at(1).request("/v1/users/me", { key: tokens.access_token })
    expect(me.status).toBe(200)
    expect(me.body.data.email).toBe(email)
    // The code was used: redeeming it again on another replica fails.
    const again = await fetch(`${at(1).url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: redirect,
        client_id: client.client_id,
        client_secret: client.client_secret
      })
    })
    expect(again.status).toBe(400)
    expect((await again.json()).error).toBe("invalid_grant")
  }, 30_000)

  test("a JWT signed by one replica verifies on the others, also after `jwt-keys rotate`", async () => {
    const password = "correct horse battery"
    const email = `jwt.${Math.random().toString(36).slice(2, 8)}@example.com`
    await at(0).cli("users", "create", "--email", email, "--name", "JWT User", "--password", password)
    const login = async (i: number) => {
      const res = await at(i).request("/oauth/login", { method: "POST", body: { email, password } })
      expect(res.status).toBe(200)
      return res.body.access_token as string
    }
    const verifiesEverywhere = async (token: string) => {
      for (const server of replicas) expect((await server.request("/v1/users/me", { key: token })).status).toBe(200)
      // An independent verifier against each replica's JWKS, with the shared issuer and audience.
      for (const server of replicas) {
        const { payload } = await jose.jwtVerify(
          token,
          jose.createRemoteJWKSet(new URL(`${server.url}/oauth/jwks.json`)),
          {
            algorithms: ["EdDSA"],
            issuer: `${BASE_URL}/oauth`,
            audience: `${BASE_URL}/v1`
          }
        )
        expect(payload.sub).toMatch(/^usr_/)
      }
    }
    const before = await login(0)
    await verifiesEverywhere(before)

    const rotated = await at(1).cli<{ kid: string; retired: Array<string> }>("jwt-keys", "rotate")
    expect(rotated.retired).toEqual([jose.decodeProtectedHeader(before).kid!])
    const after = await login(2)
    expect(jose.decodeProtectedHeader(after).kid).toBe(rotated.kid)
    await verifiesEverywhere(after)
    // The retired key still verifies what it signed, on every replica.
    await verifiesEverywhere(before)
    // Every replica signs with the new key at once.
    for (const i of [0, 1]) expect(jose.decodeProtectedHeader(await login(i)).kid).toBe(rotated.kid)
  }, 30_000)

  test("an Idempotency-Key first used on one replica replays on another", async () => {
    const user = await at(0).user()
    const headers = { "idempotency-key": `replica-${Math.random().toString(36).slice(2)}` }
    const body = { name: "Made once" }
    const first = await at(0).request("/v1/projects", { method: "POST", key: user.key, body, headers })
    expect(first.status).toBe(201)
    for (const i of [1, 2]) {
      const again = await at(i).request("/v1/projects", { method: "POST", key: user.key, body, headers })
      expect(again.status).toBe(201)
      expect(again.headers.get("idempotent-replayed")).toBe("true")
      expect(again.text).toBe(first.text)
    }
    const reused = await at(1).request("/v1/projects", {
      method: "POST",
      key: user.key,
      body: { name: "Another" },
      headers
    })
    expect(reused.status).toBe(422)
    const list = await at(2).request("/v1/projects", { key: user.key })
    expect(list.body.meta.total).toBe(1)
  }, 30_000)

  test.skipIf(REDIS === null)(
    "with REDIS_URL the rate limit counts requests across replicas: exactly the limit passes",
    async () => {
      const user = await at(0).user()
      const statuses: Array<number> = []
      const remaining: Array<string | null> = []
      for (let i = 0; i < RATE_LIMIT + 6; i++) {
        const res = await at(i).request("/v1/users/me", { key: user.key })
        statuses.push(res.status)
        if (res.status === 200) remaining.push(res.headers.get("x-ratelimit-remaining"))
      }
      expect(statuses.filter((status) => status === 200)).toHaveLength(RATE_LIMIT)
      expect(statuses.slice(0, RATE_LIMIT).every((status) => status === 200)).toBe(true)
      expect(statuses.slice(RATE_LIMIT).every((status) => status === 429)).toBe(true)
      expect(remaining).toEqual(Array.from({ length: RATE_LIMIT }, (_, i) => String(RATE_LIMIT - 1 - i)))
    },
    30_000
  )

  const registerHook = async (server: Server, user: TestUser, url: string) => {
    const res = await server.request("/v1/webhooks", {
      method: "POST",
      key: user.key,
      body: { url, events: ["project.created"] }
    })
    expect(res.status).toBe(201)
    return res.body.data.id as string
  }

  /** Every delivery of a webhook, through replica `i` (with a key of its own: polling spends its tokens). */
  const deliveriesOf = async (i: number, user: TestUser, hookId: string) => {
    const reader = readers.get(user.id) ?? (await at(0).fixtures.apiKey(user.id, { scopes: "read" })).key
    readers.set(user.id, reader)
    const rows: Array<{ id: string; event_id: string; status: string; attempt_count: number }> = []
    for (let page = 1; ; page++) {
      const res = await at(i).request(`/v1/webhooks/${hookId}/deliveries?per_page=100&page=${page}`, {
        key: reader
      })
      expect(res.status).toBe(200)
      rows.push(...res.body.data)
      if (rows.length >= res.body.meta.total || res.body.data.length === 0) return rows
    }
  }

  const allDelivered = (i: number, user: TestUser, hookId: string, count: number) =>
    eventually(
      async () => {
        const rows = await deliveriesOf(i, user, hookId)
        return rows.length === count && rows.every((row) => row.status === "delivered") ? rows : undefined
      },
      { timeoutMs: 45_000, intervalMs: 250, what: `${count} deliveries of ${hookId} delivered` }
    )

  /**
   * `count` projects created round-robin across the replicas, a few at a time, each replica's with a key of its own
   * (each key's rate limit is counted apart).
   */
  const createRoundRobin = async (user: TestUser, count: number, prefix: string) => {
    const keys = [user.key]
    for (let i = 1; i < replicas.length; i++) keys.push((await at(0).fixtures.apiKey(user.id)).key)
    const ids: Array<string> = []
    for (let start = 0; start < count; start += 6) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(6, count - start) }, (_, j) =>
          at(start + j).request("/v1/projects", {
            method: "POST",
            key: keys[(start + j) % keys.length],
            body: { name: `${prefix} ${start + j}` }
          })
        )
      )
      for (const res of batch) {
        expect(res.status).toBe(201)
        ids.push(res.body.data.id)
      }
    }
    return ids
  }

  test("60 events created round-robin reach each of two receivers exactly once", async () => {
    const user = await at(0).user()
    const first = startReceiver()
    const second = startReceiver()
    receivers.push(first, second)
    const hookA = await registerHook(at(0), user, first.url("/a"))
    const hookB = await registerHook(at(1), user, second.url("/b"))
    const projectIds = await createRoundRobin(user, 60, "Fan-out")

    // Once every delivery is recorded as delivered, no attempt can follow: what arrived is all that ever will.
    const deliveredA = await allDelivered(2, user, hookA, 60)
    const deliveredB = await allDelivered(0, user, hookB, 60)
    for (const [receiver, delivered] of [
      [first, deliveredA],
      [second, deliveredB]
    ] as const) {
      const requests = receiver.requests()
      expect(requests).toHaveLength(60)
      const events = requests.map((request) => request.headers["x-service-event-id"])
      expect(new Set(events).size).toBe(60)
      expect(new Set(events)).toEqual(new Set(delivered.map((row) => row.event_id)))
      expect(new Set(requests.map((request) => JSON.parse(request.body).data.id))).toEqual(new Set(projectIds))
      expect(delivered.every((row) => row.attempt_count === 1)).toBe(true)
      expect(receiver.overlapping.size).toBe(0)
    }
  }, 90_000)

  // Last: it leaves two replicas.
  test("a replica killed with SIGKILL in the middle of slow deliveries loses none", async () => {
    const user = await at(0).user()
    // Slow (but within WEBHOOK_TIMEOUT): attempts are in flight in every replica when one is killed.
    const receiver = startReceiver({ default: { status: 200, delayMs: 1_500 } })
    receivers.push(receiver)
    const hook = await registerHook(at(0), user, receiver.url("/slow"))
    const projectIds = await createRoundRobin(user, 30, "Killed")
    await receiver.waitFor(3, { timeoutMs: 10_000 })
    const victim = replicas[0]!
    const inFlight = receiver.requests().filter((request) => request.status === undefined).length
    victim.process.kill("SIGKILL")
    expect(await victim.process.exited).not.toBe(0)
    replicas = replicas.slice(1)
    receiver.setDefault({ status: 200 })

    const delivered = await allDelivered(0, user, hook, 30)
    const requests = receiver.requests()
    const arrived = new Set(requests.map((request) => JSON.parse(request.body).data.id as string))
    for (const projectId of projectIds) expect(arrived.has(projectId)).toBe(true)
    expect(new Set(requests.map((request) => request.headers["x-service-event-id"]))).toEqual(
      new Set(delivered.map((row) => row.event_id))
    )
    // Duplicates are allowed (an attempt cut off by the kill is made again once its claim lapses); count them.
    const duplicates = requests.length - new Set(requests.map((request) => request.headers["x-service-delivery"])).size
    console.info(`replicas.test.ts: ${inFlight} attempts in flight at the kill, ${duplicates} delivered twice`)
    expect(receiver.overlapping.size).toBe(0)
  }, 90_000)
})
