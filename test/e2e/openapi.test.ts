// engine-independent: the published documents and assets, the same whatever the engine
/**
 * The OpenAPI document is usable by client generators: an independent validator finds no error in it, and a client
 * generated from it (`openapi-typescript` types + `openapi-fetch`) type-checks under `tsc --strict` and works
 * against the running server: integer paging parameters, envelopes, typed errors, the `/oauth/*` endpoints.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Validator } from "@seriousme/openapi-schema-validator"
import { startInProcess } from "../support/in-process.ts"
import type { Server } from "../support/server.ts"

const ROOT = join(import.meta.dir, "..", "..")

let server: Server
let document: any

beforeAll(async () => {
  server = await startInProcess()
  const response = await server.request("/v1/openapi.json")
  expect(response.status).toBe(200)
  document = response.body
}, 60_000)

afterAll(async () => {
  await server?.stop()
}, 20_000)

describe("the document", () => {
  test("is valid OpenAPI 3.1 for an independent validator (zero errors)", async () => {
    const validator = new Validator({ strict: false })
    const result = await validator.validate(document)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(validator.version).toBe("3.1")
  }, 30_000)

  test("page and per_page are integers wherever they appear", () => {
    let seen = 0
    for (const item of Object.values<any>(document.paths)) {
      for (const operation of Object.values<any>(item)) {
        for (const parameter of operation.parameters ?? []) {
          if (parameter.in !== "query" || (parameter.name !== "page" && parameter.name !== "per_page")) continue
          seen++
          expect(parameter.schema.type).toBe("integer")
          expect(parameter.schema.minimum).toBe(1)
          if (parameter.name === "per_page") expect(parameter.schema.maximum).toBe(100)
        }
      }
    }
    expect(seen).toBeGreaterThanOrEqual(10)
  })

  test("a record's ids carry the same pattern as the ids a request is checked against", () => {
    // Records carry `Stored` ids (not matched again on the way out): their pattern is documented only.
    const schemas = document.components.schemas
    const pathId = document.paths["/v1/projects/{id}"].get.parameters.find((p: any) => p.in === "path").schema
    expect(pathId.pattern).toBe("^proj_[0-7][0123456789abcdefghjkmnpqrstvwxyz]{25}$")
    expect(schemas.Project.properties.id).toEqual(pathId)
    expect(schemas.Project.properties.owner_id.pattern).toMatch(/^\^usr_/)
    expect(schemas.Project.properties.team_id.anyOf[0].pattern).toMatch(/^\^team_/)
    expect(schemas.Webhook.properties.id.pattern).toMatch(/^\^whk_/)
    expect(schemas.Delivery.properties.event_id.pattern).toMatch(/^\^evt_/)
  })

  test("names this server, and offers OAuth 2.0 authorization code beside bearer", () => {
    expect(document.servers).toEqual([{ url: server.url, description: "this server" }])
    expect(document.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" })
    const flow = document.components.securitySchemes.oauth2.flows.authorizationCode
    expect(flow.authorizationUrl).toBe(`${server.url}/oauth/authorize`)
    expect(flow.tokenUrl).toBe(`${server.url}/oauth/token`)
    expect(Object.keys(flow.scopes).sort()).toEqual([
      "billing:read",
      "projects:read",
      "projects:write",
      "read",
      "team:manage",
      "write"
    ])
    // Each endpoint takes either; the OAuth one with any one of the scopes it needs.
    expect(document.paths["/v1/projects"].get.security).toEqual([
      { bearer: [] },
      { oauth2: ["read"] },
      { oauth2: ["projects:read"] }
    ])
    expect(document.paths["/v1/projects"].post.security).toEqual([
      { bearer: [] },
      { oauth2: ["write"] },
      { oauth2: ["projects:write"] }
    ])
    // OAuth tokens manage no API keys.
    expect(document.paths["/v1/api-keys"].get.security).toEqual([{ bearer: [] }])
  })

  test("describes the /oauth endpoints, served once (by the OAuth routes)", async () => {
    for (const [path, method] of [
      ["/oauth/token", "post"],
      ["/oauth/revoke", "post"],
      ["/oauth/login", "post"],
      ["/oauth/logout", "post"],
      ["/oauth/authorize", "get"],
      ["/oauth/jwks.json", "get"],
      ["/.well-known/oauth-authorization-server", "get"],
      ["/.well-known/oauth-authorization-server/oauth", "get"],
      ["/oauth/introspect", "post"],
      ["/.well-known/oauth-protected-resource", "get"],
      ["/.well-known/oauth-protected-resource/v1", "get"]
    ] as const) {
      expect({ path, method, described: document.paths[path]?.[method] !== undefined }).toEqual({
        path,
        method,
        described: true
      })
      expect(document.paths[path][method].tags).toEqual(["OAuth"])
    }
    const jwks = await server.request("/oauth/jwks.json")
    expect(jwks.status).toBe(200)
    expect(Array.isArray(jwks.body.keys)).toBe(true)
  })

  test("every operation and every tag has a description (an endpoint added later too)", () => {
    let operations = 0
    for (const [path, item] of Object.entries<any>(document.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        operations++
        const described = typeof operation.description === "string" && operation.description.trim() !== ""
        expect({ path, method, described }).toEqual({ path, method, described: true })
      }
    }
    expect(operations).toBeGreaterThan(50)
    for (const tag of document.tags)
      expect({ tag: tag.name, described: (tag.description ?? "") !== "" }).toEqual({
        tag: tag.name,
        described: true
      })
    // Said from the endpoint's scopes when it has no description of its own.
    expect(document.paths["/v1/projects"].get.description).toBe(
      "Needs a credential with any one of the scopes `read`, `projects:read`."
    )
  })

  test("declares the limits the server enforces, and no body the server refuses", () => {
    const schemas = document.components.schemas
    // The trimmed names: 1–100 characters, as the server checks after trimming.
    for (const [schema, field] of [
      ["CreateProject", "name"],
      ["UpdateProject", "name"],
      ["CreateTeam", "name"],
      ["UpdateTeam", "name"],
      ["UpdateMe", "name"],
      ["CreateApiKey", "name"],
      ["CreateOAuthClient", "name"]
    ] as const) {
      const property = schemas[schema].properties[field]
      expect({ schema, field, minLength: property.minLength, maxLength: property.maxLength }).toEqual({
        schema,
        field,
        minLength: 1,
        maxLength: 100
      })
    }
    expect(schemas.CreateDeployment.properties.ref).toMatchObject({ minLength: 1, maxLength: 200 })
    expect(schemas.CreateInvitation.properties.email).toMatchObject({ format: "email", maxLength: 254 })
    // A PUT that changes nothing is refused: {} is not a valid body.
    for (const name of ["UpdateProject", "UpdateWebhook", "UpdateMe", "UpdateOAuthClient"]) {
      expect({ name, minProperties: schemas[name].minProperties }).toEqual({ name, minProperties: 1 })
    }
    // The test event's body is an empty object, never an array.
    expect(schemas.TestWebhook).toEqual({ type: "object", properties: {}, additionalProperties: false })
  })

  test("has no leftovers of the schema generator", () => {
    const text = JSON.stringify(document)
    expect(text).not.toContain('"$id":"/schemas/')
    expect(text).not.toMatch(/"title":"(maxLength|minLength|minItems|maxItems)\(/)
    expect(text).not.toMatch(/"title":"(int|unknown)"/)
    expect(Object.keys(document.components.schemas)).not.toContain("Issue")
  })

  test("declares the response headers", () => {
    const headers = document.components.headers
    for (const name of [
      "X-Request-Id",
      "X-RateLimit-Limit",
      "X-RateLimit-Remaining",
      "X-RateLimit-Reset",
      "Link",
      "Idempotent-Replayed",
      "Retry-After"
    ]) {
      expect({ name, declared: headers[name]?.schema !== undefined }).toEqual({ name, declared: true })
    }
    const list = document.paths["/v1/projects"].get.responses
    expect(Object.keys(list["200"].headers).sort()).toEqual([
      "Link",
      "X-RateLimit-Limit",
      "X-RateLimit-Remaining",
      "X-RateLimit-Reset",
      "X-Request-Id"
    ])
    expect(list["429"].headers["Retry-After"]).toEqual({ $ref: "#/components/headers/Retry-After" })
    const create = document.paths["/v1/projects"].post.responses
    expect(create["201"].headers["Idempotent-Replayed"]).toEqual({ $ref: "#/components/headers/Idempotent-Replayed" })
    expect(create["409"].headers["Retry-After"]).toBeDefined()
    expect(document.paths["/v1/projects/{id}"].get.responses["200"].headers.Link).toBeUndefined()
  })

  test("is the same document through another host name but for the addresses in it", async () => {
    const other = await server.request("/v1/openapi.json", { headers: { host: "docs.example.test" } })
    expect(other.body.servers[0].url).toBe("http://docs.example.test")
    expect(other.body.components.securitySchemes.oauth2.flows.authorizationCode.tokenUrl).toBe(
      "http://docs.example.test/oauth/token"
    )
    expect(other.body.paths).toEqual(document.paths)
  })
})

describe("a generated typed client", () => {
  test("type-checks under tsc --strict and works against the server", async () => {
    // Inside the checkout (under node_modules, which git ignores), so `openapi-fetch` resolves from the generated code.
    const cache = join(ROOT, "node_modules", ".cache")
    mkdirSync(cache, { recursive: true })
    const dir = mkdtempSync(join(cache, "openapi-client-"))
    try {
      writeFileSync(join(dir, "openapi.json"), JSON.stringify(document))
      const generate = Bun.spawnSync(
        [join(ROOT, "node_modules", ".bin", "openapi-typescript"), "openapi.json", "-o", "types.ts"],
        {
          cwd: dir,
          stdout: "pipe",
          stderr: "pipe"
        }
      )
      expect({ code: generate.exitCode, stderr: generate.exitCode === 0 ? "" : generate.stderr.toString() }).toEqual({
        code: 0,
        stderr: ""
      })

      const password = "correct horse battery"
      const owner = await server.fixtures.user({
        email: `typed.${Date.now()}@example.com`,
        name: "Typed",
        password,
        scopes: "read,write"
      })

      writeFileSync(
        join(dir, "client.ts"),
        `import createClient from "openapi-fetch"
import type { paths } from "./types"

export async function run(baseUrl: string, key: string, email: string, password: string) {
  const client = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${key}\` } })
  const idempotent = { header: { "Idempotency-Key": "typed-create-1" } }
  const body = { name: "Typed", description: "from a generated client" }
  const created = await client.POST("/v1/projects", { params: idempotent, body })
  if (created.data === undefined) throw new Error(JSON.stringify(created.error))
  const id: string = created.data.data.id
  const again = await client.POST("/v1/projects", { params: idempotent, body })
  const listed = await client.GET("/v1/projects", { params: { query: { page: 1, per_page: 5, sort: "name", order: "asc" } } })
  if (listed.data === undefined) throw new Error(JSON.stringify(listed.error))
  const total: number = listed.data.meta.total
  const perPage: number = listed.data.meta.per_page
  // @ts-expect-error per_page is an integer, not text
  void client.GET("/v1/projects", { params: { query: { per_page: "5" } } })
  const one = await client.GET("/v1/projects/{id}", { params: { path: { id } } })
  const missing = await client.GET("/v1/projects/{id}", { params: { path: { id: "proj_01jd3xkq8w0000000000000000" } } })
  const missingCode: string | undefined = missing.error?.error.code
  const anonymous = createClient<paths>({ baseUrl })
  const wrong = await anonymous.POST("/oauth/login", { body: { email, password: password + "!" } })
  const wrongError: string | undefined = wrong.error?.error
  const session = await anonymous.POST("/oauth/login", { body: { email, password } })
  const jwt: string | undefined = session.data?.access_token
  const me = await createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${jwt}\` } }).GET("/v1/users/me")
  const keys = await anonymous.GET("/oauth/jwks.json")
  const kid: string | undefined = keys.data?.keys[0]?.kid
  return {
    id,
    total,
    perPage,
    name: one.data?.data.name,
    replayed: again.response.headers.get("idempotent-replayed"),
    sameId: again.data?.data.id === id,
    missingStatus: missing.response.status,
    missingCode,
    wrongStatus: wrong.response.status,
    wrongError,
    meEmail: me.data?.data.email,
    kid: typeof kid
  }
}
`
      )
      writeFileSync(
        join(dir, "tsconfig.json"),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noUncheckedIndexedAccess: true,
            target: "ES2022",
            module: "ESNext",
            moduleResolution: "bundler",
            lib: ["ES2022", "DOM"],
            types: [],
            skipLibCheck: true,
            noEmit: true
          },
          files: ["client.ts"]
        })
      )
      const check = Bun.spawnSync([join(ROOT, "node_modules", ".bin", "tsc"), "-p", "."], {
        cwd: dir,
        stdout: "pipe",
        stderr: "pipe"
      })
      expect({
        code: check.exitCode,
        output: check.exitCode === 0 ? "" : check.stdout.toString() + check.stderr.toString()
      }).toEqual({ code: 0, output: "" })

      const client = await import(join(dir, "client.ts"))
      const result = await client.run(server.url, owner.key, owner.email, password)
      expect(result).toEqual({
        id: expect.stringMatching(/^proj_/),
        total: 1,
        perPage: 5,
        name: "Typed",
        replayed: "true",
        sameId: true,
        missingStatus: 404,
        missingCode: "not_found",
        wrongStatus: 401,
        wrongError: "invalid_grant",
        meEmail: owner.email,
        kid: "string"
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
