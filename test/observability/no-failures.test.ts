/**
 * A request on a hot path runs no failure: a GET, a list page and a create of a project, with an API key or with
 * the dashboard's session JWT, make no fiber of the request run a `Failure`. A failure used for control flow there
 * (a setting looked up and found unset, `Effect.currentSpan` without a span, an `Option` yielded as `None`) costs an
 * error and its stack trace on every request. Counted by a supervisor that sees every step of the request's fibers,
 * not timed.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Cause, Effect, Exit, type Fiber, Layer, RuntimeFlags, Supervisor } from "effect"
import { CurrentRequestIdentity } from "../../src/Domain/RequestId.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

/** The failures run by fibers serving a request, each as its first line, from the last `reset()` on. */
class RequestFailures extends Supervisor.AbstractSupervisor<void> {
  seen: Array<string> = []
  get value() {
    return Effect.void
  }
  override onEffect<A, E>(fiber: Fiber.RuntimeFiber<A, E>, effect: Effect.Effect<unknown, unknown, unknown>): void {
    if (!Exit.isExit(effect) || !Exit.isFailure(effect)) return
    if (fiber.getFiberRef(CurrentRequestIdentity) === undefined) return
    this.seen.push(Cause.pretty(effect.cause).split("\n")[0] ?? "")
  }
  reset() {
    this.seen = []
  }
}

const failures = new RequestFailures()
let server: Server
let ann: TestUser
let projectId = ""
/** A session JWT, as the dashboard holds (`POST /oauth/login`). */
let session = ""

beforeAll(async () => {
  server = await startInProcess({
    around: Layer.merge(Supervisor.addSupervisor(failures), RuntimeFlags.enableOpSupervision)
  })
  ann = await server.user({ name: "Ann", scopes: "read,write" })
  // A subscriber, so a create also reads and writes deliveries.
  await server.request("/v1/webhooks", {
    method: "POST",
    key: ann.key,
    body: { url: "http://127.0.0.1:9/hook", events: ["project.created"] }
  })
  const made = await server.request("/v1/projects", { method: "POST", key: ann.key, body: { name: "First" } })
  projectId = made.body.data.id
  const email = `session.${Math.random().toString(36).slice(2, 10)}@example.com`
  await server.fixtures.account({ email, name: "Session User", password: "correct horse battery" })
  const login = await server.request("/oauth/login", {
    method: "POST",
    body: { email, password: "correct horse battery" }
  })
  session = login.body.access_token
}, 60_000)

afterAll(async () => {
  await server?.stop()
}, 20_000)

const failuresOf = async (
  path: string,
  init: { method: string; body?: unknown },
  status: number,
  key: string = ann.key
) => {
  failures.reset()
  const res = await server.request(path, { ...init, key })
  expect(res.status).toBe(status)
  return failures.seen
}

describe("failures a request runs", () => {
  test("a missing project's 404 is one, seen (the count is not blind)", async () => {
    const seen = await failuresOf("/v1/projects/proj_01kmvx4sdqf3c9t8a8e1h2j3k4", { method: "GET" }, 404)
    expect(seen.length).toBeGreaterThan(0)
    expect(seen.join("\n")).toContain("No project with id proj_01kmvx4sdqf3c9t8a8e1h2j3k4")
  })

  test("GET a project, a list page (with its Link header) and a create: none", async () => {
    expect(await failuresOf(`/v1/projects/${projectId}`, { method: "GET" }, 200)).toEqual([])
    expect(await failuresOf("/v1/projects?page=1&per_page=1", { method: "GET" }, 200)).toEqual([])
    expect(await failuresOf("/v1/projects", { method: "POST", body: { name: "Second" } }, 201)).toEqual([])
  })

  test("a request with a session JWT (the dashboard's): none", async () => {
    expect(await failuresOf("/v1/users/me", { method: "GET" }, 200, session)).toEqual([])
    expect(await failuresOf("/v1/projects?page=1", { method: "GET" }, 200, session)).toEqual([])
  })
})
