/**
 * Every list's `meta.total` is the true total (decisions.md) now that it is read from counters (migration 0006):
 * after writes through the API and the CLI (creates, status and visibility changes, revocations, finished
 * deployments, answered invitations, members removed, and cascades: a project, a webhook, a team and a user
 * deleted), each list's total must equal the same list counted from its rows (a `created_after` bound makes the
 * service count rows, not read counters) and the number of items it actually lists. Every user, every list,
 * every status filter it takes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { eventually } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "50ms,50ms,50ms,50ms",
  WEBHOOK_TIMEOUT: "1s",
  WEBHOOK_CLAIM_TIMEOUT: "3s",
  WEBHOOK_POLL_INTERVAL: "50ms"
}
const ALL = "read,write,team:manage"
const ALL_TIME = "created_after=2000-01-01T00:00:00.000Z"

let server: Server
let receiver: Receiver
let ann: TestUser
let bob: TestUser
let cat: TestUser
/** Made with the CLI, deleted with the CLI. */
let dan: { id: string; key: string }
const users = () => [ann, bob, cat, dan]

const call = async (key: string, method: string, path: string, body?: unknown) => {
  const res = await server.request(path, { method, key, ...(body !== undefined ? { body } : {}) })
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`)
  return res.body?.data
}

/** Every list the user can read, with each filter it takes (each path without `per_page`). */
const listsOf = async (key: string): Promise<Array<string>> => {
  const paths = [
    ...["", "?status=active", "?status=archived"].map((q) => `/v1/projects${q}`),
    ...["", "?status=active", "?status=revoked", "?status=expired"].map((q) => `/v1/api-keys${q}`),
    ...["", "?status=active", "?status=failed"].map((q) => `/v1/webhooks${q}`),
    "/v1/teams",
    "/v1/invitations"
  ]
  const all = async (path: string) =>
    (await call(key, "GET", `${path}${path.includes("?") ? "&" : "?"}per_page=100`)) as Array<any>
  for (const hook of await all("/v1/webhooks"))
    for (const q of ["", "?status=pending", "?status=delivered", "?status=failed"])
      paths.push(`/v1/webhooks/${hook.id}/deliveries${q}`)
  for (const team of await all("/v1/teams")) {
    paths.push(`/v1/teams/${team.id}/members`)
    if (team.role !== "member")
      for (const q of [
        "",
        "?status=pending",
        "?status=accepted",
        "?status=declined",
        "?status=revoked",
        "?status=expired"
      ])
        paths.push(`/v1/teams/${team.id}/invitations${q}`)
  }
  for (const project of await all("/v1/projects"))
    for (const q of [
      "",
      "?status=running",
      "?status=succeeded",
      "?status=failed",
      "?environment=staging",
      "?status=succeeded&environment=production"
    ])
      paths.push(`/v1/projects/${project.id}/deployments${q}`)
  return paths
}

/** Lists whose total differs from its row count or its items; [] when every one agrees. */
const disagreements = async () => {
  const found: Array<string> = []
  let lists = 0
  for (const user of users()) {
    for (const path of await listsOf(user.key)) {
      const join = path.includes("?") ? "&" : "?"
      const [counted, fresh] = await Promise.all([
        server.request(`${path}${join}per_page=100`, { key: user.key }),
        server.request(`${path}${join}per_page=100&${ALL_TIME}`, { key: user.key })
      ])
      expect(counted.status).toBe(200)
      expect(fresh.status).toBe(200)
      lists++
      const totals = [counted.body.meta.total, fresh.body.meta.total, counted.body.data.length]
      if (new Set(totals).size !== 1)
        found.push(`${path}: total ${totals[0]}, counted ${totals[1]}, items ${totals[2]}`)
    }
  }
  return { found, lists }
}

/** Every list agrees (waiting out deliveries in flight, whose status moves between the two reads). */
const expectTotalsAgree = async () => {
  let last: Awaited<ReturnType<typeof disagreements>> = { found: [], lists: 0 }
  await eventually(
    async () => {
      last = await disagreements()
      return last.found.length === 0 ? true : undefined
    },
    { timeoutMs: 15_000, intervalMs: 200 }
  ).catch(() => undefined)
  expect(last.found).toEqual([])
  return last.lists
}

const total = async (key: string, path: string) =>
  (await server.request(`${path}${path.includes("?") ? "&" : "?"}per_page=1`, { key })).body.meta.total as number

let t1 = ""
let t2 = ""
const projects: Record<string, string> = {}
const hooks: Array<string> = []
/** When the "soon" key expires (made in beforeAll; by the last test it must have). */
let soonExpiresAt = 0

beforeAll(async () => {
  receiver = startReceiver()
  receiver.setDefault({ status: 500 }, "/fails")
  server = await startInProcess({ env: ENV })
  ;[ann, bob, cat] = await Promise.all([
    server.user({ name: "Ann", scopes: ALL }),
    server.user({ name: "Bob", scopes: ALL }),
    server.user({ name: "Cat", scopes: ALL })
  ])
  const danUser = await server.cli<{ id: string }>(
    "users",
    "create",
    "--email",
    `dan.${Date.now()}@example.com`,
    "--name",
    "Dan"
  )
  const danKey = await server.cli<{ key: string }>(
    "api-keys",
    "create",
    "--user",
    danUser.id,
    "--name",
    "cli",
    "--scopes",
    "read,write"
  )
  dan = { id: danUser.id, key: danKey.key }

  // Teams: one made over HTTP with a member added by the CLI, one made by the CLI joined through an invitation.
  t1 = (await call(ann.key, "POST", "/v1/teams", { name: "T1" })).id
  await server.cli("teams", "add-member", "--team", t1, "--user", bob.id, "--role", "admin")
  t2 = (await server.cli<{ id: string }>("teams", "create", "--name", "T2", "--owner", bob.id)).id
  const invited = await call(bob.key, "POST", `/v1/teams/${t2}/invitations`, { email: ann.email, role: "member" })
  await call(ann.key, "POST", `/v1/invitations/${invited.id}/accept`)
  for (const email of ["x@example.com", "y@example.com", "z@example.com"])
    await call(ann.key, "POST", `/v1/teams/${t1}/invitations`, { email, role: "member" })
  await call(ann.key, "POST", `/v1/teams/${t1}/invitations`, { email: cat.email, role: "member" })

  // Webhooks (one answered 500, so its deliveries fail), then projects whose events they receive.
  for (const path of ["/ok", "/fails"])
    hooks.push(
      (
        await call(ann.key, "POST", "/v1/webhooks", {
          url: receiver.url(path),
          events: ["project.created", "project.updated"]
        })
      ).id
    )
  await call(dan.key, "POST", "/v1/webhooks", { url: receiver.url("/dan"), events: ["project.created"] })
  const project = async (name: string, key: string, body: Record<string, unknown> = {}) =>
    (projects[name] = (await call(key, "POST", "/v1/projects", { name, ...body })).id)
  for (const name of ["a1", "a2", "a3"]) await project(name, ann.key)
  for (const name of ["at1", "at2"]) await project(name, ann.key, { visibility: "team", team_id: t1 })
  for (const name of ["bt1", "bt2", "bt3"]) await project(name, bob.key, { visibility: "team", team_id: t1 })
  await project("bp", bob.key, { visibility: "private", team_id: t1 })
  for (const name of ["b2a", "b2b"]) await project(name, bob.key, { visibility: "team", team_id: t2 })
  await project("c1", cat.key)

  // Keys: over HTTP (one expiring in a moment), and with the CLI.
  await call(ann.key, "POST", "/v1/api-keys", { name: "k1", scopes: ["read"] })
  soonExpiresAt = Date.now() + 1500
  await call(ann.key, "POST", "/v1/api-keys", {
    name: "soon",
    scopes: ["read"],
    expires_at: new Date(soonExpiresAt).toISOString()
  })
  await server.cli("api-keys", "create", "--user", ann.id, "--name", "cli", "--scopes", "read")

  // Deployments of a team project, in two environments.
  for (const environment of ["production", "staging", "production"])
    await call(bob.key, "POST", `/v1/projects/${projects.at1}/deployments`, { ref: "main", environment })
}, 120_000)

afterAll(async () => {
  await server?.stop()
  await receiver?.stop()
}, 20_000)

describe("meta.total from counters equals the rows' count on every list", () => {
  test("after creates over HTTP and the CLI", async () => {
    const lists = await expectTotalsAgree()
    expect(lists).toBeGreaterThan(80)
    expect(await total(ann.key, "/v1/projects")).toBe(5 + 3 + 2) // own, bob's T1 team projects, bob's T2 ones
    expect(await total(bob.key, "/v1/projects")).toBe(4 + 2 + 2) // own T1 (with the private one), T2, ann's T1
  }, 120_000)

  test("after status, visibility, revocation, finishing, answers, role changes and removals", async () => {
    await call(ann.key, "PUT", `/v1/projects/${projects.a1}`, { status: "archived" })
    await call(bob.key, "PUT", `/v1/projects/${projects.bt1}`, { status: "archived" })
    await call(bob.key, "PUT", `/v1/projects/${projects.bt2}`, { visibility: "private" }) // leaves ann's list
    await call(bob.key, "PUT", `/v1/projects/${projects.bp}`, { visibility: "team" }) // enters it
    await call(ann.key, "DELETE", `/v1/projects/${projects.a3}`)
    const keys = (await call(ann.key, "GET", "/v1/api-keys?per_page=100")) as Array<{ id: string; name: string }>
    await call(ann.key, "DELETE", `/v1/api-keys/${keys.find((k) => k.name === "k1")!.id}`)
    await server.cli("api-keys", "revoke", "--key", keys.find((k) => k.name === "cli")!.id)
    const deployments = (await call(bob.key, "GET", `/v1/projects/${projects.at1}/deployments`)) as Array<{
      id: string
    }>
    await call(bob.key, "PUT", `/v1/projects/${projects.at1}/deployments/${deployments[0]!.id}`, {
      status: "succeeded"
    })
    await call(bob.key, "PUT", `/v1/projects/${projects.at1}/deployments/${deployments[1]!.id}`, { status: "failed" })
    const open = (await call(ann.key, "GET", `/v1/teams/${t1}/invitations?status=pending`)) as Array<{
      id: string
      email: string
    }>
    await call(ann.key, "DELETE", `/v1/teams/${t1}/invitations/${open.find((i) => i.email === "x@example.com")!.id}`)
    await call(cat.key, "POST", `/v1/invitations/${open.find((i) => i.email === cat.email)!.id}/accept`)
    await call(bob.key, "PUT", `/v1/teams/${t1}/members/${cat.id}`, { role: "admin" })
    await call(ann.key, "DELETE", `/v1/teams/${t1}/members/${cat.id}`)
    await call(ann.key, "PUT", `/v1/projects/${projects.a2}`, { name: "renamed" }) // another delivery each
    await Bun.sleep(Math.max(0, soonExpiresAt - Date.now()) + 100) // the "soon" key has expired
    await expectTotalsAgree()
    expect(await total(ann.key, "/v1/projects")).toBe(4 + 3 + 2)
    expect(await total(ann.key, "/v1/projects?status=archived")).toBe(2)
    expect(await total(ann.key, "/v1/api-keys")).toBe(4)
    expect(await total(ann.key, "/v1/api-keys?status=revoked")).toBe(2)
    expect(await total(ann.key, "/v1/api-keys?status=expired")).toBe(1)
    expect(await total(ann.key, `/v1/teams/${t1}/invitations?status=revoked`)).toBe(1)
    expect(await total(ann.key, `/v1/teams/${t1}/invitations?status=accepted`)).toBe(1)
    expect(await total(ann.key, `/v1/teams/${t1}/members`)).toBe(2)
    expect(await total(bob.key, `/v1/projects/${projects.at1}/deployments?status=running`)).toBe(1)
  }, 120_000)

  test("after cascades: a team, a webhook, a project with deployments and a user (CLI) deleted", async () => {
    // A team with projects cannot be deleted (the API moves no project out): delete them, then the team, with
    // its members and invitations. (A team deleted under its projects is in test/unit/list-counts.test.ts.)
    await call(bob.key, "DELETE", `/v1/projects/${projects.b2a}`)
    await call(bob.key, "DELETE", `/v1/projects/${projects.b2b}`)
    await call(bob.key, "DELETE", `/v1/teams/${t2}`)
    await call(ann.key, "DELETE", `/v1/webhooks/${hooks[1]}`) // with its deliveries
    await call(ann.key, "DELETE", `/v1/projects/${projects.at1}`) // with its deployments
    await server.cli("users", "delete", "--user", dan.id) // with their key and webhook
    dan = ann // dan's key no longer works: read ann's lists again in their place
    await expectTotalsAgree()
    expect(await total(ann.key, "/v1/teams")).toBe(1)
    expect(await total(ann.key, "/v1/projects")).toBe(3 + 3) // a1 a2 at2, bt1 bt3 bp
    expect(await total(bob.key, "/v1/projects")).toBe(4 + 1) // bt1-3 bp, at2
    expect(await total(ann.key, "/v1/webhooks")).toBe(1)
  }, 120_000)
})
