// engine-independent: the published documents and assets, the same whatever the engine
/**
 * The OpenAPI document's OAuth part (src/Http/OpenApi.ts) is derived from the schemas the authorization server's
 * handlers decode and answer with (src/OAuth/Wire.ts): what the server answers fits what the document says, and the
 * OAuth components take no name of the `/v1` contract's own (a `Session` of the sign-in would replace the `Session`
 * of `GET /v1/users/me/sessions`, and every client generated from the document would read sessions wrongly).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import * as OpenApi from "@effect/platform/OpenApi"
import Ajv2020 from "ajv/dist/2020"
import addFormats from "ajv-formats"
import { Api } from "../../src/Api.ts"
import { oauthWireSchemas } from "../../src/OAuth/Wire.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Server } from "../support/server.ts"

let server: Server
let document: any

beforeAll(async () => {
  server = await startInProcess()
  document = (await server.request("/v1/openapi.json")).body
}, 30_000)

afterAll(async () => {
  await server?.stop()
}, 20_000)

/** Checks a body against the document's schema of an operation's answer. */
const fits = (path: string, method: string, status: number, body: unknown) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats(ajv)
  ajv.addSchema(document, "document")
  const schema = document.paths[path][method].responses[status].content["application/json"].schema
  const pointer = schema.$ref === undefined ? undefined : `document${schema.$ref}`
  const validate = pointer === undefined ? ajv.compile(schema) : ajv.getSchema(pointer)
  expect(validate, `${method} ${path} ${status}`).toBeDefined()
  const valid = validate?.(body)
  expect({ where: `${method} ${path} ${status}`, errors: valid ? null : validate?.errors }).toEqual({
    where: `${method} ${path} ${status}`,
    errors: null
  })
}

describe("the OAuth part of the document", () => {
  test("takes no component name of the /v1 contract's", () => {
    const v1 = OpenApi.fromApi(Api).components.schemas
    for (const name of Object.keys(oauthWireSchemas)) expect(v1[name], name).toBeUndefined()
    // The sessions list still refers to the /v1 Session, with its fields.
    expect(Object.keys(document.components.schemas.Session.properties).sort()).toEqual(
      Object.keys(v1.Session && "properties" in v1.Session ? v1.Session.properties : {}).sort()
    )
    expect(Object.keys(document.components.schemas.Session.properties)).toContain("current")
  })

  test("describes what the authorization server answers", async () => {
    const password = "correct horse battery"
    const email = `wire.${Date.now()}@example.com`
    await server.fixtures.user({ email, name: "Wire", password, scopes: "read" })

    const login = await server.request("/oauth/login", { method: "POST", body: { email, password } })
    expect(login.status).toBe(200)
    fits("/oauth/login", "post", 200, login.body)
    const wrong = await server.request("/oauth/login", { method: "POST", body: { email, password: "wrong" } })
    expect(wrong.status).toBe(401)
    fits("/oauth/login", "post", 401, wrong.body)

    // Logout: 204 for the session JWT, 401 invalid_token for anything else as bearer.
    expect(document.paths["/oauth/logout"]?.post?.responses?.[204]).toBeDefined()
    const notASession = await server.request("/oauth/logout", { method: "POST", key: "not-a-jwt" })
    expect(notASession.status).toBe(401)
    fits("/oauth/logout", "post", 401, notASession.body)
    expect((await server.request("/oauth/logout", { method: "POST", key: login.body.access_token })).status).toBe(204)

    const jwks = await server.request("/oauth/jwks.json")
    fits("/oauth/jwks.json", "get", 200, jwks.body)
    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/v1"]) {
      const metadata = await server.request(path)
      expect(metadata.status).toBe(200)
      fits(path, "get", 200, metadata.body)
    }

    for (const path of ["/oauth/token", "/oauth/revoke", "/oauth/introspect"]) {
      const missing = await server.request(path, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        rawBody: "grant_type=authorization_code&token=pco_x"
      })
      expect(missing.status, path).toBe(401)
      expect(missing.body.error, path).toBe("invalid_client")
      fits(path, "post", 401, missing.body)
    }
  }, 60_000)
})
