/**
 * Unknown query parameters (docs/api.md): on every `/v1` endpoint of the contract, a parameter it does not define is
 * `400 validation_failed` naming it ("unknown parameter"), and every parameter it defines is never called unknown.
 * Generated from the contract, so a new endpoint is covered without a line here.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Option, Schema } from "effect"
import * as AST from "effect/SchemaAST"
import { Api } from "../../src/Api.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let ann: TestUser

beforeAll(async () => {
  server = await startInProcess()
  ann = await server.user({ scopes: "read,write,team:manage" })
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

interface Endpoint {
  readonly method: string
  readonly path: string
  readonly params: ReadonlyArray<string>
}

const endpoints: ReadonlyArray<Endpoint> = Object.values(Api.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({
    method: endpoint.method,
    path: endpoint.path,
    params: Option.match(endpoint.urlParamsSchema, {
      onNone: () => [],
      onSome: (schema: unknown) =>
        Schema.isSchema(schema)
          ? AST.getPropertySignatures(AST.encodedAST(schema.ast)).map(({ name }) => String(name))
          : []
    })
  }))
)

/** A path of the endpoint with an id of the right shape in each parameter (nothing is routed: the check is first). */
const pathOf = (endpoint: Endpoint) =>
  endpoint.path.replace(/:[a-z_]+/g, (name) => (name === ":id" ? "proj_01m8ja5030e4j8hwyqwzhv8emc" : "x_1"))

const label = (endpoint: Endpoint) => `${endpoint.method} ${endpoint.path}`

describe("unknown query parameters on every /v1 endpoint", () => {
  test("the contract has list and read endpoints to check", () => {
    expect(endpoints.filter((endpoint) => endpoint.method === "GET").length).toBeGreaterThanOrEqual(20)
    expect(endpoints.filter((endpoint) => endpoint.params.length > 0).length).toBeGreaterThanOrEqual(10)
  })

  test.each(endpoints.map((endpoint) => [label(endpoint), endpoint] as const))(
    "%s: a parameter it does not define is 400 validation_failed naming it",
    async (_, endpoint) => {
      const res = await server.request(`${pathOf(endpoint)}?stauts=archived`, {
        method: endpoint.method,
        key: ann.key
      })
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe("validation_failed")
      expect(res.body.error.details).toEqual([{ field: "stauts", message: "unknown parameter" }])
    }
  )

  test.each(endpoints.filter((endpoint) => endpoint.params.length > 0).map((e) => [label(e), e] as const))(
    "%s: every parameter it defines is known; an unknown one beside them is still named",
    async (_, endpoint) => {
      const query = endpoint.params.map((name) => `${name}=1`).join("&")
      const known = await server.request(`${pathOf(endpoint)}?${query}`, { key: ann.key })
      const problems: ReadonlyArray<{ field: string; message: string }> = known.body?.error?.details ?? []
      expect(problems.filter(({ message }) => message === "unknown parameter")).toEqual([])
      const mixed = await server.request(`${pathOf(endpoint)}?${query}&per_pgae=5&per_pgae=6`, { key: ann.key })
      expect(mixed.status).toBe(400)
      expect(mixed.body.error.details).toEqual([{ field: "per_pgae", message: "unknown parameter" }])
    }
  )

  test("the typo from the issue: ?stauts=archived is refused, not a list of every project", async () => {
    const res = await server.request("/v1/projects?stauts=archived", { key: ann.key })
    expect(res.status).toBe(400)
    expect(res.body.error.message).toContain("stauts")
    const right = await server.request("/v1/projects?status=archived", { key: ann.key })
    expect(right.status).toBe(200)
  })

  test("a parameter without a value, or with an empty name, is unknown too", async () => {
    const bare = await server.request("/v1/projects?verbose", { key: ann.key })
    expect(bare.body.error.details).toEqual([{ field: "verbose", message: "unknown parameter" }])
    const empty = await server.request("/v1/projects?=1", { key: ann.key })
    expect(empty.status).toBe(400)
    expect(empty.body.error.details[0].message).toBe("unknown parameter")
  })
})
