/**
 * List behaviour over real HTTP: pagination, sorting with an id tie-break, search, creation-date bounds, status
 * filters, the `Link` header, on projects, API keys, teams and team members. One server for the file; every user
 * is fresh so totals are exact.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { listOrder } from "../support/helpers.ts"
import { startInProcess } from "../support/in-process.ts"
import type { Response, Server, TestUser } from "../support/server.js"

interface Item {
  readonly id: string
  readonly name: string
  readonly created_at: string
  readonly updated_at: string
  readonly status: string
  readonly description: string
}

let server: Server
/** 30 projects, names cycling over five words (so name sorts have ties), created all at once. */
let pager: TestUser
/** Projects made to probe search. */
let searcher: TestUser
/** Three projects, one archived. */
let stat: TestUser
/** API keys: the fixture's one, a revoked one, one that expires 2 s after set-up, one for tomorrow. */
let keyUser: TestUser
/** Owns three teams and no projects. */
let owner: TestUser

const NAMES = ["alpha", "bravo", "charlie", "delta", "echo"] as const
const PAGER_COUNT = 30
let pagerProjects: Array<Item> = []
let touched: Array<string> = []
let expiringKey: { id: string; expires_at: string }
let revokedKeyId: string
let redTeam: { id: string; name: string; created_at: string }
const teams: Array<{ id: string; name: string; created_at: string }> = []

const qs = (params: Record<string, string | number>) =>
  new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString()

const get = (user: TestUser, path: string, params: Record<string, string | number> = {}): Promise<Response> => {
  const query = qs(params)
  return server.request(query === "" ? path : `${path}?${query}`, { key: user.key })
}

const ids = (res: Response): Array<string> => res.body.data.map((item: { id: string }) => item.id)

const createProject = async (user: TestUser, body: Record<string, unknown>): Promise<Item> => {
  const res = await server.request("/v1/projects", { method: "POST", key: user.key, body })
  if (res.status !== 201) throw new Error(`create project: ${res.status} ${res.text}`)
  return res.body.data
}

/** `Link` → rel → URL; every part must be `<absolute url>; rel="…"`. */
const parseLinks = (header: string | null): Record<string, URL> => {
  const links: Record<string, URL> = {}
  if (header === null || header === "") return links
  for (const part of header.split(/,\s*(?=<)/)) {
    const match = /^<([^>]+)>;\s*rel="(next|prev|first|last)"$/.exec(part.trim())
    if (match === null) throw new Error(`malformed Link part: ${part}`)
    links[match[2]!] = new URL(match[1]!)
  }
  return links
}

const expectValidation = (res: Response, field: string) => {
  expect(res.status).toBe(400)
  expect(res.body.error.code).toBe("validation_failed")
  expect(res.body.error.status).toBe(400)
  expect(res.body.error.request_id).toMatch(/^req_/)
  expect(res.body.error.details[0].field).toBe(field)
}

/** Follows `rel="next"` from page 1 to the end; returns every item in the order served and the pages seen. */
const walk = async (user: TestUser, path: string, params: Record<string, string | number>) => {
  const items: Array<any> = []
  let pages = 0
  let next: string | undefined = `${path}?${qs({ ...params, page: 1 })}`
  let total = -1
  while (next !== undefined) {
    const res: Response = await server.request(next, { key: user.key })
    expect(res.status).toBe(200)
    pages++
    if (total === -1) total = res.body.meta.total
    expect(res.body.meta.total).toBe(total)
    expect(res.body.meta.page).toBe(pages)
    items.push(...res.body.data)
    const link = parseLinks(res.headers.get("link")).next
    next = link === undefined ? undefined : `${link.pathname}${link.search}`
    if (pages > 200) throw new Error("runaway pagination")
  }
  return { items, pages, total }
}

const expectSorted = (items: ReadonlyArray<any>, key: string, order: "asc" | "desc") => {
  const compare = listOrder<any>(key)
  for (let i = 1; i < items.length; i++) {
    const c = compare(items[i - 1], items[i])
    if (order === "asc" ? c >= 0 : c <= 0) {
      throw new Error(`not sorted by ${key} ${order} at ${i}: ${JSON.stringify([items[i - 1], items[i]])}`)
    }
  }
}

