/**
 * Who did it: the actor on every event (in the signed delivered body and in the events feed) and the audit logs
 * (docs/audit.md): a record for each action, none for a refused request, never a secret, the team log's role rule,
 * and the record committing with its change (a failure injected after the change's statements, before the commit,
 * leaves neither).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Webhook } from "standardwebhooks"
import { startInProcess } from "../support/in-process.ts"
import { formAction, formField } from "../support/oauthPages.ts"
import { confidentialClient, type OAuthHarness, oauthLayers, oauthTokensOf } from "../support/oauthTokens.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import type { Server, TestUser } from "../support/server.ts"
import { onDatabase } from "../support/services.ts"
import { createTrigger, dropTrigger, type InjectedTrigger } from "../support/triggers.ts"

const ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_POLL_INTERVAL: "100ms" }
const ALL = "read,write,team:manage"

let server: Server
let receiver: Receiver
let ann: TestUser
let bob: TestUser
let eve: TestUser
let oauth: OAuthHarness

const call = (user: TestUser, method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  server.request(path, {
    method,
    key: user.key,
    ...(body !== undefined ? { body } : {}),
    ...(headers !== undefined ? { headers } : {})
  })

/**
 * The authorization page a browser opens for Ann's new OAuth client `name` (redirecting to `redirect`; `read`,
 * state `st`), its sign-in form on it.
 */
const authorizationPage = async (name: string, redirect: string, userAgent?: string) => {
  const client = await call(ann, "POST", "/v1/oauth-clients", { name, redirect_uris: [redirect] })
  expect(client.status).toBe(201)
  const authorize = new URL("/oauth/authorize", server.url)
  const query = { client_id: String(client.body.data.id), redirect_uri: redirect, response_type: "code", scope: "read" }
  for (const [key, value] of Object.entries({ ...query, state: "st" })) authorize.searchParams.set(key, value)
  const page = await fetch(authorize, {
    redirect: "manual",
    ...(userAgent === undefined ? {} : { headers: { "user-agent": userAgent } })
  })
  expect(page.status).toBe(200)
  return page
}

interface Rec {
  readonly id: string
  readonly action: string
  readonly actor: { readonly type: string; readonly id?: string; readonly name?: string }
  readonly credential: { readonly type: string; readonly id: string } | null
  readonly target: { readonly type: string; readonly id: string }
  readonly target_name: string | null
  readonly team_id: string | null
  readonly ip: string | null
  readonly user_agent: string | null
  readonly request_id: string | null
  readonly changes: Record<string, [unknown, unknown]> | null
  readonly created_at: string
}

/** Every record of a log (all pages). */
const allOf = async (user: TestUser, path: string): Promise<Array<Rec>> => {
  const out: Array<Rec> = []
  for (let page = 1; ; page++) {
    const res = await call(user, "GET", `${path}${path.includes("?") ? "&" : "?"}per_page=100&page=${page}`)
    expect(res.status).toBe(200)
    out.push(...res.body.data)
    if (res.body.data.length < 100) return out
  }
}
const myLog = (user: TestUser, query = "") => allOf(user, `/v1/users/me/audit-log${query}`)

const rawRecords = () =>
  server.fixtures.run(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<Record<string, unknown>>`SELECT * FROM audit_log`)
  )

beforeAll(async () => {
  receiver = startReceiver()
  server = await startInProcess({ env: ENV })
  oauth = onDatabase(oauthLayers, server.databaseUrl)
  ;[ann, bob, eve] = await Promise.all([
    server.user({ name: "Ann", scopes: ALL }),
    server.user({ name: "Bob", scopes: ALL }),
    server.user({ name: "Eve", scopes: ALL })
  ])
}, 60_000)
afterAll(async () => {
  await oauth?.dispose()
  await server?.stop()
  await receiver?.stop()
}, 20_000)

describe("the actor of every event", () => {
  test("in the delivered body (signed: standardwebhooks verifies it) and in the events feed", async () => {
    const hook = await call(ann, "POST", "/v1/webhooks", { url: receiver.url("/ann"), events: ["project.created"] })
    expect(hook.status).toBe(201)
    const created = await call(ann, "POST", "/v1/projects", { name: "Signed" })
    expect(created.status).toBe(201)
    const [request] = await receiver.waitFor(1, {
      path: "/ann",
      where: (r) => r.body.includes(created.body.data.id),
      timeoutMs: 10_000
    })
    const verified = new Webhook(hook.body.data.secret).verify(request!.body, request!.headers) as Record<
      string,
      unknown
    >
    expect(verified.actor).toEqual({ type: "user", id: ann.id, name: "Ann" })
    expect(Object.keys(JSON.parse(request!.body))).toEqual(["id", "type", "created_at", "actor", "data"])
    expect((verified.data as { id: string }).id).toBe(created.body.data.id)

    const feed = await call(ann, "GET", "/v1/events?type=project.created")
    const item = feed.body.data.find((event: { data: { id: string } }) => event.data.id === created.body.data.id)
    expect(item.actor).toEqual({ type: "user", id: ann.id, name: "Ann" })
    const one = await server.request(`/v1/events/${item.id}`, { key: ann.key })
    expect(one.text).toContain(JSON.stringify({ type: "user", id: ann.id, name: "Ann" }))
  }, 30_000)

  test("the CLI's changes are the operator's", async () => {
    const team = await call(ann, "POST", "/v1/teams", { name: "Operated" })
    await server.cli("teams", "add-member", "--team", team.body.data.id, "--user", bob.id, "--role", "member")
    const feed = await call(bob, "GET", "/v1/events?type=member.joined")
    const joined = feed.body.data.find(
      (event: { data: { team_id: string } }) => event.data.team_id === team.body.data.id
    )
    expect(joined.actor).toEqual({ type: "operator" })
    const records = (await allOf(ann, `/v1/teams/${team.body.data.id}/audit-log?action=member.joined`)).filter(
      (r) => r.target.id === bob.id
    )
    expect(records).toHaveLength(1)
    expect(records[0]!.actor).toEqual({ type: "operator" })
    expect(records[0]!.credential).toBeNull()
  }, 30_000)
})

