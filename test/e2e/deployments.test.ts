/**
 * Deployments over HTTP: start (running), read, list with filters and paging, finish once (succeeded or failed),
 * every other transition 409, archived projects, who may deploy (whoever can change the project), scopes, and
 * deleting a project deleting its deployments (checked in the database itself).
 */

import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { callOn, expectError, expectValidation, joinTeam, serverWithUsers } from "../support/api.ts"
import { sqlOn } from "../support/databases.ts"
import { TIMESTAMP } from "../support/helpers.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let ann: TestUser // owns projects
let bob: TestUser // someone else
let tess: TestUser // team member (member role) of Ann's team
let omar: TestUser // never a member

const DEPLOYMENT_ID = /^dpl_[0-7][0-9a-hjkmnp-tv-z]{25}$/
const UNKNOWN_DEPLOYMENT = "dpl_01jd3xkq8w0000000000000000"
const UNKNOWN_PROJECT = "proj_01jd3xkq8w0000000000000000"

let teamId: string

beforeAll(async () => {
  ;({
    server,
    users: [ann, bob, tess, omar]
  } = await serverWithUsers(["Ann", "Bob", "Tess", "Omar"]))
  teamId = (await call(ann, "POST", "/v1/teams", { name: "Ann's team" })).body.data.id
  await joinTeam(server, teamId, tess, "member", ann)
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

const call = callOn(() => server)

const project = async (owner: TestUser, extra: Record<string, unknown> = {}) => {
  const res = await call(owner, "POST", "/v1/projects", { name: "App", ...extra })
  expect(res.status).toBe(201)
  return res.body.data as { id: string; name: string }
}

const deploy = (user: TestUser, projectId: string, body: unknown = { ref: "main" }) =>
  call(user, "POST", `/v1/projects/${projectId}/deployments`, body)

const finish = (user: TestUser, projectId: string, id: string, body: unknown) =>
  call(user, "PUT", `/v1/projects/${projectId}/deployments/${id}`, body)

describe("POST /v1/projects/:id/deployments", () => {
  test("201: a running deployment with defaults (production, empty description)", async () => {
    const p = await project(ann)
    const res = await deploy(ann, p.id, { ref: "  v1.2.3 " })
    expect(res.status).toBe(201)
    const d = res.body.data
    expect(Object.keys(d).sort()).toEqual([
      "created_at",
      "created_by",
      "description",
      "environment",
      "finished_at",
      "id",
      "project_id",
      "ref",
      "status",
      "updated_at"
    ])
    expect(d.id).toMatch(DEPLOYMENT_ID)
    expect(d).toMatchObject({
      project_id: p.id,
      environment: "production",
      ref: "v1.2.3",
      description: "",
      status: "running",
      created_by: ann.id,
      finished_at: null
    })
    expect(d.created_at).toMatch(TIMESTAMP)
    expect(d.updated_at).toBe(d.created_at)
    expect(res.body.meta.request_id).toMatch(/^req_/)
    const read = await call(ann, "GET", `/v1/projects/${p.id}/deployments/${d.id}`)
    expect(read.status).toBe(200)
    expect(read.body.data).toEqual(d)

    const full = await deploy(ann, p.id, { ref: "abc123", environment: "review-42.eu_1", description: "PR #42" })
    expect(full.body.data).toMatchObject({ environment: "review-42.eu_1", ref: "abc123", description: "PR #42" })
  })

  test("bad fields are validation_failed", async () => {
    const p = await project(ann)
    expectValidation(await deploy(ann, p.id, {}), "ref")
    expectValidation(await deploy(ann, p.id, { ref: "   " }), "ref")
    expectValidation(await deploy(ann, p.id, { ref: "x".repeat(201) }), "ref")
    expectValidation(await deploy(ann, p.id, { ref: "main", environment: "Production" }), "environment")
    expectValidation(await deploy(ann, p.id, { ref: "main", environment: "" }), "environment")
    expectValidation(await deploy(ann, p.id, { ref: "main", environment: "a".repeat(65) }), "environment")
    expectValidation(await deploy(ann, p.id, { ref: "main", environment: "pro duction" }), "environment")
    expectValidation(await deploy(ann, p.id, { ref: "main", description: "d".repeat(2001) }), "description")
    expectValidation(await deploy(ann, p.id, { ref: "main", status: "succeeded" }), "status")
    expectValidation(await deploy(ann, "nope"), "id")
    expect(
      (await deploy(ann, p.id, { ref: "x".repeat(200), environment: "a".repeat(64), description: "d".repeat(2000) }))
        .status
    ).toBe(201)
  })

  test("an archived project cannot be deployed (409); unarchived it can", async () => {
    const p = await project(ann)
    await call(ann, "PUT", `/v1/projects/${p.id}`, { status: "archived" })
    expectError(await deploy(ann, p.id), 409, "conflict", `Project ${p.name} is archived`)
    const list = await call(ann, "GET", `/v1/projects/${p.id}/deployments`)
    expect(list.body.meta.total).toBe(0)
    await call(ann, "PUT", `/v1/projects/${p.id}`, { status: "active" })
    expect((await deploy(ann, p.id)).status).toBe(201)
  })
})

describe("who may deploy", () => {
  test("someone else's project is 404 for every deployment endpoint", async () => {
    const p = await project(ann)
    const d = (await deploy(ann, p.id)).body.data
    for (const user of [bob, tess]) {
      expectError(await deploy(user, p.id), 404, "not_found")
      expectError(await call(user, "GET", `/v1/projects/${p.id}/deployments`), 404, "not_found")
      expectError(await call(user, "GET", `/v1/projects/${p.id}/deployments/${d.id}`), 404, "not_found")
      expectError(await finish(user, p.id, d.id, { status: "failed" }), 404, "not_found")
    }
    expectError(await deploy(ann, UNKNOWN_PROJECT), 404, "not_found")
    expect((await call(ann, "GET", `/v1/projects/${p.id}/deployments/${d.id}`)).body.data.status).toBe("running")
  })

  test("any member of the team deploys a team project; non-members get 404", async () => {
    const p = await project(ann, { visibility: "team", team_id: teamId })
    const byTess = await deploy(tess, p.id)
    expect(byTess.status).toBe(201)
    expect(byTess.body.data.created_by).toBe(tess.id)
    const done = await finish(ann, p.id, byTess.body.data.id, { status: "succeeded" })
    expect(done.status).toBe(200)
    expectError(await deploy(omar, p.id), 404, "not_found")
    // A private project that names the team is still only its owner's.
    const privateOne = await project(ann, { team_id: teamId })
    expectError(await deploy(tess, privateOne.id), 404, "not_found")
  })

  test("scopes: read or projects:read to read; write or projects:write to deploy; team:manage alone is not enough", async () => {
    const [reader, pread, pwrite, manager] = await Promise.all([
      server.user({ scopes: "read" }),
      server.user({ scopes: "projects:read" }),
      server.user({ scopes: "projects:write" }),
      server.user({ scopes: "team:manage" })
    ])
    const p = await project(pwrite)
    const started = await deploy(pwrite, p.id)
    expect(started.status).toBe(201)
    expect((await finish(pwrite, p.id, started.body.data.id, { status: "failed" })).status).toBe(200)
    expectError(await call(pwrite, "GET", `/v1/projects/${p.id}/deployments`), 403, "forbidden", "read")
    for (const user of [reader, pread]) {
      expectError(await deploy(user, p.id), 403, "forbidden", "write")
      expectError(await finish(user, p.id, started.body.data.id, { status: "failed" }), 403, "forbidden")
      // The scope passes; the project is someone else's, so 404.
      expectError(await call(user, "GET", `/v1/projects/${p.id}/deployments`), 404, "not_found")
    }
    expectError(await call(manager, "GET", `/v1/projects/${p.id}/deployments`), 403, "forbidden")
    expectError(await deploy(manager, p.id), 403, "forbidden")
  }, 30_000)
})

describe("PUT /v1/projects/:id/deployments/:deployment_id", () => {
  test("running → succeeded once: finished_at set, description replaced; any further change is 409", async () => {
    const p = await project(ann)
    const d = (await deploy(ann, p.id, { ref: "main", description: "starting" })).body.data
    await Bun.sleep(2)
    const res = await finish(ann, p.id, d.id, { status: "succeeded", description: "all green" })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({
      id: d.id,
      status: "succeeded",
      description: "all green",
      created_at: d.created_at
    })
    expect(res.body.data.finished_at).toMatch(TIMESTAMP)
    expect(res.body.data.updated_at).toBe(res.body.data.finished_at)
    expect(res.body.data.finished_at > d.created_at).toBe(true)
    for (const status of ["succeeded", "failed", "running"]) {
      // Named as a person knows it, not by its id.
      expectError(
        await finish(ann, p.id, d.id, { status }),
        409,
        "conflict",
        `The deployment of main to ${d.environment} in ${p.name} has already finished (succeeded)`
      )
    }
    expect((await call(ann, "GET", `/v1/projects/${p.id}/deployments/${d.id}`)).body.data).toEqual(res.body.data)
  })

  test("running → failed keeps the description when none is given; running → running is 409", async () => {
    const p = await project(ann)
    const d = (await deploy(ann, p.id, { ref: "main", description: "keep me" })).body.data
    expectError(await finish(ann, p.id, d.id, { status: "running" }), 409, "conflict")
    const res = await finish(ann, p.id, d.id, { status: "failed" })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ status: "failed", description: "keep me" })
    expectError(await finish(ann, p.id, d.id, { status: "succeeded" }), 409, "conflict")
  })

  test("a running deployment of a project archived since may still finish", async () => {
    const p = await project(ann)
    const d = (await deploy(ann, p.id)).body.data
    await call(ann, "PUT", `/v1/projects/${p.id}`, { status: "archived" })
    expect((await finish(ann, p.id, d.id, { status: "succeeded" })).status).toBe(200)
  })

  test("bad bodies are validation_failed; an unknown deployment or one of another project is 404", async () => {
    const [p, q] = [await project(ann), await project(ann)]
    const d = (await deploy(ann, p.id)).body.data
    expectValidation(await finish(ann, p.id, d.id, {}), "status")
    expectValidation(await finish(ann, p.id, d.id, { status: "done" }), "status")
    expectValidation(await finish(ann, p.id, d.id, { status: "failed", ref: "other" }), "ref")
    expectValidation(await finish(ann, p.id, d.id, { status: "failed", description: "d".repeat(2001) }), "description")
    expectValidation(await finish(ann, p.id, "nope", { status: "failed" }), "deployment_id")
    expectError(await finish(ann, p.id, UNKNOWN_DEPLOYMENT, { status: "failed" }), 404, "not_found")
    expectError(await finish(ann, q.id, d.id, { status: "failed" }), 404, "not_found")
    expectError(await call(ann, "GET", `/v1/projects/${q.id}/deployments/${d.id}`), 404, "not_found")
    expect((await call(ann, "GET", `/v1/projects/${p.id}/deployments/${d.id}`)).body.data.status).toBe("running")
  })
})

