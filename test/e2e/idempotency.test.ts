/**
 * `Idempotency-Key` on `POST` over real HTTP (docs/idempotency.md): replays byte for byte that run nothing again,
 * the key's comparison by parsed JSON, reuse with another request, concurrent requests with one key, bad keys,
 * keys per user, which answers are recorded, restarts, expiry, and every POST operation of the OpenAPI document.
 * The crash test (a process killed just before and just after the commit) is in idempotency-crash.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { IdempotencyRepo } from "../../src/Idempotency/Repo.ts"
import { eventually, stopWithin } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import { type Receiver, startReceiver } from "../support/receiver.ts"
import { type Response, type Server, startServer, type TestUser, usingPostgres } from "../support/server.ts"

const ENV = {
  WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS: "1h,1h,1h,1h",
  WEBHOOK_POLL_INTERVAL: "100ms"
}

let server: Server
let receiver: Receiver
beforeAll(async () => {
  receiver = startReceiver()
  server = await startInProcess({ env: ENV })
}, 60_000)
afterAll(async () => {
  await stopWithin(server)
  await receiver.stop()
}, 30_000)

let counter = 0
const newKey = (tag = "key") => `${tag}-${++counter}-${crypto.randomUUID()}`

const post = (
  path: string,
  options: {
    readonly key: string
    readonly idempotencyKey?: string
    readonly body?: unknown
    readonly rawBody?: string
  }
): Promise<Response> =>
  server.request(path, {
    method: "POST",
    key: options.key,
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.rawBody !== undefined ? { rawBody: options.rawBody } : {}),
    headers: {
      ...(options.rawBody !== undefined ? { "content-type": "application/json" } : {}),
      ...(options.idempotencyKey !== undefined ? { "idempotency-key": options.idempotencyKey } : {})
    }
  })

const total = async (user: TestUser, path: string): Promise<number> => {
  const res = await server.request(path, { key: user.key })
  expect(res.status).toBe(200)
  return res.body.meta.total
}

/** A replay: the same status, content type and bytes, marked as one. */
const expectReplay = (replayed: Response, first: Response) => {
  expect(replayed.headers.get("idempotent-replayed")).toBe("true")
  expect(replayed.status).toBe(first.status)
  expect(replayed.headers.get("content-type")).toBe(first.headers.get("content-type"))
  expect(replayed.text).toBe(first.text)
}

describe("a replayed POST", () => {
  test("answers the first answer byte for byte and makes no second project, event or delivery", async () => {
    const user = await server.user()
    const hook = await post("/v1/webhooks", {
      key: user.key,
      body: { url: receiver.url("/replay"), events: ["project.created"] }
    })
    expect(hook.status).toBe(201)
    const key = newKey()
    const first = await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "Once" } })
    expect(first.status).toBe(201)
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    await receiver.waitFor(1, { path: "/replay" })

    const again = await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "Once" } })
    expectReplay(again, first)
    // The original request id is in the replayed body; the header names this request.
    expect(again.body.meta.request_id).toBe(first.body.meta.request_id)
    expect(again.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"))

    expect(await total(user, "/v1/projects")).toBe(1)
    const deliveries = await server.request(`/v1/webhooks/${hook.body.data.id}/deliveries`, { key: user.key })
    expect(deliveries.body.meta.total).toBe(1)
    // The one delivery was made once: the worker has nothing else to send (a second event would be a second one).
    expect(receiver.requests("/replay")).toHaveLength(1)
  })

  test("the same body with its members reordered and other whitespace replays", async () => {
    const user = await server.user()
    const key = newKey()
    const first = await post("/v1/projects", {
      key: user.key,
      idempotencyKey: key,
      rawBody: '{"name":"Reordered","description":"d","visibility":"private"}'
    })
    expect(first.status).toBe(201)
    const again = await post("/v1/projects", {
      key: user.key,
      idempotencyKey: key,
      rawBody: '{ "visibility": "private",\n  "description" : "d", "name": "Reordered" }'
    })
    expectReplay(again, first)
    expect(await total(user, "/v1/projects")).toBe(1)
  })

  test("without the header nothing is recorded: the same request twice makes two projects", async () => {
    const user = await server.user()
    for (let i = 0; i < 2; i++) {
      const res = await post("/v1/projects", { key: user.key, body: { name: "Twice" } })
      expect(res.status).toBe(201)
      expect(res.headers.get("idempotent-replayed")).toBeNull()
    }
    expect(await total(user, "/v1/projects")).toBe(2)
  })
})

