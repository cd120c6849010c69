/**
 * Every list shape reads its page in index order: for each list endpoint × status filter (none and each status) ×
 * sort × order, the statements the repository runs are captured as they go to the database and explained
 * (SQLite `EXPLAIN QUERY PLAN`, PostgreSQL `EXPLAIN (FORMAT JSON)`) on the engine `DATABASE_URL` selects. A plan
 * fails when it sorts the whole visible set:
 *
 * - SQLite: a `USE TEMP B-TREE FOR … ORDER BY` whose input is a table scan or search (a sort over a subquery of
 *   LIMITed branches, the project list's merge, reads at most `page × per_page` rows a branch and passes; so does
 *   a grouped branch's per-group top-N, see `sqliteWholeSorts`).
 * - PostgreSQL: a `Sort` or `Incremental Sort` node with a table scan under it that is not below a `Limit` (a
 *   top-N sort over a scan reads every matching row as surely as a full sort does; a nested loop whose inner side
 *   is a `Limit` per outer row bounds it, see `isPerGroup`). The tables are seeded with
 *   thousands of rows among several owners and ANALYZEd, so the planner weighs real statistics: with a
 *   `(owner, sort column, id)` index it walks the index and stops after the page; without one it can only sort.
 *
 * On PostgreSQL each statement's generic plan is checked too (planned without its parameters' values, as a prepared
 * statement may be after its first runs: src/Sql/PgPrepared.ts), so the plans hold whichever PostgreSQL picks.
 *
 * On both, a sort of rows that are all looked up by id from a range of a table in `SHORT_TABLES` on its column
 * passes (the lapsed pending invitations of a team's `expired` page): that range is kept short by something other
 * than the list.
 *
 * Searches and creation bounds are left out: they filter while the same index is walked, so they add no shape.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { ApiKeysRepo } from "../../src/ApiKeys/Repo.ts"
import { DeploymentsRepo } from "../../src/Deployments/Repo.ts"
import { ApiKeyStatus } from "../../src/Domain/ApiKey.ts"
import { deploymentStatuses } from "../../src/Domain/Deployment.ts"
import { EventId, WebhookId } from "../../src/Domain/Ids.ts"
import { invitationStatuses } from "../../src/Domain/Invitation.ts"
import type { ListQuery, Order } from "../../src/Domain/Lists.ts"
import { ProjectStatus } from "../../src/Domain/Project.ts"
import { DeliveryStatus, WebhookStatus } from "../../src/Domain/Webhook.ts"
import { ProjectsRepo } from "../../src/Projects/Repo.ts"
import { InvitationsRepo, TeamsRepo } from "../../src/Teams/Repo.ts"
import { WebhooksRepo } from "../../src/Webhooks/Repo.ts"
import { insertAll as insertRows } from "../support/seed.ts"
import { usingPostgres } from "../support/server.ts"
import { onSelectedEngine, type ServiceHarness } from "../support/services.ts"
import { captured } from "../support/statements.ts"

const repos = Layer.mergeAll(
  ProjectsRepo.Default,
  ApiKeysRepo.Default,
  WebhooksRepo.Default,
  TeamsRepo.Default,
  InvitationsRepo.Default,
  DeploymentsRepo.Default
)
type Repos = Layer.Layer.Success<typeof repos>

/** Rows per list for the user (or team, project, webhook) whose lists are explained; as many again for others. */
const N = 3_000
const iso = (n: number) => new Date(Date.UTC(2025, 0, 1) + n * 1000).toISOString()
const id = (prefix: string, n: number) => `${prefix}_${String(n).padStart(26, "0")}`
const ME = id("usr", 1)
const OTHER = id("usr", 2)
/** In every team: the teams list, and projects seen through more teams than the list reads one by one. */
const JOINER = id("usr", 3)
const TEAM = id("team", 1)
const OTHER_TEAM = id("team", 2)
const PROJECT = id("proj", 1)
const HOOK = id("whk", 1)
const NOW = iso(N * 10)