beforeAll(async () => {
  server = await startInProcess()
  ;[pager, searcher, stat, keyUser, owner] = await Promise.all([
    server.user({ name: "Pat Pager" }),
    server.user({ name: "Sam Search" }),
    server.user({ name: "Stu Status" }),
    server.user({ name: "Kay Keys" }),
    server.user({ name: "Olive Owner" })
  ])

  // Started first so that its 2 s run out while the other tests run.
  const expiring = await server.request("/v1/api-keys", {
    method: "POST",
    key: keyUser.key,
    body: { name: "expiring soon", scopes: ["read"], expires_at: new Date(Date.now() + 2000).toISOString() }
  })
  if (expiring.status !== 201) throw new Error(`expiring key: ${expiring.status} ${expiring.text}`)
  expiringKey = expiring.body.data

  const teamsReady = (async () => {
    redTeam = await server.fixtures.team("Red Team", owner.id)
    await Promise.all([
      server.fixtures.team("Blue Team", owner.id),
      server.fixtures.team("Green Team", owner.id),
      ...[searcher, stat, keyUser].map((member) => server.fixtures.addMember(redTeam.id, member.id, "member"))
    ]).then(([blue, green]) => teams.push(redTeam, blue, green))
  })()

  await Promise.all([
    ...[
      { name: "Alpha Rocket", description: "" },
      { name: "beta", description: "contains ROCKET science" },
      { name: "Gamma", description: "nothing to see" },
      { name: "100% done", description: "" },
      { name: "1000 done", description: "" },
      { name: "under_score", description: "" },
      { name: "underXscore", description: "" },
      { name: "back\\slash", description: "" },
      { name: "Über Café", description: "" }
    ].map((body) => createProject(searcher, body)),
    (async () => {
      const made = await Promise.all(["one", "two", "three"].map((name) => createProject(stat, { name })))
      const archived = await server.request(`/v1/projects/${made[1]!.id}`, {
        method: "PUT",
        key: stat.key,
        body: { status: "archived" }
      })
      if (archived.status !== 200) throw new Error(`archive: ${archived.status}`)
    })(),
    (async () => {
      const revoked = await server.request("/v1/api-keys", {
        method: "POST",
        key: keyUser.key,
        body: { name: "revoke me", scopes: ["read"] }
      })
      revokedKeyId = revoked.body.data.id
      const del = await server.request(`/v1/api-keys/${revokedKeyId}`, { method: "DELETE", key: keyUser.key })
      if (del.status !== 204) throw new Error(`revoke: ${del.status}`)
      await server.request("/v1/api-keys", {
        method: "POST",
        key: keyUser.key,
        body: {
          name: "tomorrow",
          scopes: ["read", "write"],
          expires_at: new Date(Date.now() + 86_400_000).toISOString()
        }
      })
    })(),
    teamsReady
  ])

  // Warm the create path up (on a user whose projects no test counts), then create the pager's projects all at
  // once, so that some are likely to share a millisecond.
  await Promise.all(Array.from({ length: 30 }, (_, i) => createProject(keyUser, { name: `warm-up ${i}` })))
  pagerProjects = await Promise.all(
    Array.from({ length: PAGER_COUNT }, (_, i) =>
      createProject(pager, { name: NAMES[i % NAMES.length]!, description: `number ${i}` })
    )
  )
  // Touch the two oldest so that updated_at order differs from created_at order.
  const oldest = [...pagerProjects].sort(listOrder("created_at")).slice(0, 2)
  for (const project of oldest) {
    await Bun.sleep(2)
    const res = await server.request(`/v1/projects/${project.id}`, {
      method: "PUT",
      key: pager.key,
      body: { description: "touched" }
    })
    if (res.status !== 200) throw new Error(`touch: ${res.status} ${res.text}`)
  }
  touched = oldest.map((p) => p.id)
}, 60_000)

afterAll(async () => {
  await server?.stop()
}, 20_000)