describe("GET /v1/projects/:id/deployments", () => {
  test("the project's deployments only, filtered by status and environment, paged with Link headers", async () => {
    const [p, other] = [await project(ann), await project(ann)]
    await deploy(ann, other.id)
    const ids: Array<string> = []
    for (const [environment, ref] of [
      ["production", "alpha"],
      ["staging", "bravo"],
      ["production", "charlie"],
      ["staging", "delta"]
    ]) {
      ids.push((await deploy(ann, p.id, { environment, ref })).body.data.id)
    }
    await finish(ann, p.id, ids[0]!, { status: "succeeded" })
    await finish(ann, p.id, ids[1]!, { status: "failed" })

    const all = await call(ann, "GET", `/v1/projects/${p.id}/deployments`)
    expect(all.status).toBe(200)
    expect(all.body.meta).toMatchObject({ total: 4, page: 1, per_page: 20 })
    expect(all.body.data.map((d: { id: string }) => d.id)).toEqual([...ids].reverse())
    const ids_ = async (query: string) =>
      (await call(ann, "GET", `/v1/projects/${p.id}/deployments${query}`)).body.data.map((d: { id: string }) => d.id)
    expect(await ids_("?status=running&order=asc")).toEqual([ids[2], ids[3]])
    expect(await ids_("?status=succeeded")).toEqual([ids[0]])
    expect(await ids_("?status=failed")).toEqual([ids[1]])
    expect(await ids_("?environment=staging&order=asc")).toEqual([ids[1], ids[3]])
    expect(await ids_("?environment=staging&status=running")).toEqual([ids[3]])
    expect(await ids_("?environment=qa")).toEqual([])
    expect(await ids_("?sort=updated_at&order=desc&per_page=1")).toHaveLength(1)
    expect(await ids_("?search=CHARL")).toEqual([ids[2]])

    const page = await call(ann, "GET", `/v1/projects/${p.id}/deployments?per_page=1&page=2`)
    expect(page.body.meta).toMatchObject({ total: 4, page: 2, per_page: 1 })
    const link = page.headers.get("link") ?? ""
    for (const rel of ["next", "prev", "first", "last"]) expect(link).toContain(`rel="${rel}"`)

    expectValidation(await call(ann, "GET", `/v1/projects/${p.id}/deployments?status=done`), "status")
    expectValidation(await call(ann, "GET", `/v1/projects/${p.id}/deployments?environment=Prod`), "environment")
    expectValidation(await call(ann, "GET", `/v1/projects/${p.id}/deployments?sort=name`), "sort")
    expectValidation(await call(ann, "GET", `/v1/projects/${p.id}/deployments?per_page=101`), "per_page")
  })
})

