/**
 * Ed25519 webhooks (decisions "Webhooks for receivers at scale"): a webhook created with `"signature": "ed25519"`
 * shows a `whpk_` public key, and every attempt's `webhook-signature` holds `v1a` entries a receiver verifies with
 * that public key alone (the code of docs/webhooks.md), with no `X-Service-Signature`; rotation signs with both key
 * pairs during the overlap and shows the previous public key; the private keys are stored encrypted (never in the
 * database's files or a dump); bad input names its field.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test"
import { existsSync, readFileSync } from "node:fs"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { keyRingOf } from "../../src/Secrets/KeyRing.ts"
import { secretsKeyOf } from "../support/fixtures.ts"
import { startInProcess } from "../support/in-process.ts"
import { type ReceivedRequest, startReceiver } from "../support/receiver.ts"
import { freshDatabaseUrl, type Server, type TestUser, usingPostgres } from "../support/server.ts"

const PG_DUMP = "/usr/lib/postgresql/15/bin/pg_dump"
const PUBLIC_KEY = /^whpk_[A-Za-z0-9+/]{43}=$/
const V1A = /^v1a,[A-Za-z0-9+/]{86}==$/

// The receiver's check exactly as docs/webhooks.md gives it ("Ed25519 signatures"): keep the two the same.
async function verifyV1a(publicKey: string, headers: Record<string, string>, body: string): Promise<boolean> {
  const timestamp = Number(headers["webhook-timestamp"])
  if (!(Math.abs(Date.now() / 1000 - timestamp) <= 300)) return false // not older or newer than five minutes
  const raw = Uint8Array.from(atob(publicKey.slice("whpk_".length)), (c) => c.charCodeAt(0))
  const key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"])
  const signed = new TextEncoder().encode(`${headers["webhook-id"]}.${timestamp}.${body}`)
  for (const entry of (headers["webhook-signature"] ?? "").split(" ")) {
    const [version, signature] = entry.split(",")
    if (version !== "v1a" || signature === undefined) continue
    const bytes = Uint8Array.from(atob(signature), (c) => c.charCodeAt(0))
    if (await crypto.subtle.verify({ name: "Ed25519" }, key, bytes, signed)) return true
  }
  return false
}

const receiver = startReceiver()
let databaseUrl: string
let server: Server
let ann: TestUser

beforeAll(async () => {
  databaseUrl = await freshDatabaseUrl()
  server = await startInProcess({
    databaseUrl,
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_POLL_INTERVAL: "100ms" }
  })
  ann = await server.user({ name: "Ann" })
}, 60_000)
afterAll(async () => {
  await server?.stop()
  await receiver.stop()
}, 20_000)

let counter = 0
const newPath = () => `/ed-${++counter}`
const registered: Array<string> = []
afterEach(async () => {
  for (const id of registered.splice(0)) await server.request(`/v1/webhooks/${id}`, { method: "DELETE", key: ann.key })
})

const create = (body: Record<string, unknown>) =>
  server.request("/v1/webhooks", { method: "POST", key: ann.key, body: { events: ["project.created"], ...body } })

const ed25519Hook = async () => {
  const path = newPath()
  const res = await create({ url: receiver.url(path), signature: "ed25519" })
  expect(res.status).toBe(201)
  registered.push(res.body.data.id)
  return { path, data: res.body.data }
}

const createProject = async () => {
  const res = await server.request("/v1/projects", {
    method: "POST",
    key: ann.key,
    body: { name: `p-${++counter}` }
  })
  expect(res.status).toBe(201)
}

const arrival = async (path: string): Promise<ReceivedRequest> =>
  (await receiver.waitFor(1, { path, timeoutMs: 15_000 }))[0]!

describe("an ed25519 webhook", () => {
  test("shows its public key (not a secret), and signs v1a entries its public key alone verifies", async () => {
    const { path, data } = await ed25519Hook()
    expect(data.signature).toBe("ed25519")
    expect(data.public_key).toMatch(PUBLIC_KEY)
    expect(data.previous_public_key).toBeNull()
    expect(data.secret).toBeUndefined()
    const got = await server.request(`/v1/webhooks/${data.id}`, { key: ann.key })
    expect(got.body.data).toMatchObject({
      signature: "ed25519",
      public_key: data.public_key,
      previous_public_key: null
    })
    const listed = await server.request("/v1/webhooks", { key: ann.key })
    expect(listed.body.data.find((w: { id: string }) => w.id === data.id).public_key).toBe(data.public_key)

    await createProject()
    const request = await arrival(path)
    expect(request.headers["x-service-signature"]).toBeUndefined()
    expect(request.headers["webhook-signature"]).toMatch(V1A)
    expect(await verifyV1a(data.public_key, request.headers, request.body)).toBe(true)
    // Another body, id or key does not verify.
    expect(await verifyV1a(data.public_key, request.headers, `${request.body} `)).toBe(false)
    expect(await verifyV1a(data.public_key, { ...request.headers, "webhook-id": "evt_other" }, request.body)).toBe(
      false
    )
    const other = await ed25519Hook()
    expect(await verifyV1a(other.data.public_key, request.headers, request.body)).toBe(false)
  }, 30_000)

  test("an hmac webhook is as before: signature hmac, no public key", async () => {
    const res = await create({ url: receiver.url(newPath()) })
    expect(res.status).toBe(201)
    registered.push(res.body.data.id)
    expect(res.body.data).toMatchObject({ signature: "hmac", public_key: null, previous_public_key: null })
    expect(res.body.data.secret).toMatch(/^whsec_/)
  })

  test("rotation: a new key pair; during the overlap both sign (the new first) and the previous public key is shown", async () => {
    const { path, data } = await ed25519Hook()
    const rotated = await server.request(`/v1/webhooks/${data.id}/rotate-secret`, {
      method: "POST",
      key: ann.key,
      body: {}
    })
    expect(rotated.status).toBe(200)
    expect(rotated.body.data.secret).toBeUndefined()
    expect(rotated.body.data.public_key).toMatch(PUBLIC_KEY)
    expect(rotated.body.data.public_key).not.toBe(data.public_key)
    expect(rotated.body.data.previous_public_key).toBe(data.public_key)
    const got = await server.request(`/v1/webhooks/${data.id}`, { key: ann.key })
    expect(got.body.data.previous_public_key).toBe(data.public_key)

    await createProject()
    const request = await arrival(path)
    const [first, second] = (request.headers["webhook-signature"] ?? "").split(" ")
    expect(first).toMatch(V1A)
    expect(second).toMatch(V1A)
    const only = (entry: string) => ({ ...request.headers, "webhook-signature": entry })
    const newKey = rotated.body.data.public_key
    expect(await verifyV1a(newKey, only(first!), request.body)).toBe(true)
    expect(await verifyV1a(data.public_key, only(second!), request.body)).toBe(true)
    expect(await verifyV1a(data.public_key, only(first!), request.body)).toBe(false)
    expect(await verifyV1a(newKey, request.headers, request.body)).toBe(true)
    expect(await verifyV1a(data.public_key, request.headers, request.body)).toBe(true)
    expect(request.headers["x-service-signature"]).toBeUndefined()
  }, 30_000)
})

describe("bad input names its field", () => {
  test("an unknown signature is validation_failed on signature", async () => {
    const res = await create({ url: receiver.url(newPath()), signature: "rsa" })
    expect(res.status).toBe(400)
    expect(res.body.error).toMatchObject({ code: "validation_failed", status: 400 })
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toContain("signature")
  })

  test("a secret with ed25519 is validation_failed on secret, at create, PUT and rotation", async () => {
    const res = await create({ url: receiver.url(newPath()), signature: "ed25519", secret: "a-secret-long-enough" })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe("validation_failed")
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(["secret"])

    const { data } = await ed25519Hook()
    for (const [method, path] of [
      ["PUT", `/v1/webhooks/${data.id}`],
      ["POST", `/v1/webhooks/${data.id}/rotate-secret`]
    ] as const) {
      const refused = await server.request(path, { method, key: ann.key, body: { secret: "a-secret-long-enough" } })
      expect(refused.status).toBe(400)
      expect(refused.body.error.details.map((d: { field: string }) => d.field)).toEqual(["secret"])
    }
    const unchanged = await server.request(`/v1/webhooks/${data.id}`, { key: ann.key })
    expect(unchanged.body.data.public_key).toBe(data.public_key)
  })
})

/** The database as a thief would have it: the SQLite files, or a dump of the PostgreSQL database. */
const copyOf = async (url: string): Promise<Buffer> => {
  if (usingPostgres()) {
    const dump = Bun.spawn([PG_DUMP, "--no-owner", `--dbname=${url}`], { stdout: "pipe", stderr: "pipe" })
    const [out, code] = await Promise.all([new Response(dump.stdout).arrayBuffer(), dump.exited])
    expect(code).toBe(0)
    return Buffer.from(out)
  }
  const file = url.replace(/^sqlite:/, "")
  return Buffer.concat([file, `${file}-wal`].filter((path) => existsSync(path)).map((path) => readFileSync(path)))
}

