/**
 * The six team and deployment events, end to end: each change's event arrives, signed, at the webhooks of exactly
 * the users decisions.md names — the team's owners and admins (and for member.joined / member.removed the user who
 * joined or left); for deployments, the project's owner and, for a team project, the team's owners and admins —
 * and at no one else's (checked in the receivers and in the non-recipients' delivery logs, which are written in
 * the same transaction as the event).
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { verify } from "@octokit/webhooks-methods"
import { startInProcess } from "../support/in-process.ts"
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "300ms,300ms,300ms,300ms",
  WEBHOOK_TIMEOUT: "1s",
  WEBHOOK_CLAIM_TIMEOUT: "3s",
  WEBHOOK_POLL_INTERVAL: "100ms"
}
const ALL = "read,write,team:manage"
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
let olive: TestUser // owner
let adam: TestUser // admin
let mia: TestUser // member throughout
let ivan: TestUser // invited, joins, is removed
let lena: TestUser // joins, then leaves
let cleo: TestUser // added by the CLI
let dora: TestUser // joins as an admin
let xavi: TestUser // never a member
let everyone: Array<TestUser>
let teamId: string

interface Hook {
  readonly id: string
  readonly path: string
  readonly secret: string
}
const hooks = new Map<string, Hook>()
const hookOf = (user: TestUser) => hooks.get(user.id)!

const call = (user: TestUser, method: string, path: string, body?: unknown) =>
  server.request(path, { method, key: user.key, ...(body !== undefined ? { body } : {}) })

beforeAll(async () => {
  receiver = startReceiver()
  server = await startInProcess({ env: ENV })
  const named = (name: string) => server.user({ name, scopes: ALL })
  ;[olive, adam, mia, ivan, lena, cleo, dora, xavi] = await Promise.all([
    named("Olive"),
    named("Adam"),
    named("Mia"),
    named("Ivan"),
    named("Lena"),
    named("Cleo"),
    named("Dora"),
    named("Xavi")
  ])
  everyone = [olive, adam, mia, ivan, lena, cleo, dora, xavi]
  for (const user of everyone) {
    const path = `/hook-${user.name.toLowerCase()}`
    const res = await call(user, "POST", "/v1/webhooks", { url: receiver.url(path), events: NINE })
    expect(res.status).toBe(201)
    hooks.set(user.id, { id: res.body.data.id, path, secret: res.body.data.secret })
  }
  teamId = (await call(olive, "POST", "/v1/teams", { name: "Eventful" })).body.data.id
  for (const [user, role] of [
    [adam, "admin"],
    [mia, "member"]
  ] as const) {
    const invited = await call(olive, "POST", `/v1/teams/${teamId}/invitations`, { email: user.email, role })
    expect((await call(user, "POST", `/v1/invitations/${invited.body.data.id}/accept`)).status).toBe(200)
  }
}, 60_000)
afterAll(async () => {
  await server?.stop()
  await receiver?.stop()
}, 20_000)

const eventOf = (request: ReceivedRequest) =>
  JSON.parse(request.body) as { id: string; type: string; created_at: string; data: Record<string, unknown> }

/**
 * Waits until the event of `type` whose data `matches` has reached every user in `to`, checks each delivery's
 * signature and headers, then checks that no one else has a delivery of it. Answers the event.
 */
