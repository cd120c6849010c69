/**
 * The change and its recorded answer commit together: a process killed (SIGKILL, by the test entry point
 * test/support/crash-main.ts) just before the commit of a keyed create leaves the key free and no project, event or
 * delivery; killed just after it, the retry replays the answer and there is still one project. Each case restarts a
 * server (src/main.ts) on the database the killed one left.
 */
import { afterEach, describe, expect, test } from "bun:test"
import type { CrashPoint } from "../support/crash-main.ts"
import { stopWithin } from "../support/helpers.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { freshDatabaseUrl, type Server, startServer, type TestUser } from "../support/server.ts"

// A delivery claimed by the killed process is attempted by the next once its claim lapses: keep that short.
const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_POLL_INTERVAL: "100ms",
  WEBHOOK_TIMEOUT: "1s",
  WEBHOOK_CLAIM_TIMEOUT: "2s"
}

const servers: Array<Server> = []
const receivers: Array<Receiver> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => stopWithin(server)))
  await Promise.all(receivers.splice(0).map((receiver) => receiver.stop()))
}, 20_000)

const start = async (databaseUrl: string, crashAt?: CrashPoint) => {
  const server = await startServer({ databaseUrl, env: ENV, crashAt })
  servers.push(server)
  return server
}

const create = (server: Server, user: TestUser, key: string) =>
  server.request("/v1/projects", {
    method: "POST",
    key: user.key,
    body: { name: "Crash-safe" },
    headers: { "idempotency-key": key }
  })

const projectCount = async (server: Server, user: TestUser) => {
  const res = await server.request("/v1/projects", { key: user.key })
  expect(res.status).toBe(200)
  return res.body.meta.total
}

const deliveryCount = async (server: Server, user: TestUser, hookId: string) => {
  const res = await server.request(`/v1/webhooks/${hookId}/deliveries`, { key: user.key })
  expect(res.status).toBe(200)
  return res.body.meta.total
}

/** A server that kills itself at `point` of its first keyed create, with a user and a webhook made before. */
const killedAt = async (point: CrashPoint) => {
  const receiver = startReceiver()
  receivers.push(receiver)
  const databaseUrl = await freshDatabaseUrl()
  const doomed = await start(databaseUrl, point)
  const user = await doomed.user()
  // Without a key nothing is killed: the webhook is made as usual.
  const hook = await doomed.request("/v1/webhooks", {
    method: "POST",
    key: user.key,
    body: { url: receiver.url("/crash"), events: ["project.created"] }
  })
  expect(hook.status).toBe(201)
  const key = `crash-${crypto.randomUUID()}`
  // The connection dies with the process: no answer reaches the client, which must retry.
  const lost = await create(doomed, user, key).then(
    (res) => `answered ${res.status}`,
    () => "no answer"
  )
  expect(lost).toBe("no answer")
  await doomed.process.exited
  expect(doomed.process.signalCode).toBe("SIGKILL")
  expect(doomed.logs.some((line) => line.includes(`crash-main: killing the process ${point}`))).toBe(true)
  await stopWithin(doomed)
  const restarted = await start(databaseUrl)
  return { server: restarted, user, key, hookId: hook.body.data.id as string, receiver }
}

describe("a process killed during a keyed create", () => {
  test("just before the commit: the key is free, nothing was made, and the retry makes exactly one project", async () => {
    const { hookId, key, receiver, server, user } = await killedAt("before-commit")
    expect(await projectCount(server, user)).toBe(0)
    expect(await deliveryCount(server, user, hookId)).toBe(0)

    const retried = await create(server, user, key)
    expect(retried.status).toBe(201)
    expect(retried.headers.get("idempotent-replayed")).toBeNull()
    const again = await create(server, user, key)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(again.text).toBe(retried.text)
    expect(await projectCount(server, user)).toBe(1)
    expect(await deliveryCount(server, user, hookId)).toBe(1)
    const [delivered] = await receiver.waitFor(1, { path: "/crash" })
    expect(JSON.parse(delivered!.body).data.id).toBe(retried.body.data.id)
  }, 60_000)

  test("just after the commit: the retry replays the committed answer, and there is still one project", async () => {
    const { hookId, key, receiver, server, user } = await killedAt("after-commit")
    expect(await projectCount(server, user)).toBe(1)

    const retried = await create(server, user, key)
    expect(retried.status).toBe(201)
    expect(retried.headers.get("idempotent-replayed")).toBe("true")
    const list = await server.request("/v1/projects", { key: user.key })
    expect(list.body.data.map((project: { id: string }) => project.id)).toEqual([retried.body.data.id])
    expect(await projectCount(server, user)).toBe(1)
    // The event committed with the project: one delivery, made by the restarted process.
    expect(await deliveryCount(server, user, hookId)).toBe(1)
    const [delivered] = await receiver.waitFor(1, { path: "/crash" })
    expect(JSON.parse(delivered!.body).data.id).toBe(retried.body.data.id)
  }, 60_000)
})