const seed = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const insertAll = (table: string, rows: ReadonlyArray<Record<string, string | number | null>>) =>
    insertRows(sql, table, rows)
  const range = (count: number) => Array.from({ length: count }, (_, i) => i)
  yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_plans", name: "Plans", created_at: iso(0) })}`
  // Users: me, another, the joiner, and the members of my team (the members list).
  yield* insertAll(
    "users",
    range(N + 3).map((i) => ({
      id: id("usr", i + 1),
      org_id: "org_plans",
      email: `user${i}@example.com`,
      name: `user ${(i * 7919) % 100_003}`,
      avatar_url: null,
      password_hash: null,
      created_at: iso(0),
      updated_at: iso(0)
    }))
  )
  // Teams: mine and another's, then N more the joiner belongs to (the teams list).
  yield* insertAll(
    "teams",
    range(N + 2).map((i) => ({
      id: id("team", i + 1),
      org_id: "org_plans",
      name: `team ${(i * 7919) % 100_003}`,
      created_at: iso(i),
      updated_at: iso(i)
    }))
  )
  yield* insertAll("team_members", [
    ...range(N).map((i) => ({ team_id: TEAM, user_id: id("usr", i + 4), role: "member", joined_at: iso(i) })),
    { team_id: TEAM, user_id: ME, role: "owner", joined_at: iso(0) },
    { team_id: OTHER_TEAM, user_id: ME, role: "member", joined_at: iso(0) },
    ...range(N + 2).map((i) => ({ team_id: id("team", i + 1), user_id: JOINER, role: "member", joined_at: iso(i) })),
    ...range(N).map((i) => ({ team_id: OTHER_TEAM, user_id: id("usr", i + 4), role: "member", joined_at: iso(i) }))
  ])
  // Projects: mine, team projects of others in my team, and others' I must not see; one in ten archived.
  const project = (n: number, owner: string, team: string | null, visibility: string) => ({
    id: id("proj", n),
    owner_id: owner,
    team_id: team,
    name: `project ${(n * 7919) % 100_003}`,
    description: "",
    visibility,
    status: n % 10 === 0 ? "archived" : "active",
    created_at: iso(n),
    updated_at: iso(n)
  })
  yield* insertAll("projects", [
    ...range(N).map((i) => project(i + 1, ME, null, "private")),
    ...range(N).map((i) => project(N + i + 1, OTHER, TEAM, "team")),
    ...range(N).map((i) => project(2 * N + i + 1, OTHER, OTHER_TEAM, i % 2 === 0 ? "team" : "private"))
  ])
  const perUser = <A>(make: (owner: string, i: number, n: number) => A) => [
    ...range(N).map((i) => make(ME, i, i)),
    ...range(N).map((i) => make(OTHER, i, N + i))
  ]
  yield* insertAll(
    "api_keys",
    perUser((user, i, n) => ({
      id: id("key", n),
      user_id: user,
      name: `key ${(i * 7919) % 100_003}`,
      scopes: `["read"]`,
      prefix: `pcs_${n}`,
      key_hash: `hash-${n}`,
      created_at: iso(i),
      expires_at: i % 7 === 0 ? iso(i + 100) : null,
      last_used_at: null,
      revoked_at: i % 11 === 0 ? iso(i + 1) : null
    }))
  )
  yield* insertAll(
    "webhooks",
    perUser((user, i, n) => ({
      id: id("whk", n + 1),
      user_id: user,
      url: `https://example.com/${n}`,
      events: `["project.created"]`,
      secret: "s",
      status: i % 10 === 0 ? "failed" : "active",
      created_at: iso(i),
      updated_at: iso(i),
      failed_at: null
    }))
  )
  yield* insertAll("events", [
    { id: id("evt", 1), type: "project.created", payload: "{}", trace_context: null, created_at: iso(0) }
  ])
  yield* insertAll(
    "deliveries",
    [HOOK, id("whk", 2)].flatMap((hook, h) =>
      range(N).map((i) => ({
        id: id("dlv", h * N + i),
        webhook_id: hook,
        event_id: id("evt", 1),
        event_type: "project.created",
        status: i % 10 === 0 ? "failed" : "delivered",
        attempt_count: 1,
        manual: 0,
        next_attempt_at: null,
        last_attempt_at: iso(i),
        claimed_until: null,
        claim_token: null,
        created_at: iso(i)
      }))
    )
  )
  // One attempt per delivery: the list reads each page row's last status code by the attempts' primary key.
  yield* insertAll(
    "delivery_attempts",
    range(2 * N).map((n) => ({
      delivery_id: id("dlv", n),
      number: 1,
      attempted_at: iso(n % N),
      duration_ms: 5,
      status_code: 200,
      error: null,
      response_body: "",
      outcome: "succeeded"
    }))
  )
  yield* insertAll(
    "deployments",
    [PROJECT, id("proj", 2)].flatMap((project, p) =>
      range(N).map((i) => ({
        id: id("dpl", p * N + i),
        project_id: project,
        environment: i % 3 === 0 ? "staging" : "production",
        ref: "main",
        description: "",
        status: deploymentStatuses[i % deploymentStatuses.length] ?? "succeeded",
        created_by: ME,
        created_at: iso(i),
        updated_at: iso(i),
        finished_at: iso(i)
      }))
    )
  )
  // Every stored status; a pending invitation lapses (reads as `expired`) in one case of four.
  const invitation = (n: number, team: string, email: string, i: number) => ({
    id: id("inv", n),
    team_id: team,
    email,
    role: "member",
    status: ["pending", "accepted", "pending", "declined", "revoked", "expired"][i % 6] ?? "accepted",
    invited_by: ME,
    created_at: iso(i),
    expires_at: iso(i % 4 === 0 ? 1 : N * 20),
    answered_at: null
  })
  yield* insertAll("invitations", [
    // Many invitations of my team and another, to other addresses (one pending per team and address: a unique
    // index holds it).
    ...[TEAM, OTHER_TEAM].flatMap((team, t) =>
      range(N).map((i) => invitation(t * N + i, team, `invitee${t * N + i}@example.com`, i))
    ),
    // Many to my address, each from another of the joiner's teams (as many as there are teams inviting it).
    ...range(N).map((i) => invitation(2 * N + i, id("team", i + 3), "me@example.com", i))
  ])
  yield* usingPostgres() ? sql`VACUUM ANALYZE` : sql`ANALYZE`
})