describe("audit records", () => {
  test("each action, with actor, credential, target, address, user agent, request id and changes", async () => {
    const ua = "audit-test/1.0"
    const requestId = crypto.randomUUID()
    const project = await call(
      ann,
      "POST",
      "/v1/projects",
      { name: "Audited" },
      {
        "user-agent": ua,
        "x-request-id": requestId
      }
    )
    const projectId = project.body.data.id
    await call(ann, "PUT", `/v1/projects/${projectId}`, { name: "Audited 2" })
    await call(ann, "PUT", `/v1/projects/${projectId}`, { status: "archived" })
    await call(ann, "PUT", `/v1/projects/${projectId}`, { status: "active" })
    const deployment = await call(ann, "POST", `/v1/projects/${projectId}/deployments`, {
      environment: "production",
      ref: "main"
    })
    expect(deployment.status).toBe(201)
    await call(ann, "PUT", `/v1/projects/${projectId}/deployments/${deployment.body.data.id}`, { status: "succeeded" })
    await call(ann, "DELETE", `/v1/projects/${projectId}`)

    const key = await call(ann, "POST", "/v1/api-keys", { name: "ci", scopes: ["read"] })
    await call(ann, "DELETE", `/v1/api-keys/${key.body.data.id}`)
    const hook = await call(ann, "POST", "/v1/webhooks", { url: receiver.url("/audit"), events: ["project.deleted"] })
    const hookId = hook.body.data.id
    await call(ann, "PUT", `/v1/webhooks/${hookId}`, { events: ["project.created"], secret: "whsec_given-secret-1234" })
    await call(ann, "POST", `/v1/webhooks/${hookId}/rotate-secret`, {})
    await call(ann, "POST", `/v1/webhooks/${hookId}/recover`, { since: new Date(Date.now() - 3_600_000).toISOString() })
    await call(ann, "DELETE", `/v1/webhooks/${hookId}`)
    const client = await call(ann, "POST", "/v1/oauth-clients", {
      name: "App",
      redirect_uris: ["https://app.example.com/cb"]
    })
    const clientId = client.body.data.id
    await call(ann, "PUT", `/v1/oauth-clients/${clientId}`, { name: "App 2" })
    await call(ann, "POST", `/v1/oauth-clients/${clientId}/rotate-secret`, {})
    await call(ann, "DELETE", `/v1/oauth-clients/${clientId}`)
    await call(ann, "PUT", "/v1/users/me", { name: "Ann B" })
    await call(ann, "PUT", "/v1/users/me", { name: "Ann" })

    const log = await myLog(ann)
    const actions = new Set(log.map((r) => r.action))
    for (const action of [
      "project.created",
      "project.updated",
      "project.archived",
      "project.unarchived",
      "deployment.started",
      "deployment.completed",
      "project.deleted",
      "api_key.created",
      "api_key.revoked",
      "webhook.created",
      "webhook.updated",
      "webhook.secret_rotated",
      "webhook.recovered",
      "webhook.deleted",
      "oauth_client.created",
      "oauth_client.updated",
      "oauth_client.secret_rotated",
      "oauth_client.deleted",
      "user.updated"
    ]) {
      expect(actions).toContain(action)
    }
    const created = log.find((r) => r.action === "project.created" && r.target.id === projectId)!
    expect(created).toMatchObject({
      actor: { type: "user", id: ann.id, name: "Ann" },
      credential: { type: "api_key", id: ann.keyId },
      target: { type: "project", id: projectId },
      target_name: "Audited",
      team_id: null,
      user_agent: ua,
      request_id: `req_${requestId}`,
      changes: null
    })
    expect(created.ip).toMatch(/127\.0\.0\.1/)
    const renamed = log.find((r) => r.action === "project.updated" && r.target.id === projectId)!
    expect(renamed.changes).toEqual({ name: ["Audited", "Audited 2"] })
    const archived = log.find((r) => r.action === "project.archived" && r.target.id === projectId)!
    expect(archived.changes).toEqual({ status: ["active", "archived"] })
    const hookUpdate = log.find((r) => r.action === "webhook.updated" && r.target.id === hookId)!
    expect(hookUpdate.changes).toEqual({
      events: [["project.deleted"], ["project.created"]],
      secret: ["[redacted]", "[redacted]"]
    })
    // Newest first.
    expect(log.map((r) => r.created_at)).toEqual([...log.map((r) => r.created_at)].sort().reverse())
    // Filters.
    const onlyKeys = await myLog(ann, "?action=api_key.created,api_key.revoked")
    expect(new Set(onlyKeys.map((r) => r.action))).toEqual(new Set(["api_key.created", "api_key.revoked"]))
    expect((await call(ann, "GET", "/v1/users/me/audit-log?action=nope")).status).toBe(400)
    const after = await myLog(ann, `?created_after=${encodeURIComponent(created.created_at)}`)
    expect(after.every((r) => r.created_at > created.created_at)).toBe(true)
    // Nobody else sees them.
    expect((await myLog(eve)).some((r) => r.target.id === projectId)).toBe(false)
  }, 60_000)

  test("team actions in the team's log; its owners and admins read it, a member is 403, others 404", async () => {
    const team = await call(ann, "POST", "/v1/teams", { name: "Crew" })
    const teamId = team.body.data.id
    await call(ann, "PUT", `/v1/teams/${teamId}`, { name: "Crew 2" })
    const invited = await call(ann, "POST", `/v1/teams/${teamId}/invitations`, { email: bob.email, role: "member" })
    expect((await call(bob, "POST", `/v1/invitations/${invited.body.data.id}/accept`)).status).toBe(200)
    const second = await call(ann, "POST", `/v1/teams/${teamId}/invitations`, { email: eve.email, role: "member" })
    expect((await call(eve, "POST", `/v1/invitations/${second.body.data.id}/decline`)).status).toBe(200)
    const third = await call(ann, "POST", `/v1/teams/${teamId}/invitations`, {
      email: "nobody@example.com",
      role: "member"
    })
    await call(ann, "DELETE", `/v1/teams/${teamId}/invitations/${third.body.data.id}`)
    const teamProject = await call(bob, "POST", "/v1/projects", { name: "Shared", team_id: teamId, visibility: "team" })
    expect(teamProject.status).toBe(201)

    // A member: 403, and the refusal records nothing.
    const refused = await call(bob, "GET", `/v1/teams/${teamId}/audit-log`)
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe("forbidden")
    expect((await call(eve, "GET", `/v1/teams/${teamId}/audit-log`)).status).toBe(404)
    const readOnly = await server.fixtures.apiKey(ann.id, { scopes: "projects:read" })
    expect((await server.request(`/v1/teams/${teamId}/audit-log`, { key: readOnly.key })).status).toBe(403)

    await call(ann, "PUT", `/v1/teams/${teamId}/members/${bob.id}`, { role: "admin" })
    const asAdmin = await call(bob, "GET", `/v1/teams/${teamId}/audit-log`)
    expect(asAdmin.status).toBe(200)
    expect(asAdmin.headers.get("link")).toContain('rel="first"')
    await call(bob, "DELETE", `/v1/projects/${teamProject.body.data.id}`)
    const teamLog = await allOf(ann, `/v1/teams/${teamId}/audit-log`)
    expect(teamLog.every((r) => r.team_id === teamId)).toBe(true)
    await call(ann, "DELETE", `/v1/teams/${teamId}/members/${bob.id}`)
    await call(ann, "DELETE", `/v1/teams/${teamId}`)

    // The team is gone, its log with it from the API; the owner's own log keeps what she did.
    const mine = (await allOf(ann, "/v1/users/me/audit-log")).filter((r) => r.team_id === teamId)
    const teamRecords = [...teamLog, ...mine]
    const actions = new Set(teamRecords.map((r) => r.action))
    for (const action of [
      "team.created",
      "team.renamed",
      "member.invited",
      "member.joined",
      "invitation.declined",
      "invitation.revoked",
      "member.role_changed",
      "member.removed",
      "team.deleted"
    ]) {
      expect(actions).toContain(action)
    }
    const role = teamRecords.find((r) => r.action === "member.role_changed")!
    expect(role.changes).toEqual({ role: ["member", "admin"] })
    const renamed = teamRecords.find((r) => r.action === "team.renamed")!
    expect(renamed.changes).toEqual({ name: ["Crew", "Crew 2"] })
    // Bob's own log has what he did in the team (his project's records: he is their actor).
    const bobs = await myLog(bob, `?actor_id=${bob.id}`)
    expect(bobs.filter((r) => r.team_id === teamId).map((r) => r.action)).toEqual(
      expect.arrayContaining(["project.created", "project.deleted", "member.joined"])
    )
  }, 60_000)

  test("a private project's records are its owner's alone; a change into or out of team visibility is the team's", async () => {
    const teamId = (await call(ann, "POST", "/v1/teams", { name: "Private matters" })).body.data.id
    const invited = await call(ann, "POST", `/v1/teams/${teamId}/invitations`, { email: eve.email, role: "member" })
    expect((await call(eve, "POST", `/v1/invitations/${invited.body.data.id}/accept`)).status).toBe(200)
    const deploy = async (ref: string) => {
      const started = await call(eve, "POST", `/v1/projects/${id}/deployments`, { ref })
      expect(started.status).toBe(201)
      const path = `/v1/projects/${id}/deployments/${started.body.data.id}`
      expect((await call(eve, "PUT", path, { status: "succeeded" })).status).toBe(200)
      return started.body.data.id as string
    }

    // Private, though it names the team: created, renamed, deployed.
    const made = await call(eve, "POST", "/v1/projects", { name: "Secret plan", team_id: teamId })
    expect(made.body.data.visibility).toBe("private")
    const id: string = made.body.data.id
    expect((await call(eve, "PUT", `/v1/projects/${id}`, { name: "Acquire Globex" })).status).toBe(200)
    const hiddenDeployment = await deploy("secret-branch")
    // Shared with the team, deployed there, and taken back.
    expect((await call(eve, "PUT", `/v1/projects/${id}`, { visibility: "team" })).status).toBe(200)
    const sharedDeployment = await deploy("main")
    expect((await call(ann, "PUT", `/v1/projects/${id}`, { visibility: "private" })).status).toBe(200)
    // Private again: renamed, deployed, deleted.
    expect((await call(eve, "PUT", `/v1/projects/${id}`, { name: "Acquire Initech" })).status).toBe(200)
    const lateDeployment = await deploy("later")
    expect((await call(eve, "DELETE", `/v1/projects/${id}`)).status).toBe(204)

    const about = (records: ReadonlyArray<Rec>) =>
      records
        .filter((r) => [id, hiddenDeployment, sharedDeployment, lateDeployment].includes(r.target.id))
        .map((r) => [r.action, r.target.id, r.changes])
    expect(about(await allOf(ann, `/v1/teams/${teamId}/audit-log`))).toEqual([
      ["project.updated", id, { visibility: ["team", "private"] }],
      ["deployment.completed", sharedDeployment, { status: ["running", "succeeded"] }],
      ["deployment.started", sharedDeployment, null],
      ["project.updated", id, { visibility: ["private", "team"] }]
    ])
    // Eve's own log holds every one of them, the team's ones marked with the team.
    const eves = (await myLog(eve)).filter((r) =>
      [id, hiddenDeployment, sharedDeployment, lateDeployment].includes(r.target.id)
    )
    expect(eves.map((r) => [r.action, r.team_id])).toEqual([
      ["project.deleted", null],
      ["deployment.completed", null],
      ["deployment.started", null],
      ["project.updated", null],
      ["project.updated", teamId],
      ["deployment.completed", teamId],
      ["deployment.started", teamId],
      ["project.updated", teamId],
      ["deployment.completed", null],
      ["deployment.started", null],
      ["project.updated", null],
      ["project.created", null]
    ])
  }, 30_000)

  test("a user agent is kept to its first 512 characters, in the record and in the session", async () => {
    const long = `ua-${"x".repeat(1000)}`
    const made = await call(eve, "POST", "/v1/projects", { name: "Long agent" }, { "user-agent": long })
    expect(made.status).toBe(201)
    const [record] = (await myLog(eve, "?action=project.created")).filter((r) => r.target.id === made.body.data.id)
    expect(record!.user_agent).toBe(long.slice(0, 512))
    const account = await server.fixtures.account({ name: "Lou", password: "correct-horse-battery" })
    const login = await server.request("/oauth/login", {
      method: "POST",
      body: { email: account.email, password: "correct-horse-battery" },
      headers: { "user-agent": long }
    })
    expect(login.status).toBe(200)
    const sessions = await server.request("/v1/users/me/sessions", { key: login.body.access_token })
    expect(sessions.body.data.map((row: { user_agent: string }) => row.user_agent)).toEqual([long.slice(0, 512)])
  }, 30_000)

  test("a refused or failed request records nothing", async () => {
    const before = (await rawRecords()).length
    expect((await call(eve, "POST", "/v1/projects", { name: "" })).status).toBe(400)
    expect((await call(eve, "DELETE", "/v1/projects/proj_01jd3xkq8w0000000000000000")).status).toBe(404)
    const other = await call(ann, "POST", "/v1/projects", { name: "Not Eve's" })
    const afterAnn = (await rawRecords()).length
    expect(afterAnn).toBe(before + 1)
    expect((await call(eve, "PUT", `/v1/projects/${other.body.data.id}`, { name: "x" })).status).toBe(404)
    expect((await call(eve, "POST", "/v1/webhooks", { url: "ftp://x", events: ["project.created"] })).status).toBe(400)
    const readOnly = await server.fixtures.apiKey(eve.id, { scopes: "read" })
    expect(
      (await server.request("/v1/projects", { method: "POST", key: readOnly.key, body: { name: "n" } })).status
    ).toBe(403)
    expect((await rawRecords()).length).toBe(afterAnn + 1) // the fixture's key, made by the system
  }, 30_000)

  test("sign-ins: session.created, and session.failed for the account a wrong password names", async () => {
    const account = await server.fixtures.account({ name: "Sam", password: "correct-horse-battery" })
    const ok = await server.request("/oauth/login", {
      method: "POST",
      body: { email: account.email, password: "correct-horse-battery" },
      headers: { "user-agent": "signin-test" }
    })
    expect(ok.status).toBe(200)
    const bad = await server.request("/oauth/login", {
      method: "POST",
      body: { email: account.email, password: "wrong-password-here" }
    })
    expect(bad.status).toBe(401)
    // Besides the account's own creation (the fixture's `Users.create`).
    const records = (await rawRecords()).filter((r) => r.user_id === account.id && r.action !== "user.created")
    expect(records.map((r) => r.action).sort()).toEqual(["session.created", "session.failed"])
    const created = records.find((r) => r.action === "session.created")!
    expect(created).toMatchObject({ actor_type: "user", actor_id: account.id, actor_name: "Sam", user_id: account.id })
    expect(created.user_agent).toBe("signin-test")
    // session.created names the session it started (as its session.revoked will); session.failed the account.
    const live = await server.request("/v1/users/me/sessions", { key: ok.body.access_token })
    expect(live.body.data).toHaveLength(1)
    expect(created).toMatchObject({ target_type: "session", target_id: live.body.data[0].id })
    expect(records.find((r) => r.action === "session.failed")).toMatchObject({
      target_type: "user",
      target_id: account.id
    })
    // Readable by the account with its session.
    const session = await server.request("/v1/users/me/audit-log?action=session.created,session.failed", {
      key: ok.body.access_token
    })
    expect(session.status).toBe(200)
    expect(session.body.data.map((r: Rec) => r.action).sort()).toEqual(["session.created", "session.failed"])
    // Its logout's session.revoked names the same session.
    expect((await server.request("/oauth/logout", { method: "POST", key: ok.body.access_token })).status).toBe(204)
    const revoked = (await rawRecords()).filter((r) => r.user_id === account.id && r.action === "session.revoked")
    expect(revoked.map((r) => [r.target_type, r.target_id])).toEqual([["session", created.target_id]])
  }, 30_000)

  test("the authorization page's sign-in form starts no session and records none; a wrong password there is session.failed", async () => {
    const account = await server.fixtures.account({ name: "Fay", password: "correct-horse-battery" })
    const page = await authorizationPage("Form app", "https://form.example.com/cb")
    const html = await page.text()
    const submit = (password: string) =>
      fetch(formAction(html, page.url), {
        method: "POST",
        redirect: "manual",
        body: new URLSearchParams({
          pending: formField(html, "pending"),
          csrf_token: formField(html, "csrf_token"),
          email: account.email,
          password
        })
      })
    expect((await submit("wrong-password-here")).status).toBe(401)
    expect((await submit("correct-horse-battery")).status).toBe(303)
    const sessions = await server.fixtures.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT id FROM sessions WHERE user_id = ${account.id}`)
    )
    expect(sessions).toHaveLength(0)
    // Besides the account's own creation (the fixture's `Users.create`).
    const records = (await rawRecords()).filter(
      (r) => (r.user_id === account.id || r.actor_id === account.id) && r.action !== "user.created"
    )
    expect(records.map((r) => [r.action, r.target_type, r.target_id])).toEqual([["session.failed", "user", account.id]])
  }, 30_000)

  test("sessions ended (logout, one, all others) and a suspension and reactivation are recorded", async () => {
    const account = await server.fixtures.account({ name: "Tess", password: "correct-horse-battery" })
    const signIn = async () => {
      const res = await server.request("/oauth/login", {
        method: "POST",
        body: { email: account.email, password: "correct-horse-battery" }
      })
      expect(res.status).toBe(200)
      return String(res.body.access_token)
    }
    const first = await signIn()
    const second = await signIn()
    // Two more live sessions: one ended by its id, one by "all others".
    await signIn()
    await signIn()
    expect((await server.request("/oauth/logout", { method: "POST", key: first })).status).toBe(204)
    const sessions = await server.request("/v1/users/me/sessions", { key: second })
    const thirdSession = sessions.body.data.find((row: { current: boolean }) => !row.current)
    expect(
      (await server.request(`/v1/users/me/sessions/${thirdSession.id}`, { method: "DELETE", key: second })).status
    ).toBe(204)
    expect((await server.request("/v1/users/me/sessions", { method: "DELETE", key: second })).status).toBe(204)
    await server.cli("users", "suspend", "--email", account.email)
    await server.cli("users", "reactivate", "--email", account.email)

    const records = (await rawRecords()).filter((r) => r.user_id === account.id)
    const revoked = records.filter((r) => r.action === "session.revoked")
    // Logout and the one ended by id name their session; "all others" names the user.
    expect(revoked.map((r) => r.target_type).sort()).toEqual(["session", "session", "user"])
    expect(revoked.every((r) => r.actor_type === "user" && r.actor_id === account.id)).toBe(true)
    expect(revoked.find((r) => r.target_type === "user")!.target_name).toBe("every other session")
    const operator = records.filter((r) => r.action === "user.suspended" || r.action === "user.reactivated")
    expect(operator.map((r) => [r.action, r.actor_type, r.target_id])).toEqual(
      expect.arrayContaining([
        ["user.suspended", "operator", account.id],
        ["user.reactivated", "operator", account.id]
      ])
    )
    expect(operator).toHaveLength(2)
  }, 60_000)

  test("OAuth grants (consent, revocation) and a delivery's manual retry are recorded", async () => {
    const account = await server.fixtures.account({ name: "Gail", password: "correct-horse-battery" })

    // The consent, as a browser gives it: the authorize page, its sign-in form, the consent form.
    const page = await authorizationPage("Grants app", "https://grants.example.com/cb", "grant-test")
    const signInHtml = await page.text()
    const pending = formField(signInHtml, "pending")
    const signedIn = await fetch(formAction(signInHtml, page.url), {
      method: "POST",
      redirect: "manual",
      headers: { "user-agent": "grant-test" },
      body: new URLSearchParams({
        pending,
        csrf_token: formField(signInHtml, "csrf_token"),
        email: account.email,
        password: "correct-horse-battery"
      })
    })
    expect(signedIn.status).toBe(303)
    const consentUrl = new URL(signedIn.headers.get("location") ?? "", signedIn.url)
    const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0] ?? ""
    const consent = await fetch(consentUrl, { redirect: "manual", headers: { cookie, "user-agent": "grant-test" } })
    expect(consent.status).toBe(200)
    const consentHtml = await consent.text()
    const approved = await fetch(formAction(consentHtml, consent.url), {
      method: "POST",
      redirect: "manual",
      headers: { cookie, "user-agent": "grant-test" },
      body: new URLSearchParams({ pending, csrf_token: formField(consentHtml, "csrf_token"), decision: "approve" })
    })
    expect(approved.status).toBe(302)
    expect(new URL(approved.headers.get("location") ?? "").searchParams.get("code")).toBeTruthy()

    // The account revokes the grant with its session.
    const login = await server.request("/oauth/login", {
      method: "POST",
      body: { email: account.email, password: "correct-horse-battery" }
    })
    const session = String(login.body.access_token)
    const grants = await server.request("/v1/authorizations", { key: session })
    expect(grants.status).toBe(200)
    const grantId: string = grants.body.data[0].id
    expect((await server.request(`/v1/authorizations/${grantId}`, { method: "DELETE", key: session })).status).toBe(204)

    const log = await server.request("/v1/users/me/audit-log?action=authorization.granted,authorization.revoked", {
      key: session
    })
    expect(log.status).toBe(200)
    const records: Array<Rec> = log.body.data
    expect(records.map((r) => r.action)).toEqual(["authorization.revoked", "authorization.granted"])
    expect(records[1]).toMatchObject({
      actor: { type: "user", id: account.id, name: "Gail" },
      target: { type: "authorization", id: grantId },
      target_name: "Grants app",
      user_agent: "grant-test"
    })
    expect(records[1]!.ip).toMatch(/127\.0\.0\.1/)
    expect(records[0]).toMatchObject({
      actor: { type: "user", id: account.id, name: "Gail" },
      credential: { type: "session" },
      target: { type: "authorization", id: grantId }
    })

    // A delivery's manual retry (the dashboard's Redeliver).
    const hook = await call(ann, "POST", "/v1/webhooks", { url: receiver.url("/retried"), events: ["project.created"] })
    expect(hook.status).toBe(201)
    const tested = await call(ann, "POST", `/v1/webhooks/${hook.body.data.id}/test`, {})
    expect(tested.status).toBe(202)
    const deliveryId: string = tested.body.data.id
    const retried = await call(ann, "POST", `/v1/webhooks/${hook.body.data.id}/deliveries/${deliveryId}/retry`, {})
    expect(retried.status).toBe(202)
    const retries = (await myLog(ann, "?action=delivery.retried")).filter((r) => r.target.id === deliveryId)
    expect(retries).toHaveLength(1)
    expect(retries[0]).toMatchObject({
      actor: { type: "user", id: ann.id, name: "Ann" },
      credential: { type: "api_key", id: ann.keyId },
      target: { type: "delivery", id: deliveryId },
      target_name: receiver.url("/retried")
    })
  }, 60_000)

  test("no secret in any record, log line or event (keys, webhook and OAuth client secrets, passwords, session JWTs)", async () => {
    const secrets: Array<string> = []
    // A password (a sign-in and a failed one), and a session JWT used and ended.
    const password = "secret-password-of-pat"
    const pat = await server.fixtures.account({ name: "Pat", password })
    const signedIn = await server.request("/oauth/login", { method: "POST", body: { email: pat.email, password } })
    expect(signedIn.status).toBe(200)
    const jwt = String(signedIn.body.access_token)
    const wrong = "wrong-password-of-pat"
    expect(
      (await server.request("/oauth/login", { method: "POST", body: { email: pat.email, password: wrong } })).status
    ).toBe(401)
    expect((await server.request("/v1/projects", { method: "POST", key: jwt, body: { name: "Pat's" } })).status).toBe(
      201
    )
    expect((await server.request("/oauth/logout", { method: "POST", key: jwt })).status).toBe(204)
    expect((await server.request("/v1/users/me", { key: jwt })).status).toBe(401)
    secrets.push(password, wrong, jwt)
    const key = await call(eve, "POST", "/v1/api-keys", { name: "secretive", scopes: ["read"] })
    secrets.push(key.body.data.key)
    const hook = await call(eve, "POST", "/v1/webhooks", { url: receiver.url("/eve"), events: ["project.created"] })
    secrets.push(hook.body.data.secret)
    const rotated = await call(eve, "POST", `/v1/webhooks/${hook.body.data.id}/rotate-secret`, {})
    secrets.push(rotated.body.data.secret)
    await call(eve, "PUT", `/v1/webhooks/${hook.body.data.id}`, { secret: "whsec_given-by-eve-0000000" })
    secrets.push("whsec_given-by-eve-0000000")
    const client = await call(eve, "POST", "/v1/oauth-clients", {
      name: "Eve's",
      redirect_uris: ["https://e.example/cb"]
    })
    secrets.push(client.body.data.client_secret)
    const clientRotated = await call(eve, "POST", `/v1/oauth-clients/${client.body.data.id}/rotate-secret`, {})
    secrets.push(clientRotated.body.data.client_secret)
    expect(secrets.every((secret) => typeof secret === "string" && secret.length > 10)).toBe(true)
    const everything = JSON.stringify(await rawRecords())
    for (const secret of secrets) expect(everything).not.toContain(secret)
    expect(everything).not.toContain(eve.key)
    // Nor in the service's log lines (every request of this file's server so far) or in any event.
    const logs = server.logs.join("\n")
    expect(logs).toContain('"request"')
    const events = JSON.stringify(
      await server.fixtures.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT payload FROM events`))
    )
    expect(events).toContain("Pat's")
    for (const secret of [...secrets, eve.key]) {
      expect({ secret, inLogs: logs.includes(secret), inEvents: events.includes(secret) }).toEqual({
        secret,
        inLogs: false,
        inEvents: false
      })
    }
    // The records exist.
    const actions = new Set((await myLog(eve)).map((r) => r.action))
    expect(actions).toContain("oauth_client.secret_rotated")
    expect(actions).toContain("webhook.secret_rotated")
  }, 30_000)
})

