/**
 * Conditional requests (docs/api.md "Conditional requests"): `ETag` on every single-resource `GET` (the endpoints
 * come from the contract, so a new one fails here until it has a fixture), `If-None-Match` → 304, `HEAD` on every
 * `GET` of the contract, lists included, `If-Match` on `PUT` and `DELETE` (412 and nothing changed on a mismatch; `*`; a list), and the race of
 * concurrent `PUT`s carrying the same `If-Match`: exactly one wins. Runs on the engine `DATABASE_URL` names.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Api } from "../../src/Api.ts"
import { allGets, singleResourceGets } from "../support/contract.ts"
import { eventually } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { confidentialClient, oauthLayers, oauthTokensOf } from "../support/oauthTokens.ts"
import type { Server, TestUser } from "../support/server.ts"
import { onDatabase } from "../support/services.ts"

let server: Server
let ann: TestUser
let bob: TestUser

/** Ids of records made in `beforeAll`, by the collection a contract path names them under (`/v1/projects/:id`). */
const ids = new Map<string, string>()

/** A `GET` path of the contract with records made in `beforeAll`: each `:param` the id of the collection before it. */
const concrete = (route: string): string =>
  route.replace(/([a-z-]+)\/:[a-z_]+/g, (param: string, collection: string) =>
    ids.has(collection) ? `${collection}/${ids.get(collection)}` : param
  )

/** An answer's headers but those that differ from one request to the next. */
const stableHeaders = (res: { readonly headers: Headers }): Record<string, string> => {
  const stable: Record<string, string> = {}
  res.headers.forEach((value, name) => {
    if (!["x-request-id", "x-ratelimit-remaining", "x-ratelimit-reset", "date"].includes(name)) stable[name] = value
  })
  return stable
}

const call = (user: TestUser, method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  server.request(path, {
    method,
    key: user.key,
    ...(body !== undefined ? { body } : {}),
    ...(headers !== undefined ? { headers } : {})
  })

const etagOf = async (user: TestUser, path: string): Promise<string> => {
  const res = await call(user, "GET", path)
  expect(res.status).toBe(200)
  const etag = res.headers.get("etag")
  expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/)
  return etag ?? ""
}

const newProject = async (user: TestUser, name = "Apollo"): Promise<string> => {
  const res = await call(user, "POST", "/v1/projects", { name })
  expect(res.status).toBe(201)
  return res.body.data.id
}

beforeAll(async () => {
  server = await startInProcess({
    env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_DELAYS: "1h,1h,1h,1h", WEBHOOK_TIMEOUT: "2s" }
  })
  ann = await server.user({ name: "Ann", scopes: "read,write,team:manage" })
  bob = await server.user({ name: "Bob", scopes: "read,write,team:manage" })
  const project = await newProject(ann)
  const team = (await call(ann, "POST", "/v1/teams", { name: "Crew" })).body.data.id
  const deployment = (await call(ann, "POST", `/v1/projects/${project}/deployments`, { ref: "v1" })).body.data.id
  // Port 9 (discard) on loopback: nothing listens, so the first attempt fails at once and the next is an hour off.
  const webhook = (
    await call(ann, "POST", "/v1/webhooks", { url: "http://127.0.0.1:9/hook", events: ["project.updated"] })
  ).body.data.id
  const delivery = (await call(ann, "POST", `/v1/webhooks/${webhook}/test`, {})).body.data.id
  await eventually(async () => {
    const res = await call(ann, "GET", `/v1/webhooks/${webhook}/deliveries/${delivery}`)
    return res.body.data.attempts.length >= 1
  })
  const event = (await call(ann, "GET", "/v1/events")).body.data[0].id
  const client = (
    await call(ann, "POST", "/v1/oauth-clients", { name: "App", redirect_uris: ["https://app.example/cb"] })
  ).body.data.id
  ids.set("projects", project)
  ids.set("teams", team)
  ids.set("deployments", deployment)
  ids.set("webhooks", webhook)
  ids.set("deliveries", delivery)
  ids.set("events", event)
  ids.set("oauth-clients", client)
}, 60_000)

afterAll(async () => {
  await server?.stop()
}, 20_000)