describe("pagination: page and per_page", () => {
  test("defaults to page 1 of 20 with the true total, page, per_page and request id in meta", async () => {
    const res = await get(pager, "/v1/projects")
    expect(res.status).toBe(200)
    expect(res.body.data).toHaveLength(20)
    expect(res.body.meta).toMatchObject({ total: PAGER_COUNT, page: 1, per_page: 20 })
    expect(res.body.meta.request_id).toMatch(/^req_[0-9a-f-]{36}$/)
    expect(res.headers.get("x-request-id")).toBe(res.body.meta.request_id)
    const item = res.body.data[0]
    expect(Object.keys(item).sort()).toEqual([
      "created_at",
      "description",
      "id",
      "name",
      "owner_id",
      "status",
      "team_id",
      "updated_at",
      "visibility"
    ])
    const second = await get(pager, "/v1/projects", { page: 2 })
    expect(second.body.data).toHaveLength(PAGER_COUNT - 20)
    expect(second.body.meta).toMatchObject({ total: PAGER_COUNT, page: 2, per_page: 20 })
    expect(new Set([...ids(res), ...ids(second)]).size).toBe(PAGER_COUNT)
  })

  test("meta echoes the page asked for; per_page 100 is the maximum allowed", async () => {
    const res = await get(pager, "/v1/projects", { page: 3, per_page: 7 })
    expect(res.status).toBe(200)
    expect(res.body.data).toHaveLength(7)
    expect(res.body.meta).toMatchObject({ total: PAGER_COUNT, page: 3, per_page: 7 })
    const max = await get(pager, "/v1/projects", { per_page: 100 })
    expect(max.status).toBe(200)
    expect(max.body.data).toHaveLength(PAGER_COUNT)
    expect(max.body.meta.per_page).toBe(100)
    const one = await get(pager, "/v1/projects", { per_page: 1 })
    expect(one.body.data).toHaveLength(1)
  })

  test("per_page 101, 0, -1, 1.5, abc and page 0, x, -1, 1.5 are validation_failed naming the parameter", async () => {
    for (const value of ["101", "0", "-1", "1.5", "abc", "1e2", ""]) {
      const res = await get(pager, "/v1/projects", { per_page: value })
      expectValidation(res, "per_page")
      expect(res.body.error.details[0].message).toContain("100")
    }
    for (const value of ["0", "x", "-1", "1.5", ""]) {
      expectValidation(await get(pager, "/v1/projects", { page: value }), "page")
    }
    for (const path of ["/v1/api-keys", "/v1/teams", `/v1/teams/${redTeam.id}/members`]) {
      expectValidation(await get(owner, path, { per_page: 101 }), "per_page")
      expectValidation(await get(owner, path, { page: 0 }), "page")
    }
  })

  test("a page past the end is an empty data with the true total", async () => {
    const res = await get(pager, "/v1/projects", { page: 99, per_page: 10 })
    expect(res.status).toBe(200)
    expect(res.body.data).toEqual([])
    expect(res.body.meta).toMatchObject({ total: PAGER_COUNT, page: 99, per_page: 10 })
    const links = parseLinks(res.headers.get("link"))
    expect(links.next).toBeUndefined()
    const lastPage = String(Math.ceil(PAGER_COUNT / 10))
    expect(links.last?.searchParams.get("page")).toBe(lastPage)
    expect(links.prev?.searchParams.get("page")).toBe(lastPage)
    const empty = await get(owner, "/v1/projects")
    expect(empty.status).toBe(200)
    expect(empty.body.data).toEqual([])
    expect(empty.body.meta).toMatchObject({ total: 0, page: 1, per_page: 20 })
  })

  test("a very large page number is just a page past the end", async () => {
    for (const page of ["999999999", "1000000000"]) {
      const res = await get(pager, "/v1/projects", { page, per_page: 100 })
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual([])
      expect(res.body.meta.total).toBe(PAGER_COUNT)
    }
  })

  test("unknown query parameters are refused, each named (they were ignored before; decisions.md)", async () => {
    const res = await get(pager, "/v1/projects", { per_page: 5, foo: "bar", utm_source: "x", "filter[name]": "zzz" })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe("validation_failed")
    expect(res.body.error.details).toEqual([
      { field: "foo", message: "unknown parameter" },
      { field: "utm_source", message: "unknown parameter" },
      { field: "filter[name]", message: "unknown parameter" }
    ])
    const teamsRes = await get(owner, "/v1/teams", { whatever: 1 })
    expect(teamsRes.status).toBe(400)
    const keys = await get(keyUser, "/v1/api-keys", { nonsense: "1" })
    expect(keys.status).toBe(400)
    expect((await get(pager, "/v1/projects", { per_page: 5 })).status).toBe(200)
  })
})

