/**
 * The events feed's cursor (`GET /v1/events?after=<evt id>`), its rules over HTTP: the events after the named one,
 * oldest first, byte for byte as delivered; `per_page` and `Link: rel="next"` while a page is full; the type filter;
 * 404 for an event the caller did not hear of (or none), 410 `cursor_expired` for one retention removed, 400 for a
 * malformed id and for numbered-paging parameters beside it. Concurrent writers: test/e2e/events-cursor-load.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { eventually } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Server, TestUser } from "../support/server.ts"

let server: Server
let ann: TestUser
let bob: TestUser
/** Ann's events, oldest first, as the numbered listing gives them (newest first) reversed. */
let annEvents: Array<{ id: string; type: string; created_at: string }> = []
let bobEvent = ""

const createProject = async (user: TestUser, name: string) => {
  const res = await server.request("/v1/projects", { method: "POST", key: user.key, body: { name } })
  expect(res.status).toBe(201)
  return res.body.data.id as string
}

beforeAll(async () => {
  server = await startInProcess()
  ann = await server.user({ name: "Ann" })
  bob = await server.user({ name: "Bob" })
  // Ann's and Bob's writes interleaved: Ann's cursor never shows Bob's.
  for (let i = 0; i < 5; i++) {
    const id = await createProject(ann, `Ann ${i} “ünïcode” \\ </script>`)
    await createProject(bob, `Bob ${i}`)
    if (i % 2 === 0) {
      const updated = await server.request(`/v1/projects/${id}`, {
        method: "PUT",
        key: ann.key,
        body: { description: `line\nbreak ${i}` }
      })
      expect(updated.status).toBe(200)
    }
  }
  const all = await server.request("/v1/events?per_page=100", { key: ann.key })
  annEvents = [...all.body.data].reverse()
  expect(annEvents).toHaveLength(8)
  // On PostgreSQL the cursor shows them once every transaction that began before theirs has ended (anywhere on the
  // server): waited for here, so the rules below read a settled feed.
  await eventually(async () => {
    const res = await server.request(`/v1/events?after=${annEvents[0]!.id}`, { key: ann.key })
    return res.body.data.length === 7 ? true : undefined
  })
  bobEvent = (await server.request("/v1/events?per_page=1", { key: bob.key })).body.data[0].id
}, 60_000)
afterAll(() => server?.stop(), 20_000)

/** The JSON text of the events `ids` as GET /v1/events/:id gives them (the delivered bodies), joined by commas. */
const deliveredText = async (ids: ReadonlyArray<string>) => {
  const texts: Array<string> = []
  for (const id of ids) {
    const res = await server.request(`/v1/events/${id}`, { key: ann.key })
    expect(res.status).toBe(200)
    texts.push(res.text.slice('{"data":'.length, res.text.indexOf(',"meta":{')))
  }
  return texts.join(",")
}

