/**
 * What the webhook list and the delivery records say about an endpoint and an event (issue 44, decisions.md
 * "Webhooks for receivers at scale"):
 *
 * - each webhook of the list carries `health`: its latest attempt (time, status code or none, outcome) and its
 *   attempts of the last 24 hours with the share that succeeded; null before the first attempt; an attempt older than
 *   24 hours is the latest still, but counts in no share. A single read has no `health` (its ETag must not change
 *   with every attempt, or an edit's If-Match would keep failing).
 * - a delivery names its event's resource (`resource_name`: the project's name), null when it has none;
 * - `GET /v1/events/:event_id/deliveries` lists an event's deliveries to the caller's own webhooks, with their URLs,
 *   for an event the caller may read (404 otherwise).
 *
 * In this process on a fresh database, on the engine `DATABASE_URL` selects.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { expectError, expectValidation } from "../support/api.ts"
import { eventually, freePort, stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "50ms,50ms,50ms,50ms",
  WEBHOOK_TIMEOUT: "2s",
  WEBHOOK_CLAIM_TIMEOUT: "4s",
  WEBHOOK_POLL_INTERVAL: "100ms"
}

let server: Server
let receiver: Receiver
let ann: TestUser
let bob: TestUser

beforeAll(async () => {
  receiver = startReceiver()
  server = await startInProcess({ env: ENV })
  ;[ann, bob] = await Promise.all([server.user({ name: "Ann" }), server.user({ name: "Bob" })])
}, 60_000)

afterAll(async () => {
  await stopWithin(server)
  await receiver?.stop()
}, 20_000)

const call = (user: TestUser, method: string, path: string, body?: unknown) =>
  server.request(`/v1${path}`, { method, key: user.key, ...(body === undefined ? {} : { body }) })

const register = async (user: TestUser, url: string, events: ReadonlyArray<string> = ["project.created"]) => {
  const created = await call(user, "POST", "/webhooks", { url, events })
  expect(created.status).toBe(201)
  return created.body.data.id as string
}

/** The caller's webhooks as the list shows them, by id. */
const listed = async (user: TestUser): Promise<Map<string, any>> => {
  const list = await call(user, "GET", "/webhooks?per_page=100")
  expect(list.status).toBe(200)
  return new Map(list.body.data.map((hook: { id: string }) => [hook.id, hook]))
}

/** A webhook's one delivery, once it is no longer pending; with its attempts. */
const settled = (user: TestUser, hookId: string) =>
  eventually(
    async () => {
      const log = await call(user, "GET", `/webhooks/${hookId}/deliveries`)
      const delivery = log.body.data[0]
      if (delivery === undefined || delivery.status === "pending") return undefined
      return (await call(user, "GET", `/webhooks/${hookId}/deliveries/${delivery.id}`)).body.data
    },
    { what: `the delivery to ${hookId} to settle`, timeoutMs: 30_000 }
  )

