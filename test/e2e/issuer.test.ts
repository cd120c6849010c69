/**
 * A session JWT minted through one address (127.0.0.1) and used through another (localhost) is refused, and the
 * 401 says why: both issuers, and BASE_URL as the fix. A forged or garbled token still gets the plain answer.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import type { Server } from "../support/server.ts"

let server: Server

beforeAll(async () => {
  server = await startInProcess()
}, 60_000)

afterAll(async () => {
  await server?.stop()
}, 20_000)

test("a JWT used through another host name: the 401 names both issuers and suggests BASE_URL", async () => {
  const password = "correct horse battery"
  const email = `issuer.${Date.now()}@example.com`
  await server.fixtures.account({ email, name: "Issuer", password })
  const login = await server.request("/oauth/login", { method: "POST", body: { email, password } })
  expect(login.status).toBe(200)
  const jwt: string = login.body.access_token

  expect((await server.request("/v1/users/me", { key: jwt })).status).toBe(200)

  const port = new URL(server.url).port
  const elsewhere = await server.request("/v1/users/me", { key: jwt, headers: { host: `localhost:${port}` } })
  expect(elsewhere.status).toBe(401)
  expect(elsewhere.body.error.code).toBe("unauthorized")
  expect(elsewhere.body.error.message).toContain(`"http://127.0.0.1:${port}/oauth"`)
  expect(elsewhere.body.error.message).toContain(`"http://localhost:${port}/oauth"`)
  expect(elsewhere.body.error.message).toContain("BASE_URL")

  // A token whose signature does not verify says nothing about issuers.
  const [head, payload] = jwt.split(".")
  const forged = await server.request("/v1/users/me", {
    key: `${head}.${payload}.${"A".repeat(86)}`,
    headers: { host: `localhost:${port}` }
  })
  expect(forged.status).toBe(401)
  expect(forged.body.error.message).toBe("The JWT is invalid or expired")
}, 30_000)