describe("a keyed create's deliveries", () => {
  test("are attempted once it commits, not at the worker's next poll", async () => {
    // The poll is an hour away: only the wake after the commit can start the attempt.
    const own = await startInProcess({ env: { ...ENV, WEBHOOK_POLL_INTERVAL: "1h" } })
    try {
      const user = await own.user()
      const hook = await own.request("/v1/webhooks", {
        method: "POST",
        key: user.key,
        body: { url: receiver.url("/woken"), events: ["project.created"] }
      })
      expect(hook.status).toBe(201)
      const created = await own.request("/v1/projects", {
        method: "POST",
        key: user.key,
        body: { name: "Woken" },
        headers: { "idempotency-key": newKey() }
      })
      expect(created.status).toBe(201)
      const [delivered] = await receiver.waitFor(1, { path: "/woken", timeoutMs: 20_000 })
      expect(JSON.parse(delivered!.body).data.id).toBe(created.body.data.id)
    } finally {
      await stopWithin(own)
    }
  }, 60_000)
})

describe("a key reused for another request", () => {
  test("with another body or path is 422 idempotency_key_reused, and changes nothing", async () => {
    const user = await server.user({ scopes: "read,write,team:manage" })
    const key = newKey()
    const first = await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "First" } })
    expect(first.status).toBe(201)
    const otherBody = await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "Second" } })
    expect(otherBody.status).toBe(422)
    expect(otherBody.body.error).toMatchObject({ code: "idempotency_key_reused", status: 422 })
    expect(otherBody.headers.get("idempotent-replayed")).toBeNull()
    const otherPath = await post("/v1/teams", { key: user.key, idempotencyKey: key, body: { name: "First" } })
    expect(otherPath.status).toBe(422)
    expect(otherPath.body.error.code).toBe("idempotency_key_reused")
    expect(await total(user, "/v1/projects")).toBe(1)
    expect(await total(user, "/v1/teams")).toBe(0)
    // The first request still replays.
    expectReplay(await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "First" } }), first)
  })
})

describe("eight requests at once with one key", () => {
  test("make exactly one project; the others replay it or are told it is in use (409, Retry-After: 1)", async () => {
    const user = await server.user()
    const key = newKey()
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "Concurrent" } })
      )
    )
    const fresh = answers.filter((res) => res.status === 201 && res.headers.get("idempotent-replayed") === null)
    expect(fresh).toHaveLength(1)
    for (const res of answers) {
      if (res === fresh[0]) continue
      if (res.status === 409) {
        expect(res.body.error).toMatchObject({ code: "idempotency_key_in_use", status: 409 })
        expect(res.headers.get("retry-after")).toBe("1")
      } else {
        expectReplay(res, fresh[0]!)
      }
    }
    expect(await total(user, "/v1/projects")).toBe(1)
    // Once the first is done, every retry replays it.
    expectReplay(
      await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "Concurrent" } }),
      fresh[0]!
    )
  })
})

describe("two replicas on one PostgreSQL", () => {
  test.skipIf(!usingPostgres())(
    "share keys: eight requests split between them make one project; a key first used on one replays on the other",
    async () => {
      const a = await startServer({ env: ENV })
      const b = await startServer({ env: ENV, databaseUrl: a.databaseUrl })
      try {
        const user = await a.user()
        const key = newKey("replicas")
        const answers = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            (i % 2 === 0 ? a : b).request("/v1/projects", {
              method: "POST",
              key: user.key,
              body: { name: "Replicated" },
              headers: { "idempotency-key": key }
            })
          )
        )
        const fresh = answers.filter((res) => res.status === 201 && res.headers.get("idempotent-replayed") === null)
        expect(fresh).toHaveLength(1)
        for (const res of answers) {
          if (res === fresh[0]) continue
          if (res.status === 409) expect(res.headers.get("retry-after")).toBe("1")
          else expectReplay(res, fresh[0]!)
        }
        for (const replica of [a, b]) {
          const replayed = await replica.request("/v1/projects", {
            method: "POST",
            key: user.key,
            body: { name: "Replicated" },
            headers: { "idempotency-key": key }
          })
          expectReplay(replayed, fresh[0]!)
        }
        const list = await b.request("/v1/projects", { key: user.key })
        expect(list.body.meta.total).toBe(1)
      } finally {
        await Promise.all([stopWithin(a), stopWithin(b)])
      }
    },
    60_000
  )
})