interface Shape {
  readonly name: string
  readonly run: (query: ListQuery<string, string>) => Effect.Effect<unknown, unknown, Repos | SqlClient.SqlClient>
  readonly sorts: ReadonlyArray<string>
  /** Status filters besides none. */
  readonly statuses: ReadonlyArray<string>
}

/** The repositories' list calls with their sort keys and statuses, as their endpoints accept them. */
const shapes: ReadonlyArray<Shape> = [
  {
    name: "projects",
    sorts: ["created_at", "updated_at", "name"],
    statuses: ProjectStatus.literals,
    run: (query) =>
      Effect.flatMap(ProjectsRepo, (repo) =>
        repo.list(ME, {
          ...query,
          sort: query.sort === "name" ? "name" : query.sort === "updated_at" ? "updated_at" : "created_at",
          status: ProjectStatus.literals.find((s) => s === query.status)
        })
      )
  },
  {
    name: "projects of a user in more teams than the list reads one by one",
    sorts: ["created_at"],
    statuses: ProjectStatus.literals,
    run: (query) =>
      Effect.flatMap(ProjectsRepo, (repo) =>
        repo.list(JOINER, {
          ...query,
          sort: "created_at",
          status: ProjectStatus.literals.find((s) => s === query.status)
        })
      )
  },
  {
    name: "API keys",
    sorts: ["created_at", "name"],
    statuses: ApiKeyStatus.literals,
    run: (query) =>
      Effect.flatMap(ApiKeysRepo, (repo) =>
        repo.list(
          ME,
          {
            ...query,
            sort: query.sort === "name" ? "name" : "created_at",
            status: ApiKeyStatus.literals.find((s) => s === query.status)
          },
          NOW
        )
      )
  },
  {
    name: "webhooks",
    sorts: ["created_at", "updated_at"],
    statuses: WebhookStatus.literals,
    run: (query) =>
      Effect.flatMap(WebhooksRepo, (repo) =>
        repo.list(ME, {
          ...query,
          sort: query.sort === "updated_at" ? "updated_at" : "created_at",
          status: WebhookStatus.literals.find((s) => s === query.status)
        })
      )
  },
  {
    name: "deliveries of a webhook",
    sorts: ["created_at"],
    statuses: DeliveryStatus.literals,
    run: (query) =>
      Effect.flatMap(WebhooksRepo, (repo) =>
        repo.listDeliveries(WebhookId.make(HOOK), {
          ...query,
          sort: "created_at",
          status: DeliveryStatus.literals.find((s) => s === query.status)
        })
      )
  },
  {
    name: "deployments of a project",
    sorts: ["created_at", "updated_at"],
    statuses: deploymentStatuses,
    run: (query) =>
      Effect.flatMap(DeploymentsRepo, (repo) =>
        repo.list(PROJECT, {
          ...query,
          sort: query.sort === "updated_at" ? "updated_at" : "created_at",
          status: deploymentStatuses.find((s) => s === query.status)
        })
      )
  },
  {
    name: "teams of a user",
    sorts: ["created_at", "updated_at", "name"],
    statuses: [],
    run: (query) =>
      Effect.flatMap(TeamsRepo, (repo) =>
        repo.listFor(JOINER, {
          ...query,
          sort: query.sort === "name" ? "name" : query.sort === "updated_at" ? "updated_at" : "created_at"
        })
      )
  },
  {
    name: "members of a team",
    sorts: ["joined_at", "name"],
    statuses: [],
    run: (query) =>
      Effect.flatMap(TeamsRepo, (repo) =>
        repo.listMembers(TEAM, { ...query, sort: query.sort === "name" ? "name" : "joined_at" })
      )
  },
  {
    name: "invitations of a team",
    sorts: ["created_at"],
    statuses: invitationStatuses,
    run: (query) =>
      Effect.flatMap(InvitationsRepo, (repo) =>
        repo.listForTeam(
          TEAM,
          { ...query, sort: "created_at", status: invitationStatuses.find((s) => s === query.status) },
          NOW
        )
      )
  },
  {
    name: "my invitations",
    sorts: ["created_at"],
    // The endpoint's default is `pending`; `all` is what no status filter means here.
    statuses: [...invitationStatuses],
    run: (query) =>
      Effect.flatMap(InvitationsRepo, (repo) =>
        repo.listAddressedTo(
          "me@example.com",
          invitationStatuses.find((s) => s === query.status) ?? "all",
          { ...query, sort: "created_at" },
          NOW
        )
      )
  }
]