describe("GET /v1/events?after=", () => {
  test("the caller's events after the named one, oldest first, each byte for byte as delivered", async () => {
    const res = await server.request(`/v1/events?after=${annEvents[0]!.id}`, { key: ann.key })
    expect(res.status).toBe(200)
    const expected = annEvents.slice(1).map((event) => event.id)
    expect(res.body.data.map((event: { id: string }) => event.id)).toEqual(expected)
    expect(res.text.startsWith(`{"data":[${await deliveredText(expected)}],"meta":{"per_page":20,`)).toBe(true)
    expect(res.body.meta.request_id).toMatch(/^req_/)
    // A page that is not full has no next link: there is nothing more yet.
    expect(res.headers.get("link")).toBeNull()
  })

  test("after the newest: an empty page, no link", async () => {
    const res = await server.request(`/v1/events?after=${annEvents.at(-1)!.id}`, { key: ann.key })
    expect(res.status).toBe(200)
    expect(res.body.data).toEqual([])
    expect(res.headers.get("link")).toBeNull()
  })

  test("per_page bounds a page; Link rel=next carries after=<last id> while pages are full, and keeps the filters", async () => {
    const seen: Array<string> = []
    let next: string | null = `/v1/events?per_page=3&after=${annEvents[0]!.id}`
    const pages: Array<number> = []
    while (next !== null) {
      const res = await server.request(next, { key: ann.key })
      expect(res.status).toBe(200)
      const ids = res.body.data.map((event: { id: string }) => event.id)
      pages.push(ids.length)
      seen.push(...ids)
      expect(res.body.meta.per_page).toBe(3)
      const link = res.headers.get("link")
      if (ids.length === 3) {
        const match = /^<([^>]+)>; rel="next"$/.exec(link ?? "")
        expect(match).not.toBeNull()
        const url = new URL(match![1]!, server.url)
        expect(url.searchParams.get("after")).toBe(ids.at(-1))
        expect(url.searchParams.get("per_page")).toBe("3")
        next = `${url.pathname}${url.search}`
      } else {
        expect(link).toBeNull()
        next = null
      }
    }
    // 7 after the first: 3, 3, 1.
    expect(pages).toEqual([3, 3, 1])
    expect(seen).toEqual(annEvents.slice(1).map((event) => event.id))
  })

  test("a full last page links to an empty one", async () => {
    const res = await server.request(`/v1/events?per_page=2&after=${annEvents.at(-3)!.id}`, { key: ann.key })
    expect(res.body.data).toHaveLength(2)
    const match = /^<([^>]+)>; rel="next"$/.exec(res.headers.get("link") ?? "")
    const url = new URL(match![1]!, server.url)
    const after = await server.request(`${url.pathname}${url.search}`, { key: ann.key })
    expect(after.status).toBe(200)
    expect(after.body.data).toEqual([])
    expect(after.headers.get("link")).toBeNull()
  })

  test("per_page outside 1–100, or not a number, is validation_failed", async () => {
    for (const perPage of ["0", "101", "x"]) {
      const res = await server.request(`/v1/events?per_page=${perPage}&after=${annEvents[0]!.id}`, { key: ann.key })
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe("validation_failed")
      expect(res.body.error.details[0].field).toBe("per_page")
    }
  })

  test("type: one type, or several, in sequence order", async () => {
    const updated = annEvents.filter((event) => event.type === "project.updated").map((event) => event.id)
    const one = await server.request(`/v1/events?type=project.updated&after=${annEvents[0]!.id}`, { key: ann.key })
    expect(one.status).toBe(200)
    expect(one.body.data.map((event: { id: string }) => event.id)).toEqual(updated)
    const both = await server.request(
      `/v1/events?type=project.updated,project.created&per_page=4&after=${annEvents[0]!.id}`,
      { key: ann.key }
    )
    expect(both.body.data.map((event: { id: string }) => event.id)).toEqual(
      annEvents.slice(1, 5).map((event) => event.id)
    )
    const none = await server.request(`/v1/events?type=member.joined&after=${annEvents[0]!.id}`, { key: ann.key })
    expect(none.body.data).toEqual([])
    const bad = await server.request(`/v1/events?type=nope&after=${annEvents[0]!.id}`, { key: ann.key })
    expect(bad.status).toBe(400)
  })

  test("someone else's event, or one that does not exist, is 404; another's events are never shown", async () => {
    const foreign = await server.request(`/v1/events?after=${bobEvent}`, { key: ann.key })
    expect(foreign.status).toBe(404)
    expect(foreign.body.error.code).toBe("not_found")
    const made = "evt_7zzzzzzzzzzzzzzzzzzzzzzzzz"
    const missing = await server.request(`/v1/events?after=${made}`, { key: ann.key })
    expect(missing.status).toBe(404)
    // Bob's cursor shows Bob's five events only.
    const bobs = await server.request("/v1/events?per_page=100", { key: bob.key })
    const bobFirst = bobs.body.data.at(-1).id
    const page = await server.request(`/v1/events?after=${bobFirst}`, { key: bob.key })
    expect(page.body.data.map((event: { id: string }) => event.id)).toEqual(
      bobs.body.data
        .slice(0, -1)
        .reverse()
        .map((event: { id: string }) => event.id)
    )
  })

  test("a malformed id, or page/created_after beside after, or sort/order (never defined here), is validation_failed naming it", async () => {
    const malformed = await server.request("/v1/events?after=evt_nope", { key: ann.key })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error.code).toBe("validation_failed")
    expect(malformed.body.error.details[0].field).toBe("after")
    for (const [name, value, message] of [
      ["page", "2", "is not allowed with after"],
      ["created_after", "2026-01-01", "is not allowed with after"],
      // The feed is always in its own order: these are no parameters of the endpoint at all.
      ["sort", "created_at", "unknown parameter"],
      ["order", "asc", "unknown parameter"]
    ]) {
      const res = await server.request(`/v1/events?after=${annEvents[0]!.id}&${name}=${value}`, { key: ann.key })
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe("validation_failed")
      expect(res.body.error.details).toEqual([{ field: name, message }])
    }
  })

  test("the numbered listing stays newest first with its total", async () => {
    const res = await server.request("/v1/events?page=2&per_page=3", { key: ann.key })
    expect(res.status).toBe(200)
    expect(res.body.meta).toMatchObject({ total: 8, page: 2, per_page: 3 })
    expect(res.body.data.map((event: { id: string }) => event.id)).toEqual(
      [...annEvents]
        .reverse()
        .slice(3, 6)
        .map((event) => event.id)
    )
  })

  test("an event retention removed is 410 cursor_expired; a made-up id newer than any removed stays 404", async () => {
    const carl = await server.user({ name: "Carl" })
    await createProject(carl, "old")
    await createProject(carl, "new")
    const [newer, older] = (await server.request("/v1/events", { key: carl.key })).body.data
    // The older event is made 40 days old, and a sweep removes it (Carl has no webhook, so nothing is pending).
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString()
    await server.fixtures.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.zipRight(
          sql`UPDATE events SET created_at = ${old} WHERE id = ${older.id}`,
          sql`UPDATE event_audience SET created_at = ${old} WHERE event_id = ${older.id}`
        )
      )
    )
    await eventually(async () => {
      const res = await server.request(`/v1/events?after=${older.id}`, { key: carl.key })
      return res.status === 200 && res.body.data.length === 1 ? true : undefined
    })
    const pruned = await server.cli("prune")
    expect(pruned.events).toBeGreaterThanOrEqual(1)
    const gone = await server.request(`/v1/events?after=${older.id}`, { key: carl.key })
    expect(gone.status).toBe(410)
    expect(gone.body.error.code).toBe("cursor_expired")
    expect(gone.body.error.message).toContain("created_after")
    // The one after it still answers; an id that never existed, made now, is 404.
    expect((await server.request(`/v1/events?after=${newer.id}`, { key: carl.key })).status).toBe(200)
    const never = `evt_${newer.id.slice(4, 14)}zzzzzzzzzzzzzzzz`
    expect((await server.request(`/v1/events?after=${never}`, { key: carl.key })).status).toBe(404)
  })
})

test("the OpenAPI document declares after and 410 cursor_expired on GET /v1/events", async () => {
  const res = await server.request("/v1/openapi.json")
  expect(res.status).toBe(200)
  const list = res.body.paths["/v1/events"].get
  expect(list.parameters.map((parameter: { name: string }) => parameter.name)).toContain("after")
  expect(Object.keys(list.responses)).toContain("410")
})