describe("a key that is not one", () => {
  test.each([
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
    ["with a space", "two words"],
    ["with a non-ASCII character", "caf\u00e9"]
  ])("%s is 400 validation_failed naming the header, and nothing is created", async (_, bad) => {
    const user = await server.user()
    const res = await post("/v1/projects", { key: user.key, idempotencyKey: bad, body: { name: "Bad key" } })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe("validation_failed")
    expect(res.body.error.details[0].field).toBe("Idempotency-Key")
    expect(await total(user, "/v1/projects")).toBe(0)
  })

  test("255 visible ASCII characters are a key", async () => {
    const user = await server.user()
    const key = `${"~!".repeat(127)}z`
    expect(key).toHaveLength(255)
    const first = await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "Long key" } })
    expect(first.status).toBe(201)
    expectReplay(await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "Long key" } }), first)
  })

  test("PUT and DELETE ignore the header, even a bad one", async () => {
    const user = await server.user()
    const created = await post("/v1/projects", { key: user.key, body: { name: "Put" } })
    const id = created.body.data.id
    for (let i = 0; i < 2; i++) {
      const put = await server.request(`/v1/projects/${id}`, {
        method: "PUT",
        key: user.key,
        body: { name: `Put ${i}` },
        headers: { "idempotency-key": i === 0 ? "same" : "" }
      })
      expect(put.status).toBe(200)
      expect(put.body.data.name).toBe(`Put ${i}`)
      expect(put.headers.get("idempotent-replayed")).toBeNull()
    }
    const del = await server.request(`/v1/projects/${id}`, {
      method: "DELETE",
      key: user.key,
      headers: { "idempotency-key": "same" }
    })
    expect(del.status).toBe(204)
  })
})

describe("keys belong to a user", () => {
  test("two users with the same key value are independent; one user's other credential replays", async () => {
    const ann = await server.user()
    const bob = await server.user()
    const key = newKey("shared")
    const annFirst = await post("/v1/projects", { key: ann.key, idempotencyKey: key, body: { name: "Same" } })
    const bobFirst = await post("/v1/projects", { key: bob.key, idempotencyKey: key, body: { name: "Same" } })
    expect(annFirst.status).toBe(201)
    expect(bobFirst.status).toBe(201)
    expect(bobFirst.headers.get("idempotent-replayed")).toBeNull()
    expect(bobFirst.body.data.id).not.toBe(annFirst.body.data.id)
    expect(bobFirst.body.data.owner_id).toBe(bob.id)
    // Bob's other body under the same value is no reuse of Ann's key.
    const bobOther = await post("/v1/projects", { key: bob.key, idempotencyKey: newKey(), body: { name: "Other" } })
    expect(bobOther.status).toBe(201)

    const annSecondKey = await server.fixtures.apiKey(ann.id, { name: "second", scopes: "write,read" })
    expectReplay(
      await post("/v1/projects", { key: annSecondKey.key, idempotencyKey: key, body: { name: "Same" } }),
      annFirst
    )
    expect(await total(ann, "/v1/projects")).toBe(1)
    expect(await total(bob, "/v1/projects")).toBe(2)
  })
})

describe("which answers are recorded", () => {
  test("a 4xx is recorded and replayed (its request id included); it is not run again", async () => {
    const user = await server.user()
    const key = newKey()
    const first = await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "" } })
    expect(first.status).toBe(400)
    expect(first.body.error.code).toBe("validation_failed")
    expect(first.body.error.request_id).toBe(first.headers.get("x-request-id"))
    const again = await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "" } })
    expectReplay(again, first)
    expect(again.body.error.request_id).toBe(first.body.error.request_id)
    // A 404 from a handler too.
    const gone = await post("/v1/projects", { key: user.key, body: { name: "Gone" } })
    const deleted = await server.request(`/v1/projects/${gone.body.data.id}`, { method: "DELETE", key: user.key })
    expect(deleted.status).toBe(204)
    const missing = newKey()
    const notFound = await post(`/v1/projects/${gone.body.data.id}/deployments`, {
      key: user.key,
      idempotencyKey: missing,
      body: { ref: "main" }
    })
    expect(notFound.status).toBe(404)
    expectReplay(
      await post(`/v1/projects/${gone.body.data.id}/deployments`, {
        key: user.key,
        idempotencyKey: missing,
        body: { ref: "main" }
      }),
      notFound
    )
  })

  test("a 401 and a 403 are not: the key stays free for the request that authenticates", async () => {
    const user = await server.user()
    const readOnly = await server.fixtures.apiKey(user.id, { name: "read only", scopes: "read" })
    const key = newKey()
    const unauthorized = await post("/v1/projects", { key: "pcs_not_a_key", idempotencyKey: key, body: { name: "A" } })
    expect(unauthorized.status).toBe(401)
    expect(unauthorized.headers.get("www-authenticate")).toContain("Bearer")
    const forbidden = await post("/v1/projects", { key: readOnly.key, idempotencyKey: key, body: { name: "A" } })
    expect(forbidden.status).toBe(403)
    const created = await post("/v1/projects", { key: user.key, idempotencyKey: key, body: { name: "A" } })
    expect(created.status).toBe(201)
    expect(created.headers.get("idempotent-replayed")).toBeNull()
    expect(await total(user, "/v1/projects")).toBe(1)
  })
})