interface SqlitePlanRow {
  readonly id: number
  readonly parent: number
  readonly detail: string
}

/** The text of each `IN (SELECT …)` subquery of `statement`, up to its matching parenthesis. */
const inSubqueries = (statement: string): ReadonlyArray<string> =>
  [...statement.matchAll(/\bIN \(\s*SELECT\b/gi)].map((match) => {
    const start = match.index + match[0].indexOf("(") + 1
    let depth = 1
    let end = start
    for (; end < statement.length && depth > 0; end++) {
      if (statement[end] === "(") depth++
      if (statement[end] === ")") depth--
    }
    return statement.slice(start, end - 1)
  })

/**
 * Tables a list may read a range of and sort, each with the column of that range: the range is kept short by
 * something other than the list, whatever the number of rows the list shows. `invitation_expiries` (migration
 * 0016): a team's rows past their expiry are its invitations that lapsed since the retention sweep last marked them
 * `expired` (src/Retention/). Read any other way (the whole table, or a range of another column), it is not short.
 */
const SHORT_TABLES: ReadonlyMap<string, string> = new Map([["invitation_expiries", "expires_at"]])

/** SQLite: a plan row that searches a `SHORT_TABLES` table by a range of its column. */
const searchesShortRange = (detail: string): boolean => {
  const [, table, condition] = /^SEARCH (\S+) USING .*\((.*)\)$/.exec(detail) ?? []
  const column = SHORT_TABLES.get(table ?? "")
  return column !== undefined && new RegExp(`\\b${column}[<>]`).test(condition ?? "")
}

/**
 * SQLite: the sorts over a table's rows. A temp B-tree's input is what its siblings (the rows with the same
 * parent) read; a `SCAN`/`SEARCH` of a subquery (a `CO-ROUTINE` or `MATERIALIZE` by that name) is a merge of
 * bounded branches, anything else is a table. Except a grouped branch's per-group top-N (src/Sql/Lists.ts
 * `groupedSelect`): rows looked up by id (`(id=?)`) from a correlated list subquery whose `LIMIT` bounds them per
 * group, beside the search of the groups; it sorts at most groups × `page × per_page` rows. EXPLAIN QUERY PLAN
 * does not show that `LIMIT`, so `statement` must hold one in each `IN (…)` subquery (and PostgreSQL's plan of the
 * same statement shows its `Limit`). And rows looked up by id from a list subquery (the sort's sibling, or under
 * one) that searches a `SHORT_TABLES` range (`searchesShortRange`).
 */
const sqliteWholeSorts = (rows: ReadonlyArray<SqlitePlanRow>, statement: string): ReadonlyArray<string> => {
  const subqueries = new Set(
    rows.flatMap((row) => {
      const match = /^(?:CO-ROUTINE|MATERIALIZE) (\S+)/.exec(row.detail)
      return match?.[1] === undefined ? [] : [match[1]]
    })
  )
  const limitedInLists = inSubqueries(statement).every((subquery) => /\bLIMIT\b/.test(subquery))
  return rows
    .filter((row) => /^USE TEMP B-TREE FOR .*ORDER BY/.test(row.detail))
    .flatMap((sort) => {
      const siblings = rows.filter((row) => row.parent === sort.parent && row.id !== sort.id)
      const tables = siblings.filter((row) => {
        const match = /^(?:SCAN|SEARCH) (\S+)/.exec(row.detail)
        return match?.[1] !== undefined && !subqueries.has(match[1])
      })
      const perGroup =
        limitedInLists &&
        siblings.some((row) => /^CORRELATED LIST SUBQUERY/.test(row.detail)) &&
        tables.some((row) => /^SEARCH \S+ USING .*\(id=\?\)$/.test(row.detail)) &&
        tables.every((row) => /^SEARCH /.test(row.detail))
      const fromShortRange =
        tables.every((row) => /^SEARCH \S+ USING .*\(id=\?\)$/.test(row.detail)) &&
        rows.some(
          (list) =>
            /^LIST SUBQUERY/.test(list.detail) &&
            (list.parent === sort.parent || siblings.some((sibling) => sibling.id === list.parent)) &&
            rows.some((row) => row.parent === list.id && searchesShortRange(row.detail))
        )
      return perGroup || fromShortRange ? [] : tables.map((row) => `${sort.detail} over ${row.detail}`)
    })
}

interface PgPlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Index Cond"?: string
  readonly Plans?: ReadonlyArray<PgPlanNode>
}