describe("ETag and If-None-Match on every single-resource GET of the contract, HEAD on every GET", () => {
  test("the contract's GETs all have a record here", () => {
    expect(singleResourceGets.length).toBeGreaterThanOrEqual(8)
    expect(allGets.length).toBeGreaterThan(singleResourceGets.length)
    for (const route of allGets) expect(concrete(route).includes(":") ? `no record for ${route}` : route).toBe(route)
  })

  test.each(singleResourceGets)("GET %s: an ETag; the same again while nothing changed; 304 with it", async (route) => {
    const path = concrete(route)
    const first = await call(ann, "GET", path)
    expect(first.status).toBe(200)
    expect(typeof first.body.data).toBe("object")
    const etag = first.headers.get("etag")
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/)
    // Another request (another request id in `meta`): the same tag.
    expect(await etagOf(ann, path)).toBe(etag ?? "")
    const unchanged = await call(ann, "GET", path, undefined, { "if-none-match": etag ?? "" })
    expect(unchanged.status).toBe(304)
    expect(unchanged.text).toBe("")
    expect(unchanged.headers.get("etag")).toBe(etag)
    expect(unchanged.headers.get("x-request-id")).toMatch(/^req_/)
    // Weak comparison for If-None-Match, a list, and `*`.
    const weak = await call(ann, "GET", path, undefined, { "if-none-match": `"other", W/${etag}` })
    expect(weak.status).toBe(304)
    const star = await call(ann, "GET", path, undefined, { "if-none-match": "*" })
    expect(star.status).toBe(304)
    const other = await call(ann, "GET", path, undefined, { "if-none-match": '"not-it"' })
    expect(other.status).toBe(200)
    expect(other.body.data).toEqual(first.body.data)
  })

  // Every GET of the contract, lists included, so a new endpoint is covered without a line here.
  test.each(allGets)("HEAD %s: GET's status and headers, no body", async (route) => {
    const path = concrete(route)
    const get = await call(ann, "GET", path)
    const head = await call(ann, "HEAD", path)
    expect(get.status).toBe(200)
    expect(head.status).toBe(get.status)
    expect(head.text).toBe("")
    expect(stableHeaders(head)).toEqual(stableHeaders(get))
    expect(head.headers.get("content-length")).toBe(String(new TextEncoder().encode(get.text).length))
    const etag = get.headers.get("etag")
    if (etag === null) return
    const notModified = await call(ann, "HEAD", path, undefined, { "if-none-match": etag })
    expect(notModified.status).toBe(304)
  })

  test("HEAD on a list and on an unknown record answers as GET does, without a body", async () => {
    const list = await call(ann, "HEAD", "/v1/projects")
    expect(list.status).toBe(200)
    expect(list.text).toBe("")
    expect(list.headers.get("link")).toContain('rel="first"')
    const missing = await call(ann, "HEAD", "/v1/projects/proj_01m8ja5030e4j8hwyqwzhv8emc")
    expect(missing.status).toBe(404)
    expect(missing.text).toBe("")
    const other = await call(bob, "HEAD", concrete("/v1/projects/:id"))
    expect(other.status).toBe(404)
  })

  test("405 names HEAD beside GET in Allow", async () => {
    const res = await call(ann, "POST", concrete("/v1/projects/:id"), { name: "x" })
    expect(res.status).toBe(405)
    expect(res.headers.get("allow")).toBe("GET, HEAD, PUT, DELETE")
  })

  test("the ETag changes when the representation does, and not for another user's view of nothing", async () => {
    const id = await newProject(ann, "Before")
    const before = await etagOf(ann, `/v1/projects/${id}`)
    const put = await call(ann, "PUT", `/v1/projects/${id}`, { description: "changed" })
    expect(put.status).toBe(200)
    const after = await etagOf(ann, `/v1/projects/${id}`)
    expect(after).not.toBe(before)
    // The PUT's answer is the new representation, with its tag.
    expect(put.headers.get("etag")).toBe(after)
    const stale = await call(ann, "GET", `/v1/projects/${id}`, undefined, { "if-none-match": before })
    expect(stale.status).toBe(200)
    expect(stale.body.data.description).toBe("changed")
  })

  test("lists carry no ETag", async () => {
    const res = await call(ann, "GET", "/v1/projects")
    expect(res.status).toBe(200)
    expect(res.headers.get("etag")).toBeNull()
  })
})