describe("Link header", () => {
  test("page 1: next, first and last, no prev; absolute URLs with page and per_page", async () => {
    const res = await get(pager, "/v1/projects")
    const header = res.headers.get("link")
    expect(header).not.toBeNull()
    const links = parseLinks(header)
    expect(Object.keys(links).sort()).toEqual(["first", "last", "next"])
    const origin = new URL(server.url).origin
    for (const url of Object.values(links)) {
      expect(url.origin).toBe(origin)
      expect(url.pathname).toBe("/v1/projects")
      expect(url.searchParams.get("per_page")).toBe("20")
    }
    expect(links.next!.searchParams.get("page")).toBe("2")
    expect(links.first!.searchParams.get("page")).toBe("1")
    expect(links.last!.searchParams.get("page")).toBe("2")
  })

  test("a middle page has all four; other parameters are kept; the last page has no next", async () => {
    const params = { sort: "name", order: "asc", status: "active", per_page: 10, page: 2 }
    const res = await get(pager, "/v1/projects", params)
    expect(res.status).toBe(200)
    const links = parseLinks(res.headers.get("link"))
    expect(Object.keys(links).sort()).toEqual(["first", "last", "next", "prev"])
    const pages: Record<string, string> = { next: "3", prev: "1", first: "1", last: "3" }
    for (const [rel, url] of Object.entries(links)) {
      expect(url.searchParams.get("page")).toBe(pages[rel]!)
      expect(url.searchParams.get("per_page")).toBe("10")
      expect(url.searchParams.get("sort")).toBe("name")
      expect(url.searchParams.get("order")).toBe("asc")
      expect(url.searchParams.get("status")).toBe("active")
    }
    // Following next gives the page the server itself says is page 3.
    const next = await server.request(`${links.next!.pathname}${links.next!.search}`, { key: pager.key })
    expect(next.body.meta).toMatchObject({ page: 3, per_page: 10, total: PAGER_COUNT })
    expect(next.body.data).toHaveLength(PAGER_COUNT - 20)
    const lastLinks = parseLinks(next.headers.get("link"))
    expect(Object.keys(lastLinks).sort()).toEqual(["first", "last", "prev"])
    expect(lastLinks.prev!.searchParams.get("page")).toBe("2")
  })

  test("a single page (and an empty list) has only first and last, both page 1", async () => {
    for (const [user, params] of [
      [pager, { per_page: 100 }],
      [owner, {}]
    ] as const) {
      const res = await get(user, "/v1/projects", params)
      const links = parseLinks(res.headers.get("link"))
      expect(Object.keys(links).sort()).toEqual(["first", "last"])
      expect(links.first!.searchParams.get("page")).toBe("1")
      expect(links.last!.searchParams.get("page")).toBe("1")
    }
  })

  test("api-keys, teams and members lists send it too", async () => {
    for (const [user, path] of [
      [keyUser, "/v1/api-keys"],
      [owner, "/v1/teams"],
      [owner, `/v1/teams/${redTeam.id}/members`]
    ] as const) {
      const res = await get(user, path, { per_page: 1 })
      expect(res.status).toBe(200)
      const links = parseLinks(res.headers.get("link"))
      expect(Object.keys(links).sort()).toEqual(["first", "last", "next"])
      expect(links.next!.pathname).toBe(path)
      expect(links.last!.searchParams.get("page")).toBe(String(res.body.meta.total))
    }
  })
})