describe("a record only for a change that happened", () => {
  const recordsOf = async (targetId: string, action?: string) =>
    (await rawRecords()).filter((r) => r.target_id === targetId && (action === undefined || r.action === action))

  test("a webhook's rotation that finds no row (deleted since it was read) is 404 and records nothing", async () => {
    const hook = await call(ann, "POST", "/v1/webhooks", { url: receiver.url("/rotated"), events: ["project.created"] })
    expect(hook.status).toBe(201)
    const id = String(hook.body.data.id)
    // The rotation's UPDATE skips this webhook's row, as it would find none had it been deleted meanwhile.
    const skip: InjectedTrigger = {
      name: "skip_rotation",
      table: "webhooks",
      event: "UPDATE OF secret",
      when: `OLD.id = '${id}'`,
      effect: "skip"
    }
    await server.fixtures.run(createTrigger(skip))
    const rotated = await call(ann, "POST", `/v1/webhooks/${id}/rotate-secret`, {})
    await server.fixtures.run(dropTrigger(skip))
    expect(rotated.status).toBe(404)
    expect(await recordsOf(id, "webhook.secret_rotated")).toHaveLength(0)
  }, 30_000)

  test("cli api-keys revoke of a key already revoked records nothing", async () => {
    const key = await call(ann, "POST", "/v1/api-keys", { name: "revoked twice", scopes: ["read"] })
    expect(key.status).toBe(201)
    await server.cli("api-keys", "revoke", "--key", key.body.data.id)
    const again = await server.cli<{ revoked_at: string }>("api-keys", "revoke", "--key", key.body.data.id)
    expect(again.revoked_at).toEqual(expect.any(String))
    expect(await recordsOf(key.body.data.id, "api_key.revoked")).toHaveLength(1)
  }, 30_000)

  test("cli users suspend of a suspended user, or reactivate of an active one, records nothing", async () => {
    const account = await server.fixtures.account({ name: "Sue", password: "correct-horse-battery" })
    const active = await server.cli<{ suspended_at: string | null }>("users", "reactivate", "--email", account.email)
    expect(active.suspended_at).toBeNull()
    const first = await server.cli<{ suspended_at: string }>("users", "suspend", "--email", account.email)
    const second = await server.cli<{ suspended_at: string }>("users", "suspend", "--email", account.email)
    expect(second.suspended_at).toBe(first.suspended_at) // the first suspension's time is kept
    // Besides the account's own creation (the fixture's `Users.create`).
    const changes = (await recordsOf(account.id)).filter((r) => r.action !== "user.created")
    expect(changes.map((r) => r.action)).toEqual(["user.suspended"])
  }, 30_000)

  test("DELETE /v1/users/me/sessions with no other session ends nothing and records nothing", async () => {
    const sessions = await server.fixtures.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT id FROM sessions WHERE user_id = ${bob.id}`)
    )
    expect(sessions).toHaveLength(0)
    expect((await call(bob, "DELETE", "/v1/users/me/sessions")).status).toBe(204)
    expect(await recordsOf(bob.id, "session.revoked")).toHaveLength(0)
  }, 30_000)

  test("concurrent DELETE /v1/api-keys/:id of one key: each 204, one revocation record", async () => {
    const doubled: Array<string> = []
    for (let i = 0; i < 10; i++) {
      const key = await call(ann, "POST", "/v1/api-keys", { name: `race-${i}`, scopes: ["read"] })
      expect(key.status).toBe(201)
      const answers = await Promise.all(
        Array.from({ length: 4 }, () => call(ann, "DELETE", `/v1/api-keys/${key.body.data.id}`))
      )
      expect(answers.map((a) => a.status)).toEqual([204, 204, 204, 204])
      if ((await recordsOf(key.body.data.id, "api_key.revoked")).length !== 1) doubled.push(key.body.data.id)
    }
    expect(doubled).toEqual([])
  }, 60_000)
})

describe("the operator's changes to a user's things are in that user's log", () => {
  test("cli oauth-clients rotate-secret and delete of a client a user registered", async () => {
    const client = await call(ann, "POST", "/v1/oauth-clients", {
      name: "Ann's app",
      redirect_uris: ["https://ann.example.com/cb"]
    })
    expect(client.status).toBe(201)
    const id = client.body.data.id
    await server.cli("oauth-clients", "rotate-secret", "--client", id)
    await server.cli("oauth-clients", "delete", "--client", id)
    const mine = (await myLog(ann, "?action=oauth_client.secret_rotated,oauth_client.deleted")).filter(
      (r) => r.target.id === id
    )
    expect(mine.map((r) => [r.action, r.actor.type, r.target_name])).toEqual([
      ["oauth_client.deleted", "operator", "Ann's app"],
      ["oauth_client.secret_rotated", "operator", "Ann's app"]
    ])
  }, 30_000)
})

describe("every change has its record", () => {
  test("cli users create and users delete: user.created and user.deleted, the operator's, outliving the user", async () => {
    const email = `made-${crypto.randomUUID()}@example.com`
    const made = await server.cli<{ id: string }>("users", "create", "--email", email, "--name", "Made")
    // Their own security log shows their account's creation, by the operator.
    const issued = await server.cli<{ id: string; key: string }>(
      "api-keys",
      "create",
      "--user",
      made.id,
      "--name",
      "reader",
      "--scopes",
      "read"
    )
    const reader: TestUser = { id: made.id, email, name: "Made", key: issued.key, keyId: issued.id }
    const mine = await myLog(reader, "?action=user.created")
    expect(mine).toHaveLength(1)
    expect(mine[0]).toMatchObject({
      actor: { type: "operator" },
      credential: null,
      target: { type: "user", id: made.id },
      target_name: "Made",
      team_id: null,
      ip: null,
      request_id: null
    })
    await server.cli("users", "delete", "--user", made.id)
    // No foreign key ties a record to its user: the deletion's record is kept after the user is gone.
    const records = (await rawRecords()).filter((r) => r.target_id === made.id)
    expect(records.map((r) => [r.action, r.actor_type, r.user_id, r.target_name]).sort()).toEqual([
      ["user.created", "operator", made.id, "Made"],
      ["user.deleted", "operator", made.id, "Made"]
    ])
  }, 30_000)

  test("RFC 7009 revocation: oauth_token.revoked in the user's log, by the client; nothing when nothing is revoked", async () => {
    const redirect = "https://revoked.example.com/cb"
    const account = await server.fixtures.account({ name: "Rhea", password: "correct-horse-battery" })
    const client = await confidentialClient(oauth, "Revoking app", redirect)
    const revoke = (token: string) =>
      fetch(new URL("/oauth/revoke", server.url), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": "revoke-test" },
        body: new URLSearchParams({ token, client_id: client.id, client_secret: client.secret })
      })
    const revokedOf = async () => (await rawRecords()).filter((r) => r.action === "oauth_token.revoked")
    const before = (await revokedOf()).length

    // A refresh token takes its family with it: one record.
    const family = await oauthTokensOf(oauth, client, redirect, account.id)
    expect((await revoke(family.refreshToken)).status).toBe(200)
    expect((await server.request("/v1/users/me", { key: family.accessToken })).status).toBe(401)
    // Again, an access token of the family already revoked, or an unknown token: 200, and no record.
    expect((await revoke(family.refreshToken)).status).toBe(200)
    expect((await revoke(family.accessToken)).status).toBe(200)
    expect((await revoke(`pcr_${"x".repeat(40)}`)).status).toBe(200)
    // An access token goes alone: one record.
    const other = await oauthTokensOf(oauth, client, redirect, account.id)
    expect((await revoke(other.accessToken)).status).toBe(200)
    expect((await revokedOf()).length - before).toBe(2)

    const login = await server.request("/oauth/login", {
      method: "POST",
      body: { email: account.email, password: "correct-horse-battery" }
    })
    const log = await server.request("/v1/users/me/audit-log?action=oauth_token.revoked", {
      key: String(login.body.access_token)
    })
    expect(log.status).toBe(200)
    const records: Array<Rec> = log.body.data
    expect(records).toHaveLength(2)
    for (const record of records) {
      expect(record).toMatchObject({
        actor: { type: "user", id: account.id, name: "Rhea" },
        credential: { type: "oauth", id: client.id },
        target: { type: "oauth_token" },
        target_name: "Revoking app",
        team_id: null,
        user_agent: "revoke-test"
      })
      expect(record.request_id).toBeTruthy()
    }
  }, 30_000)

  test("a refresh token used twice: its grant's tokens revoked, oauth_token.revoked by the system", async () => {
    const redirect = "https://reused.example.com/cb"
    const account = await server.fixtures.account({ name: "Remy", password: "correct-horse-battery" })
    const client = await confidentialClient(oauth, "Reusing app", redirect)
    const family = await oauthTokensOf(oauth, client, redirect, account.id)
    const refresh = (token: string) =>
      fetch(new URL("/oauth/token", server.url), {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "refresh_token",
          refresh_token: token,
          client_id: client.id,
          client_secret: client.secret
        })
      })
    const rotated = await refresh(family.refreshToken)
    expect(rotated.status).toBe(200)
    const next = (await rotated.json()) as { access_token: string }
    // The old one again: a replay, so every token of the grant goes, the one just issued too.
    expect((await refresh(family.refreshToken)).status).toBe(400)
    expect((await server.request("/v1/users/me", { key: next.access_token })).status).toBe(401)
    const records = (await rawRecords()).filter((r) => r.action === "oauth_token.revoked" && r.user_id === account.id)
    expect(records.map((r) => [r.actor_type, r.target_type, r.target_name])).toEqual([
      ["system", "oauth_token", "Reusing app"]
    ])
  }, 30_000)

  test("an OAuth application deleted: each user who authorized it finds authorization.revoked in their log", async () => {
    const redirect = "https://deleted-app.example.com/cb"
    const authorizedBy = async (clientName: string) => {
      const made = await call(ann, "POST", "/v1/oauth-clients", { name: clientName, redirect_uris: [redirect] })
      expect(made.status).toBe(201)
      const client = { id: String(made.body.data.id), secret: String(made.body.data.client_secret) }
      const user = await server.fixtures.account({ name: `${clientName} user`, password: "correct-horse-battery" })
      await oauthTokensOf(oauth, client, redirect, user.id)
      return { client, user }
    }
    const revokedFor = async (userId: string) =>
      (await rawRecords())
        .filter((r) => r.action === "authorization.revoked" && r.user_id === userId)
        .map((r) => [r.actor_type, r.target_type, r.target_name])

    // By its owner, through the API; by the operator, with the CLI.
    const byOwner = await authorizedBy("Owner-deleted app")
    expect((await call(ann, "DELETE", `/v1/oauth-clients/${byOwner.client.id}`)).status).toBe(204)
    expect(await revokedFor(byOwner.user.id)).toEqual([["user", "authorization", "Owner-deleted app"]])
    const byOperator = await authorizedBy("Operator-deleted app")
    await server.cli("oauth-clients", "delete", "--client", byOperator.client.id)
    expect(await revokedFor(byOperator.user.id)).toEqual([["operator", "authorization", "Operator-deleted app"]])
  }, 30_000)

  test("POST /v1/webhooks/:id/test: webhook.tested, with its event and delivery", async () => {
    const hook = await call(ann, "POST", "/v1/webhooks", { url: receiver.url("/tested"), events: ["project.created"] })
    expect(hook.status).toBe(201)
    const tested = await call(ann, "POST", `/v1/webhooks/${hook.body.data.id}/test`, {})
    expect(tested.status).toBe(202)
    const records = (await myLog(ann, "?action=webhook.tested")).filter((r) => r.target.id === hook.body.data.id)
    expect(records).toHaveLength(1)
    expect(records[0]).toMatchObject({
      actor: { type: "user", id: ann.id, name: "Ann" },
      credential: { type: "api_key", id: ann.keyId },
      target: { type: "webhook", id: hook.body.data.id },
      target_name: receiver.url("/tested")
    })
  }, 30_000)
})

describe("a change and its record commit together", () => {
  const refuseAudit: InjectedTrigger = { name: "refuse_audit", table: "audit_log", event: "INSERT", effect: "refuse" }
  const failAuditInserts = (on: boolean) =>
    server.fixtures.run(on ? createTrigger(refuseAudit) : dropTrigger(refuseAudit))

  test("a sign-in whose session's insert fails (500) records no session.created", async () => {
    const account = await server.fixtures.account({ name: "Lia", password: "correct-horse-battery" })
    const refuseSession: InjectedTrigger = {
      name: "refuse_session",
      table: "sessions",
      event: "INSERT",
      effect: "refuse"
    }
    await server.fixtures.run(createTrigger(refuseSession))
    const login = await server.request("/oauth/login", {
      method: "POST",
      body: { email: account.email, password: "correct-horse-battery" }
    })
    await server.fixtures.run(dropTrigger(refuseSession))
    expect(login.status).toBe(500)
    const sessions = await server.fixtures.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT id FROM sessions WHERE user_id = ${account.id}`)
    )
    expect(sessions).toHaveLength(0)
    // Besides the account's own creation (the fixture's `Users.create`).
    const records = (await rawRecords()).filter(
      (r) => (r.user_id === account.id || r.actor_id === account.id) && r.action !== "user.created"
    )
    expect(records.map((r) => r.action)).toEqual([])
  }, 30_000)

  // A key's record is the last statement before the commit; a project's comes before the project's row, which is
  // written last (docs/lists.md, "Counter rows are shared by writers"): a failure either side of the change.
  test("the record's insert failing, after the change or before it, leaves no change and no event", async () => {
    const name = `atomic-${crypto.randomUUID()}`
    await failAuditInserts(true)
    const failed = await call(bob, "POST", "/v1/projects", { name })
    const failedKey = await call(bob, "POST", "/v1/api-keys", { name, scopes: ["read"] })
    await failAuditInserts(false)
    expect(failed.status).toBe(500)
    expect(failedKey.status).toBe(500)
    const projects = await call(bob, "GET", `/v1/projects?search=${name}`)
    expect(projects.body.meta.total).toBe(0)
    const keys = await call(bob, "GET", "/v1/api-keys?per_page=100")
    expect(keys.body.data.some((k: { name: string }) => k.name === name)).toBe(false)
    const events = await server.fixtures.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT id FROM events WHERE payload LIKE ${`%${name}%`}`)
    )
    expect(events).toHaveLength(0)

    // Afterwards every project and key has its record.
    const ok = await call(bob, "POST", "/v1/projects", { name })
    expect(ok.status).toBe(201)
    const counts = await server.fixtures.run(
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ readonly missing: number | string }>`SELECT CAST(count(*) AS INTEGER) AS missing FROM projects p
          WHERE NOT EXISTS (SELECT 1 FROM audit_log a WHERE a.target_id = p.id AND a.action = 'project.created')`
      )
    )
    expect(Number(counts[0]!.missing)).toBe(0)
  }, 30_000)
})