const isTableScan = (node: PgPlanNode) => node["Relation Name"] !== undefined

const relations = (node: PgPlanNode): ReadonlyArray<string> => [
  ...(node["Relation Name"] !== undefined ? [node["Relation Name"]] : []),
  ...(node.Plans ?? []).flatMap(relations)
]

/** Under a `Memoize` or `Materialize` (which only replay their input), a `Limit`. */
const isLimited = (node: PgPlanNode | undefined): boolean =>
  node !== undefined &&
  (node["Node Type"] === "Limit" || (/^(Memoize|Materialize)$/.test(node["Node Type"]) && isLimited(node.Plans?.[0])))

/**
 * A grouped branch's per-group top-N (src/Sql/Lists.ts `groupedSelect`): a nested loop whose inner side is a
 * `Limit` (run once per outer row) over other tables than the outer side reads (the groups). It passes on at most
 * groups × `page × per_page` rows, not the listed rows.
 */
const isPerGroup = (node: PgPlanNode): boolean => {
  if (node["Node Type"] !== "Nested Loop") return false
  const [outer, inner] = node.Plans ?? []
  if (outer === undefined || !isLimited(inner)) return false
  const listed = new Set(inner === undefined ? [] : relations(inner))
  return relations(outer).every((relation) => !listed.has(relation))
}

/** Whether a table scan lies under `node` with no `Limit` between them. */
const scansUnbounded = (node: PgPlanNode): boolean =>
  isTableScan(node) || (node["Node Type"] !== "Limit" && !isPerGroup(node) && (node.Plans ?? []).some(scansUnbounded))

/** The table scans under `node`. */
const scans = (node: PgPlanNode): ReadonlyArray<PgPlanNode> => [
  ...(isTableScan(node) ? [node] : []),
  ...(node.Plans ?? []).flatMap(scans)
]

/** Whether every row under `node` is read from a `SHORT_TABLES` range or looked up by primary key from one. */
const fromShortRange = (node: PgPlanNode): boolean => {
  const read = scans(node)
  const isKeyLookup = (scan: PgPlanNode) =>
    /Index( Only)? Scan/.test(scan["Node Type"]) &&
    /_pkey$/.test(scan["Index Name"] ?? "") &&
    /^\(id = /.test(scan["Index Cond"] ?? "")
  // An index scan whose condition bounds the table's column (`expires_at <= …`), not a read of the whole table.
  const isShortRange = (scan: PgPlanNode) => {
    const column = SHORT_TABLES.get(scan["Relation Name"] ?? "")
    return (
      column !== undefined &&
      /Index( Only)? Scan/.test(scan["Node Type"]) &&
      new RegExp(`\\b${column} [<>]`).test(scan["Index Cond"] ?? "")
    )
  }
  return read.some(isShortRange) && read.every((scan) => isShortRange(scan) || isKeyLookup(scan))
}

/** PostgreSQL: the sorts with a table scan under them that no `Limit` bounds. */
const pgWholeSorts = (node: PgPlanNode): ReadonlyArray<string> => [
  ...(/Sort$/.test(node["Node Type"]) && (node.Plans ?? []).some(scansUnbounded) && !fromShortRange(node)
    ? [`${node["Node Type"]} over ${JSON.stringify(node.Plans)}`]
    : []),
  ...(node.Plans ?? []).flatMap(pgWholeSorts)
]

const explain = ([text, params]: readonly [string, ReadonlyArray<unknown>]) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    if (usingPostgres()) {
      const [row] = yield* sql.unsafe<{ readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PgPlanNode }> }>(
        `EXPLAIN (FORMAT JSON) ${text}`,
        params
      )
      const plan = row?.["QUERY PLAN"][0]?.Plan
      return { plan, whole: plan === undefined ? ["no plan"] : pgWholeSorts(plan) }
    }
    const rows = yield* sql.unsafe<SqlitePlanRow>(`EXPLAIN QUERY PLAN ${text}`, params)
    return { plan: rows.map((row) => row.detail), whole: sqliteWholeSorts(rows, text) }
  })

/**
 * PostgreSQL's generic plan of a statement (the one a prepared statement may settle on after its first runs,
 * planned without its parameters' values: src/Sql/PgPrepared.ts), explained as `explain` explains the custom one.
 */