describe("webhook health in the list", () => {
  test("the latest attempt and the last 24 hours' share of successes; null before any attempt", async () => {
    receiver.setDefault({ status: 200 }, "/health-ok")
    receiver.setDefault({ status: 500, body: "down" }, "/health-bad")
    // One failure, then success: two attempts, half of them successful.
    receiver.setDefault({ status: 200 }, "/health-mixed")
    receiver.enqueue("/health-mixed", { status: 503 })
    const ok = await register(ann, receiver.url("/health-ok"))
    const bad = await register(ann, receiver.url("/health-bad"))
    const mixed = await register(ann, receiver.url("/health-mixed"))
    // Nothing listens there: every attempt gets no response.
    const unreachable = await register(ann, `http://127.0.0.1:${freePort()}/nobody`)
    const idle = await register(ann, receiver.url("/health-idle"), ["project.deleted"])
    expect((await call(ann, "POST", "/projects", { name: "Health check" })).status).toBe(201)

    const [okDelivery, badDelivery, mixedDelivery, unreachableDelivery] = await Promise.all(
      [ok, bad, mixed, unreachable].map((id) => settled(ann, id))
    )
    expect([okDelivery.status, badDelivery.status, mixedDelivery.status, unreachableDelivery.status]).toEqual([
      "delivered",
      "failed",
      "delivered",
      "failed"
    ])
    const latest = (delivery: any) => delivery.attempts[delivery.attempts.length - 1]

    const hooks = await listed(ann)
    expect(hooks.get(ok).health).toEqual({
      last_attempt_at: latest(okDelivery).attempted_at,
      last_status_code: 200,
      last_outcome: "succeeded",
      attempts_24h: 1,
      success_rate_24h: 1
    })
    expect(hooks.get(bad).health).toEqual({
      last_attempt_at: latest(badDelivery).attempted_at,
      last_status_code: 500,
      last_outcome: "failed",
      attempts_24h: 5,
      success_rate_24h: 0
    })
    expect(hooks.get(mixed).health).toEqual({
      last_attempt_at: latest(mixedDelivery).attempted_at,
      last_status_code: 200,
      last_outcome: "succeeded",
      attempts_24h: 2,
      success_rate_24h: 0.5
    })
    expect(hooks.get(unreachable).health).toEqual({
      last_attempt_at: latest(unreachableDelivery).attempted_at,
      last_status_code: null,
      last_outcome: "failed",
      attempts_24h: 5,
      success_rate_24h: 0
    })
    expect(hooks.get(idle).health).toBeNull()

    // A second event for the mixed one: three attempts, two of them successful (four decimals).
    expect((await call(ann, "POST", "/projects", { name: "Health check 2" })).status).toBe(201)
    const third = await eventually(
      async () => {
        const health = (await listed(ann)).get(mixed).health
        return health.attempts_24h === 3 ? health : undefined
      },
      { what: "the mixed webhook's third attempt", timeoutMs: 30_000 }
    )
    expect(third).toMatchObject({ last_status_code: 200, last_outcome: "succeeded", success_rate_24h: 0.6667 })

    // The single read carries no health: its ETag follows the webhook, not its traffic.
    const one = await call(ann, "GET", `/webhooks/${ok}`)
    expect(one.status).toBe(200)
    expect(one.body.data).not.toHaveProperty("health")

    // The ok webhook's attempt made 25 hours ago: still its latest, but outside the 24 hours.
    const dayAgo = new Date(Date.now() - 25 * 3600_000).toISOString()
    await server.fixtures.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          sql`UPDATE delivery_attempts SET attempted_at = ${dayAgo} WHERE delivery_id = ${okDelivery.id}`,
          sql`UPDATE deliveries SET last_attempt_at = ${dayAgo} WHERE id = ${okDelivery.id}`
        )
      )
    )
    const aged = await eventually(
      async () => {
        // The second project's delivery to the ok webhook is newer: wait for it, then age it too.
        const log = await call(ann, "GET", `/webhooks/${ok}/deliveries?status=delivered`)
        return log.body.meta.total === 2 ? log.body.data : undefined
      },
      { what: "the ok webhook's second delivery", timeoutMs: 30_000 }
    )
    await server.fixtures.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          sql`UPDATE delivery_attempts SET attempted_at = ${dayAgo}
              WHERE delivery_id IN ${sql.in(aged.map((d: { id: string }) => d.id))}`,
          sql`UPDATE deliveries SET last_attempt_at = ${dayAgo} WHERE id IN ${sql.in(aged.map((d: { id: string }) => d.id))}`
        )
      )
    )
    expect((await listed(ann)).get(ok).health).toMatchObject({
      last_attempt_at: dayAgo,
      last_status_code: 200,
      last_outcome: "succeeded",
      attempts_24h: 0,
      success_rate_24h: null
    })

    // Another user's list shows none of this.
    expect([...(await listed(bob)).keys()]).toEqual([])
  }, 90_000)
})

describe("resource names on deliveries", () => {
  test("a delivery names its event's project (list, single read, retry); none for a test event", async () => {
    receiver.setDefault({ status: 200 }, "/names")
    const hook = await register(ann, receiver.url("/names"), ["project.created", "project.updated"])
    const project = await call(ann, "POST", "/projects", { name: "Apollo <launch>" })
    expect(project.status).toBe(201)
    const renamed = await call(ann, "PUT", `/projects/${project.body.data.id}`, { name: "Artemis" })
    expect(renamed.status).toBe(200)
    const test = await call(ann, "POST", `/webhooks/${hook}/test`, {})
    expect(test.status).toBe(202)
    expect(test.body.data.resource_name).toBeNull()

    const log = await eventually(
      async () => {
        const page = await call(ann, "GET", `/webhooks/${hook}/deliveries?order=asc`)
        return page.body.meta.total === 3 ? page.body.data : undefined
      },
      { what: "three deliveries", timeoutMs: 30_000 }
    )
    // Each event's name as it was then.
    expect(log.map((d: any) => [d.event_type, d.resource_name])).toEqual([
      ["project.created", "Apollo <launch>"],
      ["project.updated", "Artemis"],
      ["webhook.test", null]
    ])
    const one = await call(ann, "GET", `/webhooks/${hook}/deliveries/${log[0].id}`)
    expect(one.body.data.resource_name).toBe("Apollo <launch>")
    const retried = await call(ann, "POST", `/webhooks/${hook}/deliveries/${log[1].id}/retry`)
    expect(retried.status).toBe(202)
    expect(retried.body.data.resource_name).toBe("Artemis")
  }, 60_000)
})