describe("keys in the database", () => {
  test("hold across a restart of the server", async () => {
    const own = await startInProcess({ env: ENV })
    const user = await own.user()
    const key = newKey()
    const first = await own.request("/v1/projects", {
      method: "POST",
      key: user.key,
      body: { name: "Restart" },
      headers: { "idempotency-key": key }
    })
    expect(first.status).toBe(201)
    await stopWithin(own)
    const again = await startInProcess({ env: ENV, databaseUrl: own.databaseUrl })
    try {
      const replayed = await again.request("/v1/projects", {
        method: "POST",
        key: user.key,
        body: { name: "Restart" },
        headers: { "idempotency-key": key }
      })
      expectReplay(replayed, first)
      const list = await again.request("/v1/projects", { key: user.key })
      expect(list.body.meta.total).toBe(1)
    } finally {
      await stopWithin(again)
    }
  }, 60_000)

  test("expire after IDEMPOTENCY_TTL: the same request then runs again; pruneExpired deletes them in batches", async () => {
    const own = await startInProcess({ env: { ...ENV, IDEMPOTENCY_TTL: "500ms" } })
    try {
      const user = await own.user()
      const send = (key: string, name: string) =>
        own.request("/v1/projects", {
          method: "POST",
          key: user.key,
          body: { name },
          headers: { "idempotency-key": key }
        })
      const keys = [newKey(), newKey(), newKey()]
      for (const key of keys) expect((await send(key, "Expiring")).status).toBe(201)
      // Until it expires the key replays; then the request runs anew.
      const rerun = await eventually(
        async () => {
          const res = await send(keys[0]!, "Expiring")
          return res.headers.get("idempotent-replayed") === null ? res : undefined
        },
        { timeoutMs: 15_000, intervalMs: 100, what: "the key to expire" }
      )
      expect(rerun.status).toBe(201)
      const list = await own.request("/v1/projects", { key: user.key })
      expect(list.body.meta.total).toBe(4)
      // In batches of at most `limit`, as of a moment when all three keys have expired.
      const later = new Date(Date.now() + 86_400_000).toISOString()
      const prune = (limit: number) =>
        own.fixtures.run(
          Effect.flatMap(IdempotencyRepo, (repo) => repo.pruneExpired(limit, later)).pipe(
            Effect.provide(IdempotencyRepo.Default)
          )
        )
      expect([await prune(2), await prune(2), await prune(2)]).toEqual([2, 1, 0])
    } finally {
      await stopWithin(own)
    }
  }, 60_000)
})

/** What one POST operation needs to be sent once, and what shows whether it ran (read before and after a replay). */
interface Case {
  readonly path: string
  readonly body?: unknown
  /** The caller. */
  readonly user: TestUser
  /** What the operation changes, read once it has settled after the first request. */
  readonly state: () => Promise<unknown>
  /** Waits until the first request's effects are done (a delivery attempt, say). */
  readonly settle?: () => Promise<void>
}

const get = async (user: TestUser, path: string) => {
  const res = await server.request(path, { key: user.key })
  expect(res.status).toBe(200)
  return res.body
}

const manager = () => server.user({ scopes: "read,write,team:manage" })

const invitationFor = async () => {
  const owner = await manager()
  const invitee = await server.user()
  const team = await post("/v1/teams", { key: owner.key, body: { name: "Inviting" } })
  const invitation = await post(`/v1/teams/${team.body.data.id}/invitations`, {
    key: owner.key,
    body: { email: invitee.email, role: "member" }
  })
  expect(invitation.status).toBe(201)
  return { owner, invitee, teamId: team.body.data.id as string, invitationId: invitation.body.data.id as string }
}