const explainGeneric = ([text, params]: readonly [string, ReadonlyArray<unknown>]) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(`PREPARE plan_check AS ${text}`)
    yield* sql.unsafe("SET LOCAL plan_cache_mode = force_generic_plan")
    // EXECUTE takes its arguments as literals (a utility statement has no parameters of its own).
    const literal = (value: unknown) =>
      value === null ? "NULL" : typeof value === "number" ? String(value) : `'${String(value).replaceAll("'", "''")}'`
    const [row] = yield* sql.unsafe<{ readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PgPlanNode }> }>(
      `EXPLAIN (FORMAT JSON) EXECUTE plan_check (${params.map(literal).join(", ")})`
    )
    yield* sql.unsafe("DEALLOCATE plan_check")
    const plan = row?.["QUERY PLAN"][0]?.Plan
    return { plan, whole: plan === undefined ? ["no plan"] : pgWholeSorts(plan) }
  }).pipe((check) => Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(check)))

interface Case {
  readonly label: string
  readonly shape: Shape
  readonly query: ListQuery<string, string>
}

const orders: ReadonlyArray<Order> = ["desc", "asc"]
const cases: ReadonlyArray<Case> = shapes.flatMap((shape) =>
  shape.sorts.flatMap((sort) =>
    orders.flatMap((order) =>
      [undefined, ...shape.statuses].map((status) => ({
        label: `${shape.name}, sort=${sort} order=${order}${status === undefined ? "" : ` status=${status}`}`,
        shape,
        query: { page: 1, per_page: 20, sort, order, status }
      }))
    )
  )
)

const engine = usingPostgres() ? "PostgreSQL" : "SQLite"

let harness: ServiceHarness<Repos>

beforeAll(async () => {
  harness = await onSelectedEngine(repos)
  await harness.run(seed)
}, 120_000)

afterAll(() => harness.dispose(), 20_000)

describe(`list query plans (${engine})`, () => {
  test("the seed is what the plans are read against", async () => {
    const page = await harness.run(
      Effect.flatMap(ProjectsRepo, (repo) =>
        repo.list(ME, { page: 1, per_page: 20, sort: "created_at", order: "desc" })
      )
    )
    // Mine, the team projects of others in my team, and the half of the other team's that are `team` projects.
    expect(page.total).toBe(2 * N + N / 2)
    expect(page.items).toHaveLength(20)
  })

  // Whole sorts the checks must see: no index in the sort order, the team projects of several teams as one `IN`,
  // members sorted by a column of the joined users, the grouped shape without its per-group `LIMIT`, and the
  // shape `SHORT_TABLES` lets pass on a table that is not one of them, and on one of them read by another range
  // (a team's stored-pending invitations, not only its lapsed ones; a team with none, so each engine looks them up
  // by id rather than reading `invitations` whole).
  const wholeSorts = {
    "no index in the sort order": `SELECT id FROM projects WHERE owner_id = '${ME}' ORDER BY description, id LIMIT 20`,
    "several teams' projects as one IN": `SELECT p.id FROM projects p WHERE p.visibility = 'team' AND p.team_id IN (
      SELECT team_id FROM team_members WHERE user_id = '${JOINER}') ORDER BY p.created_at DESC, p.id DESC LIMIT 20`,
    "members by the joined users' name": `SELECT u.id FROM team_members m JOIN users u ON u.id = m.user_id
      WHERE m.team_id = '${TEAM}' ORDER BY u.name, u.id LIMIT 20`,
    "projects per team without a LIMIT per team": usingPostgres()
      ? `SELECT x.* FROM team_members g CROSS JOIN LATERAL (
          SELECT p.id, p.created_at FROM projects p WHERE p.team_id = g.team_id AND p.visibility = 'team') x
        WHERE g.user_id = '${JOINER}' ORDER BY x.created_at DESC, x.id DESC LIMIT 20`
      : `SELECT p.id FROM team_members g JOIN projects p ON p.id IN (
          SELECT p.id FROM projects p WHERE (p.team_id = g.team_id AND p.visibility = 'team'))
        WHERE g.user_id = '${JOINER}' ORDER BY p.created_at DESC, p.id DESC LIMIT 20`,
    "rows by id from a range of a table that is not kept short": `SELECT p.id FROM projects p WHERE p.id IN (
      SELECT id FROM projects WHERE owner_id = '${ME}') ORDER BY p.created_at DESC, p.id DESC LIMIT 20`,
    "rows by id from the short table, not its short range": `SELECT i.id FROM invitations i WHERE i.id IN (
      SELECT invitation_id FROM invitation_expiries WHERE team_id = '${id("team", 999_999)}')
      ORDER BY i.created_at DESC, i.id DESC LIMIT 20`
  }
  for (const [name, sql] of Object.entries(wholeSorts)) {
    test(`the checks see a sort of the whole set when there is one: ${name}`, async () => {
      const { whole } = await harness.run(explain([sql, []]))
      expect(whole.length).toBeGreaterThan(0)
    })
  }

  test.skipIf(!usingPostgres())("the checks see a whole sort in a generic plan too", async () => {
    const { plan, whole } = await harness.run(
      explainGeneric([`SELECT id FROM projects WHERE owner_id = $1 ORDER BY description, id LIMIT 20`, [ME]])
    )
    expect(JSON.stringify(plan)).toContain("$1")
    expect(whole.length).toBeGreaterThan(0)
  })

  for (const c of cases) {
    test(`${c.label}: page 1 in index order`, async () => {
      const statements = await harness.run(captured(c.shape.run(c.query)))
      expect(statements.some(([text]) => /ORDER BY/i.test(text))).toBe(true)
      for (const statement of statements) {
        const { plan, whole } = await harness.run(explain(statement))
        expect({ statement: statement[0], whole, plan }).toEqual({ statement: statement[0], whole: [], plan })
        if (usingPostgres() && statement[1].length > 0) {
          const generic = await harness.run(explainGeneric(statement))
          // Planned without the values: the parameters stay `$n` in its conditions.
          expect(JSON.stringify(generic.plan)).toMatch(/\$\d/)
          expect({ statement: statement[0], generic: generic.whole, plan: generic.plan }).toEqual({
            statement: statement[0],
            generic: [],
            plan: generic.plan
          })
        }
      }
    })
  }
})