describe("If-Match on PUT and DELETE", () => {
  const preconditionFailed = (res: { status: number; body: any }) => {
    expect(res.status).toBe(412)
    expect(res.body.error).toMatchObject({ code: "precondition_failed", status: 412 })
    expect(res.body.error.request_id).toMatch(/^req_/)
  }

  /** Each resource with a PUT: its path, a change, and a second change. */
  const writable = async (): Promise<ReadonlyArray<{ path: string; body: unknown; again: unknown }>> => {
    const project = await newProject(ann, "Writable")
    const team = (await call(ann, "POST", "/v1/teams", { name: "Writers" })).body.data.id
    const deployment = (await call(ann, "POST", `/v1/projects/${project}/deployments`, { ref: "v2" })).body.data.id
    const webhook = (
      await call(ann, "POST", "/v1/webhooks", { url: "http://127.0.0.1:9/w", events: ["project.created"] })
    ).body.data.id
    const client = (
      await call(ann, "POST", "/v1/oauth-clients", { name: "W", redirect_uris: ["https://w.example/cb"] })
    ).body.data.id
    return [
      { path: `/v1/projects/${project}`, body: { name: "One" }, again: { name: "Two" } },
      { path: "/v1/users/me", body: { name: "Ann One" }, again: { name: "Ann Two" } },
      { path: `/v1/teams/${team}`, body: { name: "Team One" }, again: { name: "Team Two" } },
      {
        path: `/v1/projects/${project}/deployments/${deployment}`,
        body: { status: "succeeded" },
        again: { status: "failed" }
      },
      {
        path: `/v1/webhooks/${webhook}`,
        body: { events: ["project.updated"] },
        again: { events: ["project.deleted"] }
      },
      { path: `/v1/oauth-clients/${client}`, body: { name: "W1" }, again: { name: "W2" } }
    ]
  }

  test("every PUT with a resource ETag: a stale tag is 412 and nothing changes; the current one applies", async () => {
    const resources = await writable()
    // Every PUT of the contract whose path has a GET is covered here.
    const puts = Object.values(Api.groups).flatMap((group) =>
      Object.values(group.endpoints).flatMap((endpoint) =>
        endpoint.method === "PUT" && singleResourceGets.includes(endpoint.path) ? [endpoint.path] : []
      )
    )
    expect(puts.length).toBe(resources.length)
    for (const { path, body, again } of resources) {
      const before = await call(ann, "GET", path)
      const etag = before.headers.get("etag") ?? ""
      const stale = await call(ann, "PUT", path, body, { "if-match": '"stale"' })
      preconditionFailed(stale)
      const still = await call(ann, "GET", path)
      expect(still.body.data).toEqual(before.body.data)
      expect(still.headers.get("etag")).toBe(etag)
      // A weak tag never matches (If-Match compares strongly).
      preconditionFailed(await call(ann, "PUT", path, body, { "if-match": `W/${etag}` }))
      // In a list with others.
      const applied = await call(ann, "PUT", path, body, { "if-match": `"other", ${etag}` })
      expect(`${path} ${applied.status}`).toBe(`${path} 200`)
      const after = await call(ann, "GET", path)
      expect(after.headers.get("etag")).not.toBe(etag)
      expect(applied.headers.get("etag")).toBe(after.headers.get("etag"))
      // The tag it had is stale now: the second change with it is refused (the deployment would also refuse
      // a second finish, 409, but the precondition is checked first).
      preconditionFailed(await call(ann, "PUT", path, again, { "if-match": etag }))
      expect((await call(ann, "GET", path)).body.data).toEqual(after.body.data)
    }
  }, 60_000)

  test("If-Match: * applies to any existing resource; a resource that does not exist is 404", async () => {
    const id = await newProject(ann, "Star")
    const res = await call(ann, "PUT", `/v1/projects/${id}`, { name: "Starred" }, { "if-match": "*" })
    expect(res.status).toBe(200)
    expect(res.body.data.name).toBe("Starred")
    const missing = await call(
      ann,
      "PUT",
      "/v1/projects/proj_01m8ja5030e4j8hwyqwzhv8emc",
      { name: "x" },
      {
        "if-match": "*"
      }
    )
    expect(missing.status).toBe(404)
    // Another user's project is not found for them, whatever the tag.
    const etag = await etagOf(ann, `/v1/projects/${id}`)
    const others = await call(bob, "PUT", `/v1/projects/${id}`, { name: "Mine" }, { "if-match": etag })
    expect(others.status).toBe(404)
  })

  test("without If-Match the last write wins, as before", async () => {
    const id = await newProject(ann, "Plain")
    const first = await call(ann, "PUT", `/v1/projects/${id}`, { name: "First" })
    const second = await call(ann, "PUT", `/v1/projects/${id}`, { name: "Second" })
    expect([first.status, second.status]).toEqual([200, 200])
    expect((await call(ann, "GET", `/v1/projects/${id}`)).body.data.name).toBe("Second")
  })

  test("a refused PUT emits no event", async () => {
    const id = await newProject(ann, "Quiet")
    const count = async () =>
      (await call(ann, "GET", "/v1/events?type=project.updated&per_page=100")).body.data.filter(
        (event: { data: { id: string } }) => event.data.id === id
      ).length
    expect(await count()).toBe(0)
    preconditionFailed(await call(ann, "PUT", `/v1/projects/${id}`, { name: "Loud" }, { "if-match": '"nope"' }))
    expect(await count()).toBe(0)
    const etag = await etagOf(ann, `/v1/projects/${id}`)
    expect((await call(ann, "PUT", `/v1/projects/${id}`, { name: "Loud" }, { "if-match": etag })).status).toBe(200)
    expect(await count()).toBe(1)
  })

  test("DELETE: a stale tag is 412 and the resource stays; the current tag deletes it", async () => {
    const project = await newProject(ann, "Doomed")
    const team = (await call(ann, "POST", "/v1/teams", { name: "Doomed" })).body.data.id
    const webhook = (
      await call(ann, "POST", "/v1/webhooks", { url: "http://127.0.0.1:9/d", events: ["project.created"] })
    ).body.data.id
    const client = (
      await call(ann, "POST", "/v1/oauth-clients", { name: "D", redirect_uris: ["https://d.example/cb"] })
    ).body.data.id
    for (const path of [
      `/v1/projects/${project}`,
      `/v1/teams/${team}`,
      `/v1/webhooks/${webhook}`,
      `/v1/oauth-clients/${client}`
    ]) {
      const etag = await etagOf(ann, path)
      preconditionFailed(await call(ann, "DELETE", path, undefined, { "if-match": '"stale"' }))
      expect((await call(ann, "GET", path)).status).toBe(200)
      const deleted = await call(ann, "DELETE", path, undefined, { "if-match": etag })
      expect(`${path} ${deleted.status}`).toBe(`${path} 204`)
      expect((await call(ann, "GET", path)).status).toBe(404)
    }
  })

  test("DELETE with If-Match: * deletes; a changed resource is not deleted with its old tag", async () => {
    const id = await newProject(ann, "Moving")
    const etag = await etagOf(ann, `/v1/projects/${id}`)
    expect((await call(ann, "PUT", `/v1/projects/${id}`, { status: "archived" })).status).toBe(200)
    preconditionFailed(await call(ann, "DELETE", `/v1/projects/${id}`, undefined, { "if-match": etag }))
    expect((await call(ann, "GET", `/v1/projects/${id}`)).body.data.status).toBe("archived")
    expect((await call(ann, "DELETE", `/v1/projects/${id}`, undefined, { "if-match": "*" })).status).toBe(204)
  })

  test("where a path has no GET (no ETag), a listed tag can never match: 412; * goes on", async () => {
    const key = await server.fixtures.apiKey(ann.id, { name: "spare" })
    preconditionFailed(await call(ann, "DELETE", `/v1/api-keys/${key.id}`, undefined, { "if-match": '"x"' }))
    const keys = (await call(ann, "GET", "/v1/api-keys?per_page=100")).body.data
    expect(keys.find((k: { id: string }) => k.id === key.id)?.status).toBe("active")
    expect((await call(ann, "DELETE", `/v1/api-keys/${key.id}`, undefined, { "if-match": "*" })).status).toBe(204)
  })

  test("where a path has no GET, what the write answers without If-Match comes first: 401, 404, 403 (RFC 9110)", async () => {
    const tags = { "if-match": '"x"' }
    const key = await server.fixtures.apiKey(ann.id, { name: "kept" })
    const bare = await server.request(`/v1/api-keys/${key.id}`, { method: "DELETE", headers: tags })
    expect({ status: bare.status, code: bare.body.error.code }).toEqual({ status: 401, code: "unauthorized" })
    // Another user's key is none of Bob's business: 404, as without the header.
    expect((await call(bob, "DELETE", `/v1/api-keys/${key.id}`, undefined, tags)).status).toBe(404)
    const team = (await call(ann, "POST", "/v1/teams", { name: "Precedence" })).body.data.id
    // A team Bob is not in: 404; once a plain member, removing its owner: 403.
    expect((await call(bob, "PUT", `/v1/teams/${team}/members/${ann.id}`, { role: "member" }, tags)).status).toBe(404)
    await server.cli("teams", "add-member", "--team", team, "--user", bob.id, "--role", "member")
    expect((await call(bob, "DELETE", `/v1/teams/${team}/members/${ann.id}`, undefined, tags)).status).toBe(403)
    expect((await call(ann, "GET", `/v1/api-keys?per_page=100`)).body.data.map((k: { id: string }) => k.id)).toContain(
      key.id
    )
  })

  test("each write of a path with no GET (or of a list): a listed tag is 412 and nothing changes", async () => {
    // These are all of them: a new one fails here until it compares If-Match too (untaggedIfMatch) and is tried below.
    const endpoints = Object.values(Api.groups).flatMap((group) => Object.values(group.endpoints))
    const gets = new Set(endpoints.filter((e) => e.method === "GET").map((e) => e.path))
    const untagged = endpoints
      .filter((e) => (e.method === "PUT" || e.method === "DELETE") && !gets.has(e.path))
      .map((e) => `${e.method} ${e.path}`)
    expect(untagged.sort()).toEqual(
      [
        "PUT /v1/teams/:team_id/members/:user_id",
        "DELETE /v1/teams/:team_id/members/:user_id",
        "DELETE /v1/teams/:team_id/invitations/:invitation_id",
        "DELETE /v1/api-keys/:id",
        "DELETE /v1/authorizations/:id",
        "DELETE /v1/users/me/sessions/:id"
      ].sort()
    )
    const tags = { "if-match": '"x"' }
    const team = (await call(ann, "POST", "/v1/teams", { name: "Untagged" })).body.data.id
    await server.cli("teams", "add-member", "--team", team, "--user", bob.id, "--role", "member")
    preconditionFailed(await call(ann, "PUT", `/v1/teams/${team}/members/${bob.id}`, { role: "admin" }, tags))
    preconditionFailed(await call(ann, "PUT", `/v1/teams/${team}/members/${bob.id}`, { role: "member" }, tags))
    preconditionFailed(await call(ann, "DELETE", `/v1/teams/${team}/members/${bob.id}`, undefined, tags))
    const members = (await call(ann, "GET", `/v1/teams/${team}/members`)).body.data
    expect(members.find((m: { user_id: string }) => m.user_id === bob.id)?.role).toBe("member")

    const invitation = (
      await call(ann, "POST", `/v1/teams/${team}/invitations`, { email: "untagged@example.com", role: "member" })
    ).body.data.id
    preconditionFailed(await call(ann, "DELETE", `/v1/teams/${team}/invitations/${invitation}`, undefined, tags))
    const invitations = (await call(ann, "GET", `/v1/teams/${team}/invitations`)).body.data
    expect(invitations.find((i: { id: string }) => i.id === invitation)?.status).toBe("pending")

    const password = "correct horse battery"
    const cy = await server.fixtures.account({ email: `cy.${crypto.randomUUID()}@example.com`, name: "Cy", password })
    const signedIn = await server.request("/oauth/login", { method: "POST", body: { email: cy.email, password } })
    const session = signedIn.body.access_token
    const sessionId = (await server.request("/v1/users/me/sessions", { key: session })).body.data[0].id
    const ended = await server.request(`/v1/users/me/sessions/${sessionId}`, {
      method: "DELETE",
      key: session,
      headers: tags
    })
    preconditionFailed(ended)
    expect((await server.request("/v1/users/me", { key: session })).status).toBe(200)
    // Nor has a list: "sign out everywhere else" with a listed tag ends no session.
    const elsewhere = (await server.request("/oauth/login", { method: "POST", body: { email: cy.email, password } }))
      .body.access_token
    const others = await server.request("/v1/users/me/sessions", { method: "DELETE", key: session, headers: tags })
    preconditionFailed(others)
    expect((await server.request("/v1/users/me", { key: elsewhere })).status).toBe(200)

    const oauth = onDatabase(oauthLayers, server.databaseUrl)
    try {
      const redirect = "https://app.example/cb"
      await oauthTokensOf(oauth, await confidentialClient(oauth, "Untagged app", redirect), redirect, ann.id)
    } finally {
      await oauth.dispose()
    }
    const grant = (await call(ann, "GET", "/v1/authorizations")).body.data[0].id
    preconditionFailed(await call(ann, "DELETE", `/v1/authorizations/${grant}`, undefined, tags))
    const grants = (await call(ann, "GET", "/v1/authorizations")).body.data
    expect(grants.map((g: { id: string }) => g.id)).toContain(grant)
  }, 30_000)

  test("a PUT's answer is the record as stored, its ETag the next GET's, when the stored time is ahead of this clock", async () => {
    const id = await newProject(ann, "Skewed")
    // Another replica, its clock a minute ahead, wrote it last.
    const ahead = new Date(Date.now() + 60_000).toISOString()
    await server.fixtures.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`UPDATE projects SET updated_at = ${ahead} WHERE id = ${id}`)
    )
    const put = await call(
      ann,
      "PUT",
      `/v1/projects/${id}`,
      { name: "Skewed again" },
      { "if-match": await etagOf(ann, `/v1/projects/${id}`) }
    )
    expect(put.status).toBe(200)
    const read = await call(ann, "GET", `/v1/projects/${id}`)
    expect({ updated_at: put.body.data.updated_at, etag: put.headers.get("etag") }).toEqual({
      updated_at: read.body.data.updated_at,
      etag: read.headers.get("etag")
    })
  })

  test("GET with If-Match that names another tag is 412", async () => {
    const path = concrete("/v1/projects/:id")
    preconditionFailed(await call(ann, "GET", path, undefined, { "if-match": '"other"' }))
    const etag = await etagOf(ann, path)
    expect((await call(ann, "GET", path, undefined, { "if-match": etag })).status).toBe(200)
  })
})