describe("sort and order", () => {
  test("default is created_at desc, with ties broken by id", async () => {
    const res = await get(pager, "/v1/projects", { per_page: 100 })
    expectSorted(res.body.data, "created_at", "desc")
    const explicit = await get(pager, "/v1/projects", { per_page: 100, sort: "created_at", order: "desc" })
    expect(ids(explicit)).toEqual(ids(res))
    const asc = await get(pager, "/v1/projects", { per_page: 100, order: "asc" })
    expect(ids(asc)).toEqual([...ids(res)].reverse())
    const sharedMs = res.body.data.length - new Set(res.body.data.map((p: Item) => p.created_at)).size
    // Not guaranteed, but when projects share a millisecond the id tie-break is what keeps them in order.
    console.log(`pager projects sharing a created_at millisecond: ${sharedMs}`)
  })

  test("sort=name and sort=updated_at, asc and desc, really order by that field", async () => {
    for (const order of ["asc", "desc"] as const) {
      const byName = await get(pager, "/v1/projects", { per_page: 100, sort: "name", order })
      expect(byName.status).toBe(200)
      expectSorted(byName.body.data, "name", order)
      const byUpdated = await get(pager, "/v1/projects", { per_page: 100, sort: "updated_at", order })
      expectSorted(byUpdated.body.data, "updated_at", order)
    }
    const nameDefault = await get(pager, "/v1/projects", { per_page: 100, sort: "name" })
    expect(nameDefault.body.data[0].name).toBe("echo")
    const updatedDesc = await get(pager, "/v1/projects", { per_page: 100, sort: "updated_at" })
    expect(ids(updatedDesc).slice(0, 2)).toEqual([...touched].reverse())
    const createdAsc = await get(pager, "/v1/projects", { per_page: 100, sort: "created_at", order: "asc" })
    expect(ids(createdAsc).slice(0, 2)).toEqual(touched)
  })

  test("walking every page with per_page 1, 2, 3 yields each item exactly once, in the full list's order", async () => {
    for (const sort of ["created_at", "updated_at", "name"]) {
      for (const order of ["asc", "desc"]) {
        const full = ids(await get(pager, "/v1/projects", { per_page: 100, sort, order }))
        expect(full).toHaveLength(PAGER_COUNT)
        for (const perPage of [1, 2, 3]) {
          const { items, pages, total } = await walk(pager, "/v1/projects", { sort, order, per_page: perPage })
          expect(total).toBe(PAGER_COUNT)
          expect(pages).toBe(Math.ceil(PAGER_COUNT / perPage))
          const walked = items.map((p: Item) => p.id)
          expect(new Set(walked).size).toBe(PAGER_COUNT)
          expect(walked).toEqual(full)
        }
      }
    }
    expect(new Set(pagerProjects.map((p) => p.id)).size).toBe(PAGER_COUNT)
    // About 160 requests, with the server on the test's own thread: a loaded machine needs more than the default 5 s.
  }, 30_000)

  test("an unknown sort or order is validation_failed; sort fields are the resource's own", async () => {
    for (const sort of ["bogus", "status", "id", "name;DROP TABLE projects", "NAME"]) {
      expectValidation(await get(pager, "/v1/projects", { sort }), "sort")
    }
    for (const order of ["up", "ASC", "descending", ""]) {
      expectValidation(await get(pager, "/v1/projects", { order }), "order")
    }
    // API keys and teams have no updated_at; members sort by joined_at and name only.
    expectValidation(await get(keyUser, "/v1/api-keys", { sort: "updated_at" }), "sort")
    expectValidation(await get(owner, "/v1/teams", { sort: "joined_at" }), "sort")
    expectValidation(await get(owner, `/v1/teams/${redTeam.id}/members`, { sort: "created_at" }), "sort")
    const fine = await get(keyUser, "/v1/api-keys", { sort: "name", order: "asc" })
    expect(fine.status).toBe(200)
    expectSorted(fine.body.data, "name", "asc")
  })
})