const isPgPlanNode = (plan: unknown): plan is PgPlanNode =>
  typeof plan === "object" && plan !== null && "Node Type" in plan

/** The tables read by a plan whole (SQLite `SCAN <table or alias>`, PostgreSQL `Seq Scan`), among `tables`. */
const wholeReads = (plan: unknown, tables: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (Array.isArray(plan)) {
    return plan.filter((detail): detail is string =>
      tables.some((table) => typeof detail === "string" && new RegExp(`^SCAN ${table}\\b`).test(detail))
    )
  }
  const walk = (node: PgPlanNode): ReadonlyArray<string> => [
    ...(node["Node Type"] === "Seq Scan" && tables.includes(node["Relation Name"] ?? "")
      ? [`Seq Scan on ${node["Relation Name"]}`]
      : []),
    ...(node.Plans ?? []).flatMap(walk)
  ]
  return isPgPlanNode(plan) ? walk(plan) : ["no plan"]
}

describe(`webhook health and an event's deliveries: query plans (${engine})`, () => {
  test("a page's health is one statement that walks deliveries_webhook_attempted and reads no table whole", async () => {
    // A page of my webhooks, two of them with N deliveries each, a hundred of those attempted since `since`.
    const ids = Array.from({ length: 20 }, (_, i) => id("whk", i + 1))
    const since = iso(N - 100)
    const statements = await harness.run(captured(Effect.flatMap(WebhooksRepo, (repo) => repo.healthOf(ids, since))))
    expect(statements).toHaveLength(1)
    const statement = statements[0]!
    const { plan } = await harness.run(explain(statement))
    const read = [
      "deliveries",
      "delivery_attempts",
      "webhooks",
      // SQLite names a table by its alias in the statement.
      "d",
      "t",
      "x",
      "a",
      "w"
    ]
    expect({ whole: wholeReads(plan, read), plan }).toEqual({ whole: [], plan })
    expect(JSON.stringify(plan)).toContain("deliveries_webhook_attempted")
    if (usingPostgres()) {
      const generic = await harness.run(explainGeneric(statement))
      expect({ whole: wholeReads(generic.plan, read), plan: generic.plan }).toEqual({ whole: [], plan: generic.plan })
      expect(JSON.stringify(generic.plan)).toContain("deliveries_webhook_attempted")
    }
    // What it answers: the two webhooks with deliveries, a hundred attempts each since `since`, all successful.
    const rows = await harness.run(Effect.flatMap(WebhooksRepo, (repo) => repo.healthOf(ids, since)))
    expect(rows.map((row) => [row.webhook_id, row.attempts, row.succeeded, row.last_attempt_at]).sort()).toEqual([
      [HOOK, 100, 100, iso(N - 1)],
      [id("whk", 2), 100, 100, iso(N - 1)]
    ])
  })

  test("an event's deliveries are read by the event's index, with their webhooks by primary key", async () => {
    // Events as they come: each delivered to a webhook or two (the seed's one event has thousands of deliveries,
    // which the planner's statistics would take for the rule). Added here, after the list plans above.
    await harness.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const range = (count: number) => Array.from({ length: count }, (_, i) => i)
        yield* insertRows(
          sql,
          "events",
          range(N).map((i) => ({
            id: id("evt", 100 + i),
            type: "project.created",
            payload: "{}",
            trace_context: null,
            created_at: iso(i)
          }))
        )
        yield* insertRows(
          sql,
          "deliveries",
          range(N).flatMap((i) =>
            [HOOK, id("whk", N + 1)].map((hook, h) => ({
              id: id("dlv", 10 * N + 2 * i + h),
              webhook_id: hook,
              event_id: id("evt", 100 + i),
              event_type: "project.created",
              status: "delivered",
              attempt_count: 1,
              manual: 0,
              next_attempt_at: null,
              last_attempt_at: iso(i),
              claimed_until: null,
              claim_token: null,
              created_at: iso(i)
            }))
          )
        )
        yield* usingPostgres() ? sql`VACUUM ANALYZE` : sql`ANALYZE`
      })
    )
    const statements = await harness.run(
      captured(
        Effect.flatMap(WebhooksRepo, (repo) =>
          repo.listEventDeliveries(ME, EventId.make(id("evt", 100 + N / 2)), {
            page: 1,
            per_page: 20,
            sort: "created_at",
            order: "desc"
          })
        )
      )
    )
    for (const statement of statements) {
      const { plan } = await harness.run(explain(statement))
      expect({ whole: wholeReads(plan, ["deliveries", "webhooks", "d", "w"]), plan }).toEqual({ whole: [], plan })
      expect(JSON.stringify(plan)).toContain("deliveries_event")
    }
    // Mine only (the other webhook's delivery of the same event is another user's).
    const page = await harness.run(
      Effect.flatMap(WebhooksRepo, (repo) =>
        repo.listEventDeliveries(ME, EventId.make(id("evt", 100 + N / 2)), {
          page: 1,
          per_page: 20,
          sort: "created_at",
          order: "desc"
        })
      )
    )
    expect(page.items.map((d): string => d.webhook_id)).toEqual([HOOK])
  })
})

