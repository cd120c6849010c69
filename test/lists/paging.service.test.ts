// engine-independent: the services over SQLite in memory (inMemory), whichever engine the run is on
/**
 * List paging in-process (the one list query behind every list endpoint, through `Projects.list`), on rows whose
 * timestamps and names are set exactly, which HTTP cannot do: ties broken by id in both directions so pages never
 * overlap or skip, pages past the end, search wildcards taken literally, and creation bounds that exclude the bound.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Layer } from "effect"
import { makeId, ProjectId } from "../../src/Domain/Ids.ts"
import type { ListQuery } from "../../src/Domain/Lists.ts"
import type { Principal } from "../../src/Domain/Principal.ts"
import type { Project, ProjectSort } from "../../src/Domain/Project.ts"
import { Projects } from "../../src/Projects/Projects.ts"
import { ProjectsRepo } from "../../src/Projects/Repo.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { inMemory, principalOf } from "../support/services.ts"
import { captured } from "../support/statements.ts"

const harness = inMemory(Layer.mergeAll(Projects.Default, ProjectsRepo.Default, Users.Default))
const { run } = harness

const T0 = "2024-05-01T10:00:00.000Z"
const T1 = "2024-05-01T10:00:00.001Z"
const T2 = "2024-05-01T10:00:00.002Z"

let tied: Principal // seven projects created in the same millisecond, three names
let searcher: Principal
let timed: Principal // one project at each of T0, T1, T2
/** The ids of `timed`'s projects made at T0, T1 and T2. */
let at0 = ""
let at1 = ""
let at2 = ""

const insert = (
  owner: Principal,
  fields: { readonly name: string; readonly description?: string; readonly created_at: string }
) =>
  Effect.gen(function* () {
    const project: Project = {
      id: ProjectId.make(makeId("project")),
      name: fields.name,
      description: fields.description ?? "",
      visibility: "private",
      status: "active",
      owner_id: owner.userId,
      team_id: null,
      created_at: fields.created_at,
      updated_at: fields.created_at
    }
    yield* Effect.orDie((yield* ProjectsRepo).insert(project))
    return project
  })

const list = (who: Principal, query: Partial<ListQuery<ProjectSort, "active" | "archived">>) =>
  run(
    Effect.flatMap(Projects, (projects) =>
      projects.list(who, { page: 1, per_page: 20, sort: "created_at", order: "desc", ...query })
    )
  )

const names = (page: { readonly items: ReadonlyArray<{ readonly name: string }> }) =>
  page.items.map((item) => item.name)

/** Every page of a query, in order, with `per_page` items a page. */
const walk = async (who: Principal, query: Partial<ListQuery<ProjectSort, "active" | "archived">>, perPage: number) => {
  const ids: Array<string> = []
  for (let page = 1; ; page++) {
    const result = await list(who, { ...query, page, per_page: perPage })
    ids.push(...result.items.map((item) => item.id))
    if (result.items.length < perPage) return { ids, total: result.total, pages: page }
  }
}

beforeAll(async () => {
  const [a, b, c] = await run(
    Effect.flatMap(Users, (users) =>
      Effect.all(["Tia", "Sol", "Tim"].map((name) => users.create({ email: uniqueEmail(name.toLowerCase()), name })))
    )
  )
  tied = principalOf(a!)
  searcher = principalOf(b!)
  timed = principalOf(c!)
  await run(
    Effect.all([
      ...["b", "a", "c", "b", "a", "b", "c"].map((name) => insert(tied, { name, created_at: T0 })),
      ...[
        { name: "100% done" },
        { name: "1000 done" },
        { name: "under_score" },
        { name: "underXscore" },
        { name: "back\\slash" },
        { name: "backslash" },
        { name: "Rocket" },
        { name: "plain", description: "mentions a ROCKET" }
      ].map((fields) => insert(searcher, { ...fields, created_at: T0 }))
    ])
  )
  const at = (created_at: string) =>
    Effect.map(insert(timed, { name: created_at, created_at }), (project) => project.id)
  ;[at0, at1, at2] = await run(Effect.all([at(T0), at(T1), at(T2)]))
})
afterAll(() => harness.dispose(), 20_000)