/** How many deployments of a project the database holds, read straight from it. */
const storedDeployments = async (projectId: string): Promise<number> => {
  if (/^postgres(ql)?:\/\//.test(server.databaseUrl)) {
    const sql = sqlOn(server.databaseUrl)
    try {
      const rows = await sql`SELECT CAST(count(*) AS INTEGER) AS n FROM deployments WHERE project_id = ${projectId}`
      return Number(rows[0].n)
    } finally {
      await sql.close()
    }
  }
  const db = new Database(server.databaseUrl.slice("sqlite:".length), { readonly: true })
  try {
    const row = db.query("SELECT count(*) AS n FROM deployments WHERE project_id = ?").get(projectId) as { n: number }
    return row.n
  } finally {
    db.close()
  }
}

describe("deleting a project", () => {
  test("deletes its deployments", async () => {
    const [p, kept] = [await project(ann), await project(ann)]
    await deploy(ann, p.id)
    const d = (await deploy(ann, p.id)).body.data
    await finish(ann, p.id, d.id, { status: "succeeded" })
    await deploy(ann, kept.id)
    expect(await storedDeployments(p.id)).toBe(2)
    expect((await call(ann, "DELETE", `/v1/projects/${p.id}`)).status).toBe(204)
    expect(await storedDeployments(p.id)).toBe(0)
    expect(await storedDeployments(kept.id)).toBe(1)
    expectError(await call(ann, "GET", `/v1/projects/${p.id}/deployments/${d.id}`), 404, "not_found")
    expectError(await call(ann, "GET", `/v1/projects/${p.id}/deployments`), 404, "not_found")
  })
})

describe("OpenAPI", () => {
  test("the four deployment endpoints are documented with their errors", async () => {
    const doc = (await server.request("/v1/openapi.json")).body
    const collection = doc.paths["/v1/projects/{id}/deployments"]
    const item = doc.paths["/v1/projects/{id}/deployments/{deployment_id}"]
    expect(Object.keys(collection.post.responses)).toEqual(expect.arrayContaining(["201", "404", "409"]))
    expect(collection.get).toBeDefined()
    expect(item.get).toBeDefined()
    expect(Object.keys(item.put.responses)).toEqual(expect.arrayContaining(["200", "404", "409"]))
    expect(doc.components.schemas.Deployment.required).toEqual(
      expect.arrayContaining(["id", "project_id", "environment", "ref", "status", "created_by", "finished_at"])
    )
  })
})