/**
 * A database that is one team's invitations: a quarter pending, all open with one expiry, the rest answered. The
 * planner's statistics then say a team holds every row (above, spread over thousands of teams, they say a team
 * holds a handful), and an index of the pending invitations by expiry looked like the short way to the `pending`
 * page: SQLite read all of them and sorted them. Each status's page must still walk the index in order.
 */
/** Enough that reading them all costs the planner more than walking an index (PostgreSQL reads a small table whole). */
const ONE_TEAM_INVITATIONS = 30_000

describe(`list query plans, one team's invitations (${engine})`, () => {
  const team = id("team", 1)
  let single: ServiceHarness<InvitationsRepo>

  beforeAll(async () => {
    single = await onSelectedEngine(InvitationsRepo.Default)
    await single.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`INSERT INTO orgs ${sql.insert({ id: "org_one", name: "One", created_at: iso(0) })}`
        yield* insertRows(sql, "users", [
          {
            id: ME,
            org_id: "org_one",
            email: "me@example.com",
            name: "me",
            avatar_url: null,
            password_hash: null,
            created_at: iso(0),
            updated_at: iso(0)
          }
        ])
        yield* insertRows(sql, "teams", [
          { id: team, org_id: "org_one", name: "one", created_at: iso(0), updated_at: iso(0) }
        ])
        yield* insertRows(
          sql,
          "invitations",
          Array.from({ length: ONE_TEAM_INVITATIONS }, (_, i) => ({
            id: id("inv", i),
            team_id: team,
            email: `open${i}@example.com`,
            role: "member",
            status: i % 4 === 0 ? "pending" : "accepted",
            invited_by: ME,
            created_at: iso(i),
            expires_at: iso(N * 20),
            answered_at: null
          }))
        )
        yield* usingPostgres() ? sql`VACUUM ANALYZE` : sql`ANALYZE`
      })
    )
  }, 60_000)

  afterAll(() => single.dispose(), 20_000)

  for (const status of [undefined, ...invitationStatuses]) {
    test(`status=${status ?? "none"}: page 1 in index order`, async () => {
      const statements = await single.run(
        captured(
          Effect.flatMap(InvitationsRepo, (repo) =>
            repo.listForTeam(team, { page: 1, per_page: 20, sort: "created_at", order: "desc", status }, NOW)
          )
        )
      )
      expect(statements.some(([text]) => /ORDER BY/i.test(text))).toBe(true)
      for (const statement of statements) {
        const { plan, whole } = await single.run(explain(statement))
        expect({ statement: statement[0], whole, plan }).toEqual({ statement: statement[0], whole: [], plan })
      }
    })
  }
})