describe("ties", () => {
  test("equal created_at: the id breaks the tie, so pages of 2 cover every row once, in id order both ways", async () => {
    const all = (await list(tied, { per_page: 100, order: "asc" })).items.map((item) => item.id)
    expect(all).toHaveLength(7)
    expect(all).toEqual([...all].sort())
    for (const order of ["asc", "desc"] as const) {
      const walked = await walk(tied, { order }, 2)
      expect(walked.total).toBe(7)
      expect(walked.pages).toBe(4)
      expect(walked.ids).toEqual(order === "asc" ? all : [...all].reverse())
    }
  })

  test("equal names: sorted by name, then by id within each name", async () => {
    const page = await list(tied, { sort: "name", order: "asc", per_page: 100 })
    expect(names(page)).toEqual(["a", "a", "b", "b", "b", "c", "c"])
    for (const name of ["a", "b", "c"]) {
      const ids = page.items.filter((item) => item.name === name).map((item) => item.id)
      expect(ids).toEqual([...ids].sort())
    }
    const walked = await walk(tied, { sort: "name", order: "desc" }, 3)
    expect(walked.ids).toEqual(page.items.map((item) => item.id).reverse())
  })
})

describe("pages", () => {
  test("a page past the end is empty but still tells the total; the last page is short", async () => {
    const past = await list(tied, { page: 5, per_page: 2 })
    expect(past).toMatchObject({ items: [], total: 7, page: 5, per_page: 2 })
    const last = await list(tied, { page: 4, per_page: 2 })
    expect(last.items).toHaveLength(1)
    expect(last.total).toBe(7)
    const huge = await list(tied, { page: Number.MAX_SAFE_INTEGER, per_page: 100 })
    expect(huge).toMatchObject({ items: [], total: 7 })
  })

  test("another user's rows never count: totals are per caller", async () => {
    expect((await list(searcher, { per_page: 1 })).total).toBe(8)
    expect((await list(timed, { per_page: 1 })).total).toBe(3)
  })
})

describe("search", () => {
  test("% _ and \\ are literal characters, not patterns", async () => {
    expect(names(await list(searcher, { search: "100%", sort: "name", order: "asc" }))).toEqual(["100% done"])
    expect(names(await list(searcher, { search: "under_", sort: "name", order: "asc" }))).toEqual(["under_score"])
    expect(names(await list(searcher, { search: "k\\s", sort: "name", order: "asc" }))).toEqual(["back\\slash"])
    expect(names(await list(searcher, { search: "%", sort: "name", order: "asc" }))).toEqual(["100% done"])
    expect(names(await list(searcher, { search: "_", sort: "name", order: "asc" }))).toEqual(["under_score"])
  })

  test("case-insensitive, over name and description; total follows the filter", async () => {
    const found = await list(searcher, { search: "rOcKeT", sort: "name", order: "asc", per_page: 1 })
    expect(found.total).toBe(2)
    expect(names(found)).toEqual(["Rocket"])
    expect(names(await list(searcher, { search: "rocket", sort: "name", order: "asc", page: 2, per_page: 1 }))).toEqual(
      ["plain"]
    )
    expect((await list(searcher, { search: "no such thing" })).total).toBe(0)
  })
})

describe("creation bounds", () => {
  test("created_after and created_before exclude the bound itself", async () => {
    const ids = (page: { readonly items: ReadonlyArray<{ readonly id: string }> }) => page.items.map((item) => item.id)
    expect(ids(await list(timed, { created_after: T0, order: "asc" }))).toEqual([at1, at2])
    expect(ids(await list(timed, { created_before: T2, order: "asc" }))).toEqual([at0, at1])
    expect(ids(await list(timed, { created_after: T0, created_before: T2 }))).toEqual([at1])
    expect((await list(timed, { created_after: T2 })).total).toBe(0)
  })
})

describe("statements", () => {
  const sent = (who: Principal, query: Partial<ListQuery<ProjectSort, "active" | "archived">>) =>
    run(
      captured(
        Effect.flatMap(Projects, (projects) =>
          projects.list(who, { page: 1, per_page: 20, sort: "created_at", order: "desc", ...query })
        )
      )
    )

  test("a page the counters answer is two statements: the teams with the total, then the page", async () => {
    const statements = await sent(tied, {})
    expect(statements).toHaveLength(2)
    expect(statements[0]?.[0]).toContain("UNION ALL")
  })

  test("with a search the rows are counted beside the page: three statements", async () => {
    expect(await sent(searcher, { search: "rocket" })).toHaveLength(3)
  })
})