test("the private keys (current and rotated out) are stored encrypted: not in the database files or a dump", async () => {
  const { path, data } = await ed25519Hook()
  const rotated = await server.request(`/v1/webhooks/${data.id}/rotate-secret`, {
    method: "POST",
    key: ann.key,
    body: {}
  })
  expect(rotated.status).toBe(200)
  await createProject()
  await arrival(path)

  const [row] = await server.fixtures.run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{ readonly secret: string; readonly previous_secret: string }>`
        SELECT secret, previous_secret FROM webhooks WHERE id = ${data.id}`
    )
  )
  const ring = await Effect.runPromise(keyRingOf(secretsKeyOf(databaseUrl)))
  const privateKeys = await Promise.all(
    [row!.secret, row!.previous_secret].map((stored) => Effect.runPromise(ring.decrypt(stored, data.id)))
  )
  const publicKeys = [rotated.body.data.public_key, data.public_key]
  const copy = await copyOf(databaseUrl)
  for (const [i, privateKey] of privateKeys.entries()) {
    // The decrypted value is the PKCS #8 of the key pair shown: it signs what its public key verifies.
    const key = await crypto.subtle.importKey("pkcs8", Buffer.from(privateKey, "base64"), { name: "Ed25519" }, true, [
      "sign"
    ])
    const message = new TextEncoder().encode("m")
    const signed = await crypto.subtle.sign({ name: "Ed25519" }, key, message)
    const raw = Buffer.from(publicKeys[i]!.slice("whpk_".length), "base64")
    const pub = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"])
    expect(await crypto.subtle.verify({ name: "Ed25519" }, pub, signed, message)).toBe(true)
    // Neither the stored text, nor the DER, nor the 32-byte seed it ends with, is in the copy.
    const der = Buffer.from(privateKey, "base64")
    const seed = der.subarray(der.length - 32)
    for (const needle of [Buffer.from(privateKey, "utf8"), der, seed, Buffer.from(seed.toString("base64"), "utf8")]) {
      expect(copy.includes(needle)).toBe(false)
    }
  }
  // The public keys are stored as shown.
  expect(copy.includes(Buffer.from(data.public_key, "utf8"))).toBe(true)
}, 60_000)

test("docs/webhooks.md gives the receiver's check this file runs, word for word", () => {
  const functionOf = (text: string) => /^async function verifyV1a[\s\S]*?^}$/m.exec(text)?.[0]
  const docs = readFileSync(new URL("../../docs/webhooks.md", import.meta.url), "utf8")
  const here = readFileSync(import.meta.path, "utf8")
  expect(functionOf(docs)).toBeDefined()
  expect(functionOf(docs)).toBe(functionOf(here))
})