const expectEvent = async (
  type: string,
  matches: (data: Record<string, unknown>) => boolean,
  to: ReadonlyArray<TestUser>
) => {
  const isIt = (request: ReceivedRequest) =>
    request.headers["x-service-event"] === type && matches(eventOf(request).data)
  const arrived = await Promise.all(to.map((user) => receiver.waitFor(1, { path: hookOf(user).path, where: isIt })))
  const eventIds = new Set(arrived.map((requests) => requests[0]!.headers["x-service-event-id"]))
  expect(eventIds.size).toBe(1)
  const eventId = [...eventIds][0]!
  for (const [index, user] of to.entries()) {
    const requests = arrived[index]!
    // Exactly one delivery per recipient, even when they are both a manager and the user who joined or left.
    expect(requests).toHaveLength(1)
    const request = requests[0]!
    expect(request.method).toBe("POST")
    expect(request.headers["content-type"]).toContain("application/json")
    expect(request.headers["x-service-delivery"]).toMatch(/^dlv_/)
    expect(request.headers["x-service-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/)
    expect(await verify(hookOf(user).secret, request.body, request.headers["x-service-signature"]!)).toBe(true)
    expect(
      await verify("whsec_not-the-secret-at-all-000000", request.body, request.headers["x-service-signature"]!)
    ).toBe(false)
    const event = eventOf(request)
    expect(event).toMatchObject({ id: eventId, type })
    expect(Object.keys(event).sort()).toEqual(["actor", "created_at", "data", "id", "type"])
  }
  const recipients = new Set(to.map((user) => user.id))
  for (const user of everyone.filter((u) => !recipients.has(u.id))) {
    const log = await call(user, "GET", `/v1/webhooks/${hookOf(user).id}/deliveries?per_page=100`)
    expect(log.status).toBe(200)
    expect(log.body.data.filter((d: { event_id: string }) => d.event_id === eventId)).toEqual([])
    expect(receiver.requests(hookOf(user).path).filter((r) => r.headers["x-service-event-id"] === eventId)).toEqual([])
  }
  return eventOf(arrived[0]![0]!)
}

const invite = async (user: { email: string }, role: string, by: TestUser = olive) => {
  const res = await call(by, "POST", `/v1/teams/${teamId}/invitations`, { email: user.email, role })
  expect(res.status).toBe(201)
  return res.body.data as { id: string }
}

describe("member.* events", () => {
  test("member.invited goes to the owners and admins, with the invitee's user id", async () => {
    await invite(ivan, "member", adam)
    const event = await expectEvent("member.invited", (d) => d.email === ivan.email, [olive, adam])
    expect(event.data).toEqual({ team_id: teamId, user_id: ivan.id, email: ivan.email, role: "member" })
  })

  test("member.invited for an email with no account has user_id null", async () => {
    const email = `nobody.${Date.now()}@example.com`
    await invite({ email }, "admin")
    const event = await expectEvent("member.invited", (d) => d.email === email, [olive, adam])
    expect(event.data).toEqual({ team_id: teamId, user_id: null, email, role: "admin" })
  })

  test("member.joined (accepting) goes to the owners, admins and the new member", async () => {
    const pending = await call(ivan, "GET", "/v1/invitations")
    const invitation = pending.body.data.find((i: { team_id: string }) => i.team_id === teamId)
    expect((await call(ivan, "POST", `/v1/invitations/${invitation.id}/accept`)).status).toBe(200)
    const event = await expectEvent("member.joined", (d) => d.user_id === ivan.id, [olive, adam, ivan])
    expect(event.data).toEqual({ team_id: teamId, user_id: ivan.id, email: ivan.email, role: "member" })
  })

  test("member.removed (removal by an admin) goes to the owners, admins and the removed user", async () => {
    expect((await call(adam, "DELETE", `/v1/teams/${teamId}/members/${ivan.id}`)).status).toBe(204)
    const event = await expectEvent("member.removed", (d) => d.user_id === ivan.id, [olive, adam, ivan])
    expect(event.data).toEqual({ team_id: teamId, user_id: ivan.id, email: ivan.email, role: "member" })
  })

  test("member.removed (leaving) goes to the owners, admins and the one who left", async () => {
    const invitation = await invite(lena, "member")
    await call(lena, "POST", `/v1/invitations/${invitation.id}/accept`)
    await expectEvent("member.joined", (d) => d.user_id === lena.id, [olive, adam, lena])
    expect((await call(lena, "DELETE", `/v1/teams/${teamId}/members/${lena.id}`)).status).toBe(204)
    const event = await expectEvent("member.removed", (d) => d.user_id === lena.id, [olive, adam, lena])
    expect(event.data).toEqual({ team_id: teamId, user_id: lena.id, email: lena.email, role: "member" })
  })

  test("the CLI's teams add-member emits member.joined too", async () => {
    await server.cli("teams", "add-member", "--team", teamId, "--user", cleo.id, "--role", "member")
    const event = await expectEvent("member.joined", (d) => d.user_id === cleo.id, [olive, adam, cleo])
    expect(event.data).toEqual({ team_id: teamId, user_id: cleo.id, email: cleo.email, role: "member" })
  }, 30_000)

  test("no event when a change is refused", async () => {
    const before = receiver.requests().length
    const refused = await call(mia, "DELETE", `/v1/teams/${teamId}/members/${adam.id}`)
    expect(refused.status).toBe(403)
    const lastOwner = await call(olive, "DELETE", `/v1/teams/${teamId}/members/${olive.id}`)
    expect(lastOwner.status).toBe(409)
    // A later event reaching the owner proves the refused ones were never queued before it.
    await invite({ email: `marker.${Date.now()}@example.com` }, "member")
    await expectEvent("member.invited", (d) => String(d.email).startsWith("marker."), [olive, adam])
    const since = receiver.requests().slice(before)
    expect(since.filter((r) => r.headers["x-service-event"] === "member.removed")).toEqual([])
  })
})

describe("deployment.* events", () => {
  let teamProject: string
  let xavisProject: string

  beforeAll(async () => {
    teamProject = (await call(mia, "POST", "/v1/projects", { name: "Shared", visibility: "team", team_id: teamId }))
      .body.data.id
    xavisProject = (await call(xavi, "POST", "/v1/projects", { name: "Solo" })).body.data.id
  })

  test("deployment.started on a team project goes to its owner and the team's owners and admins, with the record", async () => {
    const started = await call(mia, "POST", `/v1/projects/${teamProject}/deployments`, {
      ref: "v1",
      environment: "staging"
    })
    expect(started.status).toBe(201)
    const event = await expectEvent("deployment.started", (d) => d.id === started.body.data.id, [mia, olive, adam])
    expect(event.data).toEqual(started.body.data)
  })

  test("deployment.completed when it succeeds", async () => {
    const started = (await call(mia, "POST", `/v1/projects/${teamProject}/deployments`, { ref: "v2" })).body.data
    await expectEvent("deployment.started", (d) => d.id === started.id, [mia, olive, adam])
    const done = await call(adam, "PUT", `/v1/projects/${teamProject}/deployments/${started.id}`, {
      status: "succeeded"
    })
    expect(done.status).toBe(200)
    const event = await expectEvent("deployment.completed", (d) => d.id === started.id, [mia, olive, adam])
    expect(event.data).toEqual(done.body.data)
    expect(event.data.status).toBe("succeeded")
  })

  test("deployment.failed when it fails", async () => {
    const started = (await call(olive, "POST", `/v1/projects/${teamProject}/deployments`, { ref: "v3" })).body.data
    const failed = await call(mia, "PUT", `/v1/projects/${teamProject}/deployments/${started.id}`, {
      status: "failed",
      description: "smoke tests failed"
    })
    const event = await expectEvent("deployment.failed", (d) => d.id === started.id, [mia, olive, adam])
    expect(event.data).toEqual(failed.body.data)
    // A refused second finish emits nothing.
    expect(
      (await call(mia, "PUT", `/v1/projects/${teamProject}/deployments/${started.id}`, { status: "succeeded" })).status
    ).toBe(409)
  })

  test("a private project's deployment events go to its owner only", async () => {
    const started = (await call(xavi, "POST", `/v1/projects/${xavisProject}/deployments`, { ref: "solo" })).body.data
    await expectEvent("deployment.started", (d) => d.id === started.id, [xavi])
    await call(xavi, "PUT", `/v1/projects/${xavisProject}/deployments/${started.id}`, { status: "succeeded" })
    await expectEvent("deployment.completed", (d) => d.id === started.id, [xavi])
    const deliveries = receiver.requests().filter((r) => r.headers["x-service-event"] === "deployment.completed")
    expect(deliveries.filter((r) => eventOf(r).data.id === started.id)).toHaveLength(1)
  })
})

describe("someone both manager and subject", () => {
  test("joining as an admin: one member.joined delivery to them, not two", async () => {
    const invitation = await invite(dora, "admin")
    await call(dora, "POST", `/v1/invitations/${invitation.id}/accept`)
    const event = await expectEvent("member.joined", (d) => d.user_id === dora.id, [olive, adam, dora])
    expect(event.data.role).toBe("admin")
  })
})
