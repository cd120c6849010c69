/**
 * A seeded fuzz run over every endpoint: a few thousand generated requests (paths with good, bad and foreign ids,
 * odd spellings, every method, random query strings, random bodies and media types, good, bad and no
 * credentials). Whatever comes in, the answer is never a 5xx other than 503, and every `/v1` answer other than a
 * 204 or the OpenAPI document wears an envelope. The seed is fixed, so a failure replays; `FUZZ_SEED` picks another.
 */
import { afterAll, beforeAll, expect, test } from "bun:test"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

const SEED = Number(process.env.FUZZ_SEED ?? 20261123)
const REQUESTS = 2500
const CONCURRENCY = 8

let server: Server
let alice: TestUser
let bob: TestUser
const ids: Record<string, Array<string>> = { prj: [], whk: [], key: [], team: [], dlv: [] }

beforeAll(async () => {
  // Webhooks point at loopback's discard port, where nothing listens: a delivery the fuzzing causes leaves nothing
  // but loopback (a public address would be a real target).
  server = await startInProcess({ env: { RATE_LIMIT_ENABLED: "false", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" } })
  alice = await server.user()
  bob = await server.user()
  for (const owner of [alice, bob]) {
    const project = await server.request("/v1/projects", { method: "POST", key: owner.key, body: { name: "fuzz" } })
    ids.prj!.push(project.body.data.id)
    const hook = await server.request("/v1/webhooks", {
      method: "POST",
      key: owner.key,
      body: { url: "http://127.0.0.1:9/hook", events: ["project.created"] }
    })
    if (hook.status === 201) ids.whk!.push(hook.body.data.id)
    ids.key!.push(owner.keyId)
  }
}, 60_000)
afterAll(async () => {
  await server?.stop()
}, 20_000)

/** mulberry32: small, fast, and the same sequence for the same seed. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const random = prng(SEED)
const int = (n: number) => Math.floor(random() * n)
const pick = <A>(items: ReadonlyArray<A>): A => items[int(items.length)]!

const STRINGS = [
  "",
  " ",
  "x",
  "Zoë ✓",
  "🚀",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udc00x",
  "'; DROP TABLE projects; --",
  "%00",
  "../../etc/passwd",
  "<script>alert(1)</script>",
  "x".repeat(101),
  "y".repeat(3000),
  "read",
  "write",
  "projects:read",
  "project.created",
  "active",
  "archived",
  "team",
  "private",
  "public",
  "2026-01-01T00:00:00Z",
  "not-a-date",
  "http://127.0.0.1:9/hook",
  "http://127.0.0.1/x",
  "http://[::127.0.0.1]/",
  "whsec_0123456789abcdef0123"
]

const value = (depth = 0): unknown => {
  switch (int(depth > 3 ? 5 : 8)) {
    case 0:
      return pick(STRINGS)
    case 1:
      return pick([0, -1, 1.5, 1e308, 2 ** 53 + 1, Number.MAX_SAFE_INTEGER])
    case 2:
      return pick([true, false, null])
    case 3:
      return pick(STRINGS) + pick(STRINGS)
    case 4:
      return pick(STRINGS)
    case 5:
      return Array.from({ length: pick([0, 1, 2, 5, 101]) }, () => value(depth + 1))
    default: {
      const out: Record<string, unknown> = {}
      for (let i = int(4); i >= 0; i--) out[pick(FIELDS)] = value(depth + 1)
      return out
    }
  }
}

const FIELDS = [
  "name",
  "description",
  "visibility",
  "status",
  "team_id",
  "url",
  "events",
  "secret",
  "scopes",
  "expires_at",
  "email",
  "id",
  "created_at",
  "extra",
  "\u0000",
  "__proto__",
  "constructor"
]

const anyId = () =>
  pick([
    ...Object.values(ids).flat(),
    "prj_00000000000000000000000000",
    "abc",
    "",
    "%00",
    "%2e%2e",
    `prj_${"z".repeat(26)}`,
    "x".repeat(300)
  ])

const paths = () => [
  "/v1/projects",
  `/v1/projects/${anyId()}`,
  "/v1/users/me",
  "/v1/teams",
  `/v1/teams/${anyId()}/members`,
  "/v1/api-keys",
  `/v1/api-keys/${anyId()}`,
  "/v1/webhooks",
  `/v1/webhooks/${anyId()}`,
  `/v1/webhooks/${anyId()}/deliveries`,
  `/v1/webhooks/${anyId()}/deliveries/${anyId()}`,
  `/v1/webhooks/${anyId()}/deliveries/${anyId()}/retry`,
  "/v1/openapi.json",
  "/v1/nowhere",
  "/V1/projects",
  "/v1//projects",
  "/v1/projects/",
  "/%761/projects",
  "/health/live",
  "/health/ready",
  "/oauth/token",
  "/oauth/revoke",
  "/oauth/login",
  "/oauth/authorize"
]

const query = () => {
  const params = new URLSearchParams()
  for (let i = int(4); i > 0; i--) {
    params.append(
      pick(["page", "per_page", "sort", "order", "search", "status", "created_after", "created_before", "x"]),
      String(pick([...STRINGS, "1", "0", "-1", "100", "101", "99999999999999999999", "name", "asc", "desc"]))
    )
  }
  const text = params.toString()
  return text === "" ? "" : `?${text}`
}

const body = (): { rawBody?: string; headers: Record<string, string> } => {
  const type = pick([
    "application/json",
    "application/json",
    "application/json",
    "application/json; charset=utf-8",
    "application/vnd.api+json",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    ""
  ])
  const headers: Record<string, string> = type === "" ? {} : { "content-type": type }
  switch (int(6)) {
    case 0:
      return { headers }
    case 1:
      return { rawBody: pick(["{", "nul", "[]", '"x"', '{"a":', "{}", "null", '{"name": "\\ud800"}']), headers }
    case 2:
      return { rawBody: "[".repeat(40) + "]".repeat(40), headers }
    case 3:
      return { rawBody: new URLSearchParams({ grant_type: pick(STRINGS), code: pick(STRINGS) }).toString(), headers }
    default: {
      const object: Record<string, unknown> = {}
      for (let i = int(5); i >= 0; i--) object[pick(FIELDS)] = value()
      return { rawBody: JSON.stringify(object), headers }
    }
  }
}

const METHODS = ["GET", "GET", "POST", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"]

test(`${REQUESTS} generated requests (seed ${SEED}): no 5xx but 503, every /v1 answer in its envelope`, async () => {
  const plans = Array.from({ length: REQUESTS }, () => {
    const method = pick(METHODS)
    const path = pick(paths()) + query()
    const key = pick([alice.key, alice.key, bob.key, "pcs_not_a_real_key", undefined])
    const { rawBody, headers } = method === "GET" || method === "HEAD" ? { rawBody: undefined, headers: {} } : body()
    return { method, path, key, rawBody, headers }
  })
  const problems: Array<string> = []
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < plans.length) {
        const plan = plans[next++]!
        const res = await server.request(plan.path, {
          method: plan.method,
          ...(plan.key !== undefined ? { key: plan.key } : {}),
          ...(plan.rawBody !== undefined ? { rawBody: plan.rawBody } : {}),
          headers: plan.headers
        })
        const where = `${plan.method} ${plan.path} [${plan.headers["content-type"] ?? "-"}] ${(plan.rawBody ?? "").slice(0, 80)}`
        if (res.status >= 500 && res.status !== 503)
          problems.push(`${res.status} for ${where}: ${res.text.slice(0, 200)}`)
        const isV1 = plan.path.startsWith("/v1/") || plan.path.startsWith("/V1/") || plan.path.startsWith("/%761")
        const exempt = res.status === 204 || plan.method === "HEAD" || plan.path.startsWith("/v1/openapi.json")
        if (isV1 && !exempt) {
          const envelope =
            res.body !== null &&
            typeof res.body === "object" &&
            ("data" in res.body ||
              (typeof res.body.error?.code === "string" &&
                res.body.error.status === res.status &&
                typeof res.body.error.request_id === "string"))
          if (!envelope) problems.push(`no envelope (${res.status}) for ${where}: ${res.text.slice(0, 200)}`)
        }
      }
    })
  )
  expect(problems.slice(0, 20)).toEqual([])
}, 240_000)