/** A user with a webhook of their own to act on. */
const hookFor = async (name: string) => {
  const user = await server.user()
  const hook = await post("/v1/webhooks", {
    key: user.key,
    body: { url: receiver.url(`/table-${name}-${++counter}`), events: ["project.created"] }
  })
  expect(hook.status).toBe(201)
  return { user, hookPath: `/v1/webhooks/${hook.body.data.id}` }
}

/** Every POST operation of the OpenAPI document, by `POST {path}` as the document writes it. */
const table: Record<string, () => Promise<Case>> = {
  "POST /v1/projects": async () => {
    const user = await server.user()
    return { user, path: "/v1/projects", body: { name: "Table" }, state: () => total(user, "/v1/projects") }
  },
  "POST /v1/api-keys": async () => {
    const user = await server.user()
    return {
      user,
      path: "/v1/api-keys",
      body: { name: "table", scopes: ["read"] },
      state: () => total(user, "/v1/api-keys")
    }
  },
  "POST /v1/projects/{id}/deployments": async () => {
    const user = await server.user()
    const project = await post("/v1/projects", { key: user.key, body: { name: "Deployed" } })
    const path = `/v1/projects/${project.body.data.id}/deployments`
    return { user, path, body: { ref: "main" }, state: () => total(user, path) }
  },
  "POST /v1/webhooks": async () => {
    const user = await server.user()
    return {
      user,
      path: "/v1/webhooks",
      body: { url: receiver.url("/table-hook"), events: ["project.created"] },
      state: () => total(user, "/v1/webhooks")
    }
  },
  "POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry": async () => {
    const user = await server.user()
    const target = `/table-retry-${++counter}`
    const hook = await post("/v1/webhooks", {
      key: user.key,
      body: { url: receiver.url(target), events: ["project.created"] }
    })
    await post("/v1/projects", { key: user.key, body: { name: "Retried" } })
    await receiver.waitFor(1, { path: target })
    const deliveries = await get(user, `/v1/webhooks/${hook.body.data.id}/deliveries`)
    const delivery = `/v1/webhooks/${hook.body.data.id}/deliveries/${deliveries.data[0].id}`
    // A manual retry is an attempt outside the schedule: listed in `attempts`, not counted in `attempt_count`.
    const state = async () => {
      const { data } = await get(user, delivery)
      return { status: data.status, attempts: data.attempts.length }
    }
    // The first attempt recorded before the retry (a retry while it is in flight is another test's subject).
    await eventually(async () => ((await state()).status === "delivered" ? true : undefined), {
      what: "the first attempt to be recorded"
    })
    return {
      user,
      path: `${delivery}/retry`,
      state,
      // The retry's attempt is made and recorded: the delivery is `delivered` with two attempts listed. Run again,
      // the retry would ask for a third attempt.
      settle: async () => {
        await eventually(
          async () => {
            const now = await state()
            return now.status === "delivered" && now.attempts === 2 ? now : undefined
          },
          { what: "the retried delivery's second attempt" }
        )
      }
    }
  },
  "POST /v1/webhooks/{id}/rotate-secret": async () => {
    const { hookPath, user } = await hookFor("rotate")
    // Run again, a second rotation would change the record (and its secret) once more.
    return { user, path: `${hookPath}/rotate-secret`, body: {}, state: async () => (await get(user, hookPath)).data }
  },
  "POST /v1/webhooks/{id}/test": async () => {
    const { hookPath, user } = await hookFor("test")
    return { user, path: `${hookPath}/test`, body: {}, state: () => total(user, `${hookPath}/deliveries`) }
  },
  "POST /v1/webhooks/{id}/recover": async () => {
    const { hookPath, user } = await hookFor("recover")
    const since = new Date(Date.now() - 3_600_000).toISOString()
    return {
      user,
      path: `${hookPath}/recover`,
      body: { since },
      state: async () => (await get(user, `${hookPath}/deliveries`)).data
    }
  },
  "POST /v1/oauth-clients": async () => {
    const user = await server.user()
    return {
      user,
      path: "/v1/oauth-clients",
      body: { name: "Table app", redirect_uris: ["https://app.example.com/cb"] },
      state: () => total(user, "/v1/oauth-clients")
    }
  },
  "POST /v1/oauth-clients/{id}/rotate-secret": async () => {
    const user = await server.user()
    const client = await post("/v1/oauth-clients", {
      key: user.key,
      body: { name: "Rotated", redirect_uris: ["https://app.example.com/cb"] }
    })
    const path = `/v1/oauth-clients/${client.body.data.id}`
    // Run again, a rotation would move updated_at (and replace the secret once more).
    return { user, path: `${path}/rotate-secret`, state: async () => (await get(user, path)).data.updated_at }
  },
  "POST /v1/teams": async () => {
    const user = await manager()
    return { user, path: "/v1/teams", body: { name: "Table team" }, state: () => total(user, "/v1/teams") }
  },
  "POST /v1/teams/{team_id}/invitations": async () => {
    const user = await manager()
    const team = await post("/v1/teams", { key: user.key, body: { name: "Invites" } })
    const path = `/v1/teams/${team.body.data.id}/invitations`
    return {
      user,
      path,
      body: { email: `invitee.${++counter}@example.com`, role: "member" },
      state: () => total(user, path)
    }
  },
  "POST /v1/invitations/{invitation_id}/accept": async () => {
    const { invitationId, invitee, owner, teamId } = await invitationFor()
    // Run twice, the second would be 409 (the invitation is no longer pending).
    return {
      user: invitee,
      path: `/v1/invitations/${invitationId}/accept`,
      state: () => total(owner, `/v1/teams/${teamId}/members`)
    }
  },
  "POST /v1/invitations/{invitation_id}/decline": async () => {
    const { invitationId, invitee, owner, teamId } = await invitationFor()
    return {
      user: invitee,
      path: `/v1/invitations/${invitationId}/decline`,
      state: async () =>
        (await get(owner, `/v1/teams/${teamId}/invitations`)).data.map((i: { status: string }) => i.status)
    }
  }
}