describe("GET /v1/events/:event_id/deliveries", () => {
  test("an event's deliveries to the caller's webhooks only, with their URLs; 404 outside its audience", async () => {
    receiver.setDefault({ status: 200 }, "/event-eve-1")
    receiver.setDefault({ status: 500 }, "/event-eve-2")
    receiver.setDefault({ status: 200 }, "/event-cid")
    // Eve owns the team; her webhooks are the only ones she has (Ann's above would receive this event too).
    const [eve, cid] = await Promise.all([server.user({ name: "Eve" }), server.user({ name: "Cid" })])
    const team = await server.fixtures.team("Deliveries team", eve.id)
    await server.fixtures.addMember(team.id, cid.id, "admin")
    await server.fixtures.addMember(team.id, bob.id, "member")
    const first = await register(eve, receiver.url("/event-eve-1"))
    const second = await register(eve, receiver.url("/event-eve-2"))
    const cids = await register(cid, receiver.url("/event-cid"))
    // Eve's webhook for another type gets no delivery of this event.
    await register(eve, receiver.url("/event-eve-other"), ["project.deleted"])

    // A team project: its owners and admins hear of it (Eve and Cid), a member does not (Bob).
    const project = await call(eve, "POST", "/projects", { name: "Shared", visibility: "team", team_id: team.id })
    expect(project.status).toBe(201)
    const feed = await call(eve, "GET", "/events?type=project.created&per_page=1")
    const event = feed.body.data[0]
    expect(event.data.id).toBe(project.body.data.id)

    const eves = await eventually(
      async () => {
        const page = await call(eve, "GET", `/events/${event.id}/deliveries`)
        expect(page.status).toBe(200)
        return page.body.data.every((d: any) => d.status !== "pending") ? page : undefined
      },
      { what: "Eve's deliveries of the event to settle", timeoutMs: 30_000 }
    )
    expect(eves.body.meta).toMatchObject({ total: 2, page: 1, per_page: 20 })
    const byHook = new Map(eves.body.data.map((d: any) => [d.webhook_id, d]))
    expect([...byHook.keys()].sort()).toEqual([first, second].sort())
    expect(byHook.get(first)).toMatchObject({
      event_id: event.id,
      event_type: "project.created",
      status: "delivered",
      resource_name: "Shared",
      webhook_url: receiver.url("/event-eve-1"),
      last_status_code: 200
    })
    expect(byHook.get(second)).toMatchObject({ webhook_url: receiver.url("/event-eve-2"), last_status_code: 500 })
    // Each item is a delivery of the webhook's log, with its webhook's URL besides.
    const fromLog = await call(eve, "GET", `/webhooks/${first}/deliveries/${(byHook.get(first) as any).id}`)
    const { attempts: _attempts, payload: _payload, ...record } = fromLog.body.data
    expect(byHook.get(first)).toEqual({ ...record, webhook_url: receiver.url("/event-eve-1") })

    // Filtered by status.
    const failed = await call(eve, "GET", `/events/${event.id}/deliveries?status=failed`)
    expect(failed.body.data.map((d: any) => d.webhook_id)).toEqual([second])
    // Cid sees his own delivery of the same event, not Eve's.
    const cidsPage = await call(cid, "GET", `/events/${event.id}/deliveries`)
    expect(cidsPage.body.data.map((d: any) => d.webhook_id)).toEqual([cids])

    // Outside the event's audience (a team member, a stranger), a malformed id, an unknown parameter.
    expectError(await call(bob, "GET", `/events/${event.id}/deliveries`), 404, "not_found", event.id)
    const stranger = await server.user({ name: "Dee" })
    expectError(await call(stranger, "GET", `/events/${event.id}/deliveries`), 404, "not_found")
    expectError(await call(eve, "GET", "/events/evt_01jd3xkq8w0000000000000000/deliveries"), 404, "not_found")
    expectValidation(await call(eve, "GET", "/events/nope/deliveries"), "event_id")
    expectValidation(await call(eve, "GET", `/events/${event.id}/deliveries?status=lost`), "status")
    expectValidation(await call(eve, "GET", `/events/${event.id}/deliveries?stauts=failed`), "stauts")
    // The event's own scope: `read`.
    const writer = await server.fixtures.apiKey(eve.id, { scopes: "projects:read" })
    const refused = await server.request(`/v1/events/${event.id}/deliveries`, { key: writer.key })
    expectError(refused, 403, "forbidden")
  }, 60_000)
})
