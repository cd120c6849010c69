/**
 * The event catalogue (`GET /v1/event-types`): the nine subscribable types and `webhook.test`, each with a
 * description, the JSON Schema of its `data` and an example body. The schemas are checked with an independent
 * validator (Ajv) against the bodies a real receiver got for each type, and against wrong bodies, which they refuse.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import Ajv, { type ValidateFunction } from "ajv"
import addFormats from "ajv-formats"
import { startInProcess } from "../support/in-process.ts"
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"

const NINE = [
  "project.created",
  "project.updated",
  "project.deleted",
  "member.invited",
  "member.joined",
  "member.removed",
  "deployment.started",
  "deployment.completed",
  "deployment.failed"
]

let server: Server
let receiver: Receiver
let olive: TestUser
let ivan: TestUser
let catalogue: Array<{ type: string; description: string; schema: object; example: any }>
const validators = new Map<string, ValidateFunction>()

const call = (user: TestUser, method: string, path: string, body?: unknown) =>
  server.request(path, { method, key: user.key, ...(body !== undefined ? { body } : {}) })

beforeAll(async () => {
  receiver = startReceiver()
  server = await startInProcess({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_POLL_INTERVAL: "100ms" } })
  ;[olive, ivan] = await Promise.all([
    server.user({ name: "Olive", scopes: "read,write,team:manage" }),
    server.user({ name: "Ivan", scopes: "read,write,team:manage" })
  ])
  const answer = await call(olive, "GET", "/v1/event-types")
  expect(answer.status).toBe(200)
  catalogue = answer.body.data
  const ajv = new Ajv({ allErrors: true, strict: true })
  addFormats(ajv)
  for (const entry of catalogue) validators.set(entry.type, ajv.compile(entry.schema))
}, 60_000)
afterAll(async () => {
  await server?.stop()
  await receiver?.stop()
}, 20_000)

describe("GET /v1/event-types", () => {
  test("lists the nine types and webhook.test, each described, with a schema and an example it validates", () => {
    expect(catalogue.map((entry) => entry.type)).toEqual([...NINE, "webhook.test"])
    for (const entry of catalogue) {
      expect(entry.description.length).toBeGreaterThan(10)
      expect(entry.description).not.toContain("\n")
      expect(Object.keys(entry.example)).toEqual(["id", "type", "created_at", "actor", "data"])
      expect(entry.example.type).toBe(entry.type)
      const validate = validators.get(entry.type)!
      expect({ type: entry.type, valid: validate(entry.example.data), errors: validate.errors ?? null }).toEqual({
        type: entry.type,
        valid: true,
        errors: null
      })
    }
  })

  test("the schemas refuse data of the wrong shape", () => {
    const project = validators.get("project.created")!
    const example = catalogue[0]!.example.data
    expect(project(example)).toBe(true)
    expect(project({ ...example, visibility: "everyone" })).toBe(false)
    const { id: _, ...withoutId } = example
    expect(project(withoutId)).toBe(false)
    expect(project({ ...example, id: "usr_01kg7xnv8h2k4m6p8r0t2v4x6z" })).toBe(false)
    expect(validators.get("member.joined")!(example)).toBe(false)
    expect(validators.get("webhook.test")!({ webhook_id: 42 })).toBe(false)
  })

  test("any authenticated caller may read it, whatever its scopes; no credential is a 401", async () => {
    const billing = await server.user({ name: "Bill", scopes: "billing:read" })
    const answer = await call(billing, "GET", "/v1/event-types")
    expect(answer.status).toBe(200)
    expect(answer.body.data).toEqual(catalogue)
    expect(answer.body.meta).toMatchObject({ total: 10, page: 1, per_page: 10 })
    const anonymous = await server.request("/v1/event-types")
    expect(anonymous.status).toBe(401)
    expect(anonymous.body.error.code).toBe("unauthorized")
  })

  test("is in the OpenAPI document", async () => {
    const document = (await server.request("/v1/openapi.json")).body
    const operation = document.paths["/v1/event-types"].get
    expect(operation.description.length).toBeGreaterThan(0)
    expect(operation.responses["200"]).toBeDefined()
  })
})

describe("the published schemas hold for what receivers get", () => {
  test("every type a change can cause, and webhook.test, delivered and valid against its schema", async () => {
    const hook = await call(olive, "POST", "/v1/webhooks", { url: receiver.url("/olive"), events: NINE })
    expect(hook.status).toBe(201)

    const project = (await call(olive, "POST", "/v1/projects", { name: "Catalogued" })).body.data
    expect((await call(olive, "PUT", `/v1/projects/${project.id}`, { description: "changed" })).status).toBe(200)
    const team = (await call(olive, "POST", "/v1/teams", { name: "Catalogue team" })).body.data
    const invited = await call(olive, "POST", `/v1/teams/${team.id}/invitations`, { email: ivan.email, role: "member" })
    expect(invited.status).toBe(201)
    expect((await call(ivan, "POST", `/v1/invitations/${invited.body.data.id}/accept`)).status).toBe(200)
    expect((await call(olive, "DELETE", `/v1/teams/${team.id}/members/${ivan.id}`)).status).toBe(204)
    const first = (await call(olive, "POST", `/v1/projects/${project.id}/deployments`, { ref: "v1" })).body.data
    const done = await call(olive, "PUT", `/v1/projects/${project.id}/deployments/${first.id}`, { status: "succeeded" })
    expect(done.status).toBe(200)
    const second = (await call(olive, "POST", `/v1/projects/${project.id}/deployments`, { ref: "v2" })).body.data
    const failed = await call(olive, "PUT", `/v1/projects/${project.id}/deployments/${second.id}`, { status: "failed" })
    expect(failed.status).toBe(200)
    expect((await call(olive, "DELETE", `/v1/projects/${project.id}`)).status).toBe(204)
    expect((await call(olive, "POST", `/v1/webhooks/${hook.body.data.id}/test`, {})).status).toBe(202)

    const typeOf = (request: ReceivedRequest) => request.headers["x-service-event"]
    const all = [...NINE, "webhook.test"]
    // Eleven: deployment.started twice, every other type once.
    const received = await receiver.waitFor(all.length + 1, {
      path: "/olive",
      where: (request) => all.includes(typeOf(request) ?? ""),
      timeoutMs: 30_000
    })
    expect(new Set(received.map(typeOf))).toEqual(new Set(all))
    for (const request of received) {
      const body = JSON.parse(request.body)
      expect(Object.keys(body)).toEqual(["id", "type", "created_at", "actor", "data"])
      const validate = validators.get(body.type)!
      const outcome = { type: body.type, valid: validate(body.data), errors: validate.errors ?? null }
      expect(outcome).toEqual({ type: body.type, valid: true, errors: null })
    }
  }, 60_000)
})