describe("search", () => {
  const search = async (term: string) => {
    const res = await get(searcher, "/v1/projects", { search: term, per_page: 100 })
    expect(res.status).toBe(200)
    expect(res.body.meta.total).toBe(res.body.data.length)
    return res.body.data.map((p: Item) => p.name).sort() as Array<string>
  }

  test("case-insensitive substring over name and description", async () => {
    expect(await search("rocket")).toEqual(["Alpha Rocket", "beta"])
    expect(await search("ROCKET")).toEqual(["Alpha Rocket", "beta"])
    expect(await search("ock")).toEqual(["Alpha Rocket", "beta"])
    expect(await search("gAmMa")).toEqual(["Gamma"])
    expect(await search("to see")).toEqual(["Gamma"])
    expect(await search("zzz-nothing")).toEqual([])
    expect(await search("")).toHaveLength(9)
    // The search narrows the total, and pagination works over the narrowed set.
    const paged = await get(searcher, "/v1/projects", { search: "done", per_page: 1 })
    expect(paged.body.meta.total).toBe(2)
    expect(paged.body.data).toHaveLength(1)
  })

  test("% and _ (and backslash) are literal, not wildcards", async () => {
    expect(await search("100%")).toEqual(["100% done"])
    expect(await search("%")).toEqual(["100% done"])
    expect(await search("0% d")).toEqual(["100% done"])
    expect(await search("under_")).toEqual(["under_score"])
    expect(await search("_")).toEqual(["under_score"])
    expect(await search("\\")).toEqual(["back\\slash"])
    expect(await search("k\\s")).toEqual(["back\\slash"])
  })

  test("non-ASCII text: searching a project's exact name finds it", async () => {
    expect(await search("Café")).toEqual(["Über Café"])
    expect(await search("Über Café")).toEqual(["Über Café"])
  })

  test("non-ASCII text: ASCII letters fold beside non-ASCII ones, which match as written (README)", async () => {
    expect(await search("ber CAF")).toEqual(["Über Café"])
    expect(await search("Über")).toEqual(["Über Café"])
  })

  test("a search of 200 characters is fine; 201 is validation_failed", async () => {
    const ok = await get(searcher, "/v1/projects", { search: "x".repeat(200) })
    expect(ok.status).toBe(200)
    expect(ok.body.meta.total).toBe(0)
    expectValidation(await get(searcher, "/v1/projects", { search: "x".repeat(201) }), "search")
  })

  test("search works on api keys, teams and members", async () => {
    const keys = await get(keyUser, "/v1/api-keys", { search: "REVOKE" })
    expect(keys.body.data.map((k: Item) => k.id)).toEqual([revokedKeyId])
    const teamsRes = await get(owner, "/v1/teams", { search: "green" })
    expect(teamsRes.body.data.map((t: Item) => t.name)).toEqual(["Green Team"])
    const members = await get(owner, `/v1/teams/${redTeam.id}/members`, { search: "stu" })
    expect(members.body.data.map((m: { user_id: string }) => m.user_id)).toEqual([stat.id])
  })
})