describe("concurrent PUTs carrying the same If-Match", () => {
  test("exactly one succeeds; the others are 412 and the winner's change is what stays", async () => {
    for (const round of [1, 2, 3]) {
      const id = await newProject(ann, `Race ${round}`)
      const etag = await etagOf(ann, `/v1/projects/${id}`)
      const writers = Array.from({ length: 8 }, (_, i) => i)
      const answers = await Promise.all(
        writers.map((i) => call(ann, "PUT", `/v1/projects/${id}`, { name: `Writer ${i}` }, { "if-match": etag }))
      )
      const statuses = answers.map((res) => res.status)
      expect(statuses.filter((status) => status === 200)).toHaveLength(1)
      expect(statuses.filter((status) => status === 412)).toHaveLength(writers.length - 1)
      const winner = answers.find((res) => res.status === 200)
      const now = await call(ann, "GET", `/v1/projects/${id}`)
      expect(now.body.data.name).toBe(winner?.body.data.name)
    }
  }, 60_000)

  test("concurrent DELETE and PUT with the same tag: exactly one applies", async () => {
    const id = await newProject(ann, "Tug")
    const etag = await etagOf(ann, `/v1/projects/${id}`)
    const [put, del] = await Promise.all([
      call(ann, "PUT", `/v1/projects/${id}`, { name: "Tugged" }, { "if-match": etag }),
      call(ann, "DELETE", `/v1/projects/${id}`, undefined, { "if-match": etag })
    ])
    const outcome = [put?.status, del?.status].sort()
    // The DELETE first: the PUT finds nothing (404); the PUT first: the DELETE's tag is stale (412).
    expect([
      [204, 404],
      [200, 412]
    ]).toContainEqual(outcome)
  })
})