/** The POST operations of the document served now. */
const postOperations = async (): Promise<Array<{ readonly name: string; readonly operation: any }>> => {
  const document = await server.request("/v1/openapi.json")
  expect(document.status).toBe(200)
  return Object.entries<any>(document.body.paths).flatMap(([path, item]) =>
    path.startsWith("/v1/") && item.post !== undefined ? [{ name: `POST ${path}`, operation: item.post }] : []
  )
}

describe("every POST operation of the OpenAPI document", () => {
  test("is in this table, declares the header and its two errors, and replays without running again", async () => {
    const operations = await postOperations()
    expect(operations.length).toBeGreaterThan(0)
    // A POST added to the contract fails here until it is added to the table.
    expect(operations.map(({ name }) => name).sort()).toEqual(Object.keys(table).sort())
    for (const { name, operation } of operations) {
      const header = operation.parameters.find((parameter: any) => parameter.name === "Idempotency-Key")
      expect({ name, in: header?.in, required: header?.required }).toEqual({ name, in: "header", required: false })
      expect({ name, errors: JSON.stringify([operation.responses["409"], operation.responses["422"]]) }).toEqual({
        name,
        errors: expect.stringMatching(/IdempotencyKeyInUseError.*IdempotencyKeyReusedError/)
      })

      const sent = await table[name]!()
      const key = newKey(name.replaceAll(" ", "_"))
      const send = () =>
        post(sent.path, {
          key: sent.user.key,
          idempotencyKey: key,
          ...(sent.body !== undefined ? { body: sent.body } : {})
        })
      const first = await send()
      expect({ name, status: first.status, replayed: first.headers.get("idempotent-replayed") }).toEqual({
        name,
        status: expect.any(Number),
        replayed: null
      })
      expect({ name, ok: first.status >= 200 && first.status < 300, body: first.body }).toMatchObject({
        name,
        ok: true
      })
      await sent.settle?.()
      const before = await sent.state()
      const again = await send()
      expect({ name, replayed: again.headers.get("idempotent-replayed"), status: again.status }).toEqual({
        name,
        replayed: "true",
        status: first.status
      })
      expect(again.text).toBe(first.text)
      expect({ name, state: await sent.state() }).toEqual({ name, state: before })
    }
  }, 60_000)

  test("GET, PUT and DELETE operations document neither the header nor its errors", async () => {
    const document = await server.request("/v1/openapi.json")
    for (const [path, item] of Object.entries<any>(document.body.paths)) {
      for (const method of ["get", "put", "delete"]) {
        const operation = item[method]
        if (operation === undefined) continue
        const text = JSON.stringify(operation)
        expect({ path, method, mentions: /Idempotency/.test(text) }).toEqual({ path, method, mentions: false })
      }
    }
  })
})