describe("created_after / created_before", () => {
  const all = () => [...pagerProjects].sort(listOrder("created_at"))
  const sortedIds = (res: Response) => ids(res).sort()
  const expected = (predicate: (p: Item) => boolean) =>
    all()
      .filter(predicate)
      .map((p) => p.id)
      .sort()

  /** The same instant written with a UTC offset of `minutes`. */
  const withOffset = (iso: string, minutes: number) => {
    const local = new Date(Date.parse(iso) + minutes * 60_000).toISOString().slice(0, -1)
    const sign = minutes < 0 ? "-" : "+"
    const abs = Math.abs(minutes)
    return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`
  }

  test("exclusive bounds: a returned created_at used as a bound round-trips", async () => {
    const pivot = all()[12]!
    const after = await get(pager, "/v1/projects", { per_page: 100, created_after: pivot.created_at })
    expect(after.status).toBe(200)
    expect(ids(after)).not.toContain(pivot.id)
    expect(sortedIds(after)).toEqual(expected((p) => p.created_at > pivot.created_at))
    expect(after.body.meta.total).toBe(after.body.data.length)
    const before = await get(pager, "/v1/projects", { per_page: 100, created_before: pivot.created_at })
    expect(ids(before)).not.toContain(pivot.id)
    expect(sortedIds(before)).toEqual(expected((p) => p.created_at < pivot.created_at))
    const newest = all()[PAGER_COUNT - 1]!
    const none = await get(pager, "/v1/projects", { created_after: newest.created_at })
    expect(none.body.meta.total).toBe(0)
    const lo = all()[3]!
    const hi = all()[20]!
    const between = await get(pager, "/v1/projects", {
      per_page: 100,
      created_after: lo.created_at,
      created_before: hi.created_at
    })
    expect(sortedIds(between)).toEqual(expected((p) => p.created_at > lo.created_at && p.created_at < hi.created_at))
  })

  test("a bound finer than a millisecond is not rounded: created_before=<created_at + 0.5 ms> includes the item", async () => {
    const pivot = all()[12]!
    const finer = pivot.created_at.replace("Z", "5Z") // e.g. 12:00:00.123Z → 12:00:00.1235Z, half a ms later
    const after = await get(pager, "/v1/projects", { per_page: 100, created_after: finer })
    expect(after.status).toBe(200)
    expect(sortedIds(after)).toEqual(expected((p) => p.created_at > pivot.created_at))
    const before = await get(pager, "/v1/projects", { per_page: 100, created_before: finer })
    expect(before.status).toBe(200)
    expect(ids(before)).toContain(pivot.id)
    expect(sortedIds(before)).toEqual(expected((p) => p.created_at <= pivot.created_at))
  })

  test("a date (midnight UTC) and date-times with an offset work", async () => {
    expect((await get(pager, "/v1/projects", { created_after: "2020-01-01" })).body.meta.total).toBe(PAGER_COUNT)
    expect((await get(pager, "/v1/projects", { created_before: "2020-01-01" })).body.meta.total).toBe(0)
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)
    expect((await get(pager, "/v1/projects", { created_before: tomorrow })).body.meta.total).toBe(PAGER_COUNT)

    const fixed = await get(pager, "/v1/projects", { per_page: 100, created_after: "2026-01-01T00:00:00+02:00" })
    expect(fixed.status).toBe(200)
    expect(sortedIds(fixed)).toEqual(expected((p) => p.created_at > "2025-12-31T22:00:00.000Z"))

    const pivot = all()[12]!
    for (const minutes of [120, -330]) {
      const bound = withOffset(pivot.created_at, minutes)
      const after = await get(pager, "/v1/projects", { per_page: 100, created_after: bound })
      expect(after.status).toBe(200)
      expect(sortedIds(after)).toEqual(expected((p) => p.created_at > pivot.created_at))
      const before = await get(pager, "/v1/projects", { per_page: 100, created_before: bound })
      expect(sortedIds(before)).toEqual(expected((p) => p.created_at < pivot.created_at))
    }
    const zulu = await get(pager, "/v1/projects", { created_after: "2020-01-01T00:00:00Z" })
    expect(zulu.body.meta.total).toBe(PAGER_COUNT)
  })

  test("no zone, garbage and impossible dates are validation_failed naming the parameter", async () => {
    for (const value of [
      "2026-01-01T00:00:00",
      "garbage",
      "2026-02-31",
      "2026-13-01",
      "2026-01-01T25:00:00Z",
      "1735689600",
      "yesterday"
    ]) {
      expectValidation(await get(pager, "/v1/projects", { created_after: value }), "created_after")
      expectValidation(await get(pager, "/v1/projects", { created_before: value }), "created_before")
    }
    expectValidation(await get(keyUser, "/v1/api-keys", { created_after: "2026-02-31" }), "created_after")
    expectValidation(await get(owner, "/v1/teams", { created_before: "nope" }), "created_before")
  })
})

describe("status filter", () => {
  test("projects: active, archived, none, and an unknown status", async () => {
    const active = await get(stat, "/v1/projects", { status: "active" })
    expect(active.body.meta.total).toBe(2)
    expect(active.body.data.map((p: Item) => p.status)).toEqual(["active", "active"])
    const archived = await get(stat, "/v1/projects", { status: "archived" })
    expect(archived.body.meta.total).toBe(1)
    expect(archived.body.data[0]).toMatchObject({ name: "two", status: "archived" })
    const all = await get(stat, "/v1/projects")
    expect(all.body.meta.total).toBe(3)
    const combined = await get(stat, "/v1/projects", { status: "archived", search: "one" })
    expect(combined.body.meta.total).toBe(0)
    for (const status of ["deleted", "ACTIVE", ""]) {
      expectValidation(await get(stat, "/v1/projects", { status }), "status")
    }
  })

  test("api keys: active, revoked, expired (the list shows them all)", async () => {
    const wait = Date.parse(expiringKey.expires_at) + 150 - Date.now()
    if (wait > 0) await Bun.sleep(wait)
    const all = await get(keyUser, "/v1/api-keys", { per_page: 100 })
    expect(all.status).toBe(200)
    expect(all.body.meta.total).toBe(4)
    const byStatus = async (status: string) => {
      const res = await get(keyUser, "/v1/api-keys", { status })
      expect(res.status).toBe(200)
      expect(res.body.meta.total).toBe(res.body.data.length)
      for (const key of res.body.data) expect(key.status).toBe(status)
      return res.body.data.map((k: { id: string }) => k.id).sort()
    }
    expect(await byStatus("revoked")).toEqual([revokedKeyId])
    expect(await byStatus("expired")).toEqual([expiringKey.id])
    expect(await byStatus("active")).toEqual(
      [keyUser.keyId, ...all.body.data.filter((k: Item) => k.name === "tomorrow").map((k: Item) => k.id)].sort()
    )
    expectValidation(await get(keyUser, "/v1/api-keys", { status: "archived" }), "status")
  })
})

describe("teams and members lists", () => {
  test("GET /v1/teams: the caller's teams, paginated and sorted", async () => {
    const res = await get(owner, "/v1/teams")
    expect(res.status).toBe(200)
    expect(res.body.meta).toMatchObject({ total: 3, page: 1, per_page: 20 })
    expectSorted(res.body.data, "created_at", "desc")
    const byName = await get(owner, "/v1/teams", { sort: "name", order: "asc" })
    expect(byName.body.data.map((t: Item) => t.name)).toEqual(["Blue Team", "Green Team", "Red Team"])
    const page2 = await get(owner, "/v1/teams", { per_page: 2, page: 2, sort: "name", order: "asc" })
    expect(page2.body.data.map((t: Item) => t.name)).toEqual(["Red Team"])
    expect(page2.body.meta).toMatchObject({ total: 3, page: 2, per_page: 2 })
    const { items } = await walk(owner, "/v1/teams", { per_page: 1 })
    expect(items.map((t: Item) => t.id).sort()).toEqual(teams.map((t) => t.id).sort())
    const member = await get(keyUser, "/v1/teams")
    expect(member.body.data.map((t: Item) => t.id)).toEqual([redTeam.id])
    const none = await get(pager, "/v1/teams")
    expect(none.body.meta.total).toBe(0)
    const after = await get(owner, "/v1/teams", { created_after: redTeam.created_at })
    expect(after.body.data.map((t: Item) => t.id)).not.toContain(redTeam.id)
  })

  test("GET /v1/teams/:team_id/members: paginated, sort=joined_at (default, desc) or name", async () => {
    const path = `/v1/teams/${redTeam.id}/members`
    const res = await get(owner, path)
    expect(res.status).toBe(200)
    expect(res.body.meta).toMatchObject({ total: 4, page: 1, per_page: 20 })
    const joined = res.body.data.map((m: { joined_at: string }) => m.joined_at)
    expect([...joined].sort().reverse()).toEqual(joined)
    expect(res.body.data[3]).toMatchObject({ user_id: owner.id, role: "owner" })
    const asc = await get(owner, path, { sort: "joined_at", order: "asc" })
    expect(asc.body.data[0]).toMatchObject({ user_id: owner.id, role: "owner" })
    const byName = await get(owner, path, { sort: "name", order: "asc" })
    expect(byName.body.data.map((m: { name: string }) => m.name)).toEqual([
      "Kay Keys",
      "Olive Owner",
      "Sam Search",
      "Stu Status"
    ])
    const byNameDesc = await get(owner, path, { sort: "name" })
    expect(byNameDesc.body.data.map((m: { name: string }) => m.name)).toEqual([
      "Stu Status",
      "Sam Search",
      "Olive Owner",
      "Kay Keys"
    ])
    for (const sort of ["name", "joined_at"]) {
      for (const perPage of [1, 3]) {
        const { items, pages, total } = await walk(owner, path, { sort, per_page: perPage })
        expect(total).toBe(4)
        expect(pages).toBe(Math.ceil(4 / perPage))
        const users = items.map((m: { user_id: string }) => m.user_id)
        expect(users.sort()).toEqual([owner.id, searcher.id, stat.id, keyUser.id].sort())
      }
    }
    const second = await get(owner, path, { sort: "name", order: "asc", per_page: 3, page: 2 })
    expect(second.body.data.map((m: { name: string }) => m.name)).toEqual(["Stu Status"])
    const joinedLater = await get(owner, path, { created_after: res.body.data[3].joined_at })
    expect(joinedLater.body.meta.total).toBe(3)
    // A member may list too; a non-member gets 404.
    expect((await get(keyUser, path)).body.meta.total).toBe(4)
    const outsider = await get(pager, path)
    expect(outsider.status).toBe(404)
    expect(outsider.body.error.code).toBe("not_found")
  })
})
