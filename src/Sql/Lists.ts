/**
 * One list query for every list endpoint: the resource's own conditions, then search, creation bounds,
 * sort with an `id` tie-break (so pages never overlap or skip), a true total and one page.
 *
 * The total is read from counters (migration 0006, kept by triggers in the writing transaction) when the list
 * gives a `total` for the query and the caller asked for no search or creation bound: a sum over a few counter
 * rows, the same cost at any size. Otherwise it is a count of the matching rows, which grows with them.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import type { ListQuery, Page } from "../Domain/Lists.js"
import { Count } from "./Repository.js"

export interface ListSpec<Sort extends string> {
  /** `FROM …` and any joins. */
  readonly from: Fragment
  /**
   * The `FROM` the total is counted over, when the joins of `from` only add columns (each row has exactly one match):
   * the count then reads the main table alone, not the joins too.
   */
  readonly countFrom?: Fragment
  readonly select: Fragment
  /** Conditions that always hold (whose rows these are, the status filter…). */
  readonly where: ReadonlyArray<Fragment>
  /** Column behind each sort key; `created_at` is also the column the date bounds apply to. */
  readonly columns: Record<Sort, string> & { readonly created_at?: string }
  readonly createdColumn: string
  readonly idColumn: string
  readonly searchColumns: ReadonlyArray<string>
  /**
   * The true total from counters, as a scalar SQL expression, when they can answer the list's own conditions
   * (`where`, `branches`); used only when the query has no search or creation bound (counters know neither). Or
   * that total already read, by a statement the caller sent anyway (the projects list reads it with the user's
   * teams): then the list sends no statement for it.
   */
  readonly total?: Fragment | number | undefined
}

/**
 * A branch read group by group (e.g. the `team` projects of each team of the user), in one statement whatever the
 * number of groups: each group's first `page × per_page` rows in sort order (one ordered walk of the group's index),
 * then the first `page × per_page` of those. So it sorts at most groups × `page × per_page` rows, not the branch's
 * rows.
 */
export interface GroupedBranch {
  /** The groups: `FROM` (alias `g`) and conditions, e.g. `team_members g` where `g.user_id = $user`. */
  readonly groups: Fragment
  readonly groupsWhere: ReadonlyArray<Fragment>
  /** A row of one group, with `g` in scope, e.g. `p.team_id = g.team_id`. */
  readonly where: ReadonlyArray<Fragment>
  /** The same rows without `g`, for the count (which needs no order), e.g. `p.team_id IN (…)`. */
  readonly count: ReadonlyArray<Fragment>
}

/** A list over disjoint branches (each a list of conditions, and a grouped one), merged in sort order; see `runUnion`. */
export interface UnionListSpec<Sort extends string> extends ListSpec<Sort> {
  readonly branches: ReadonlyArray<ReadonlyArray<Fragment>>
  readonly grouped?: GroupedBranch | undefined
}

/**
 * Both sides go through the database's own `lower()`, so folding is the same for the column and the term (SQLite
 * folds ASCII letters only; PostgreSQL follows its locale).
 */
const likePattern = (search: string) => `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

/** The caller's filters: search, then the creation bounds. */
const filters = <Sort extends string>(sql: SqlClient.SqlClient, spec: ListSpec<Sort>, query: ListQuery<Sort>) => {
  const conditions: Array<Fragment> = []
  if (query.search !== undefined && query.search !== "") {
    const pattern = likePattern(query.search)
    conditions.push(
      sql.or(spec.searchColumns.map((column) => sql`lower(${sql(column)}) LIKE lower(${pattern}) ESCAPE '\\'`))
    )
  }
  if (query.created_after !== undefined) conditions.push(sql`${sql(spec.createdColumn)} > ${query.created_after}`)
  if (query.created_before !== undefined) conditions.push(sql`${sql(spec.createdColumn)} < ${query.created_before}`)
  return conditions
}

/** Whether the caller narrowed the list beyond its own conditions (what no counter answers). */
const hasFilters = (query: ListQuery<string>) =>
  (query.search !== undefined && query.search !== "") ||
  query.created_after !== undefined ||
  query.created_before !== undefined

/**
 * The total: the counters' when they answer this query (no statement when the caller has read it already), else
 * `count`, the rows counted.
 */
const readTotal = <Sort extends string>(
  sql: SqlClient.SqlClient,
  spec: ListSpec<Sort>,
  query: ListQuery<Sort>,
  count: Fragment
): Effect.Effect<ReadonlyArray<{ readonly total: unknown }>, SqlError> =>
  spec.total === undefined || hasFilters(query)
    ? sql<{ readonly total: unknown }>`${count}`
    : typeof spec.total === "number"
      ? Effect.succeed([{ total: spec.total }])
      : sql<{ readonly total: unknown }>`SELECT CAST(COALESCE(${spec.total}, 0) AS INTEGER) AS total`

/**
 * `COALESCE((SELECT sum(n) FROM <counter> WHERE …), 0)`: a counter table's rows matching `where` (see migration
 * 0006; a key may be spread over several rows, so always a sum).
 */
export const counterSum = (sql: SqlClient.SqlClient, table: string, where: ReadonlyArray<Fragment>): Fragment =>
  sql`COALESCE((SELECT sum(n) FROM ${sql(table)} WHERE ${sql.and(where)}), 0)`

/** `p.created_at` → `created_at`: the name a qualified column has in a derived table. */
const bare = (column: string) => column.slice(column.lastIndexOf(".") + 1)

const runList = Effect.fnUntraced(function* <Sort extends string>(spec: ListSpec<Sort>, query: ListQuery<Sort>) {
  const sql = yield* SqlClient.SqlClient
  const conditions: Array<Fragment> = [...spec.where, ...filters(sql, spec, query)]
  const where = conditions.length > 0 ? sql`WHERE ${sql.and(conditions)}` : sql``
  const direction = sql.unsafe(query.order === "asc" ? "ASC" : "DESC")
  const [counted, rows] = yield* Effect.all([
    readTotal(
      sql,
      spec,
      query,
      sql`SELECT CAST(count(*) AS INTEGER) AS total FROM ${spec.countFrom ?? spec.from} ${where}`
    ),
    sql`
        SELECT ${spec.select} FROM ${spec.from} ${where}
        ORDER BY ${sql(spec.columns[query.sort])} ${direction}, ${sql(spec.idColumn)} ${direction}
        LIMIT ${query.per_page} OFFSET ${(query.page - 1) * query.per_page}`
  ])
  return { counted, rows }
})

/**
 * A list whose rows are the union of disjoint `branches` (e.g. "projects I own" and "team projects of team T
 * not owned by me"). An `OR` of such conditions makes both engines read every matching row and sort them; as
 * separate branches each one walks its own `(condition, sort column, id)` index in order and stops after
 * `page × per_page` rows, and only those are merged. So page 1 costs the same whatever the number of rows; page n
 * reads n pages from each branch. A `grouped` branch stands for one such branch per group (see `GroupedBranch`).
 * The total is a sum of per-branch counts, each an index-only range count: it still grows with the number of rows
 * (docs/lists.md), but reads no table rows and sorts nothing.
 */
const runUnion = Effect.fnUntraced(function* <Row extends object, Sort extends string>(
  spec: UnionListSpec<Sort>,
  query: ListQuery<Sort>
) {
  const sql = yield* SqlClient.SqlClient
  const common = [...spec.where, ...filters(sql, spec, query)]
  const direction = sql.unsafe(query.order === "asc" ? "ASC" : "DESC")
  const sortColumn = spec.columns[query.sort]
  const reach = query.page * query.per_page
  const whereOf = (branch: ReadonlyArray<Fragment>) => sql.and([...branch, ...common])
  const order = sql`${sql(sortColumn)} ${direction}, ${sql(spec.idColumn)} ${direction}`
  const grouped = spec.grouped
  const selects: ReadonlyArray<Fragment> = [
    ...spec.branches.map(
      (branch) => sql`SELECT ${spec.select} FROM ${spec.from} WHERE ${whereOf(branch)} ORDER BY ${order} LIMIT ${reach}`
    ),
    ...(grouped !== undefined
      ? [groupedSelect(sql, spec, grouped, whereOf(grouped.where), sortColumn, direction, reach)]
      : [])
  ]
  const union = selects.map((select, i) => sql`SELECT * FROM (${select}) ${sql.literal(`b${i}`)}`)
  const counts = [...spec.branches, ...(grouped !== undefined ? [grouped.count] : [])].map(
    (branch) => sql`(SELECT count(*) FROM ${spec.countFrom ?? spec.from} WHERE ${whereOf(branch)})`
  )
  const [counted, rows] = yield* Effect.all([
    readTotal(sql, spec, query, sql`SELECT CAST(${sql.join(" + ", false)(counts)} AS INTEGER) AS total`),
    sql<Row>`
        SELECT * FROM (${sql.join(" UNION ALL ", false)(union)}) u
        ORDER BY ${sql(bare(sortColumn))} ${direction}, ${sql(bare(spec.idColumn))} ${direction}
        LIMIT ${query.per_page} OFFSET ${(query.page - 1) * query.per_page}`
  ])
  return { counted, rows }
})

/**
 * A grouped branch's first `reach` rows: per group, its first `reach` rows in sort order (`where` over the row's
 * table, `g` in scope), then the first `reach` of all those. PostgreSQL: a `LATERAL` subquery per group. SQLite has
 * no `LATERAL`: the rows are looked up by id among each group's first `reach` ids (a correlated `IN` subquery, run
 * once per group); the subquery's table has the outer table's alias, so `where` reads the subquery's row.
 */
const groupedSelect = (
  sql: SqlClient.SqlClient,
  spec: { readonly select: Fragment; readonly from: Fragment; readonly idColumn: string },
  grouped: GroupedBranch,
  where: Fragment,
  sortColumn: string,
  direction: Fragment,
  reach: number
): Fragment => {
  const order = sql`${sql(sortColumn)} ${direction}, ${sql(spec.idColumn)} ${direction}`
  const groupsWhere = sql.and(grouped.groupsWhere)
  return sql.onDialectOrElse({
    pg: () =>
      sql`SELECT x.* FROM ${grouped.groups} CROSS JOIN LATERAL (
        SELECT ${spec.select} FROM ${spec.from} WHERE ${where} ORDER BY ${order} LIMIT ${reach}) x
      WHERE ${groupsWhere}
      ORDER BY ${sql(`x.${bare(sortColumn)}`)} ${direction}, ${sql(`x.${bare(spec.idColumn)}`)} ${direction}
      LIMIT ${reach}`,
    orElse: () =>
      sql`SELECT ${spec.select} FROM ${grouped.groups} JOIN ${spec.from} ON ${sql(spec.idColumn)} IN (
        SELECT ${sql(spec.idColumn)} FROM ${spec.from} WHERE ${where} ORDER BY ${order} LIMIT ${reach})
      WHERE ${groupsWhere}
      ORDER BY ${order} LIMIT ${reach}`
  })
}

const isUnion = <Sort extends string>(spec: ListSpec<Sort> | UnionListSpec<Sort>): spec is UnionListSpec<Sort> =>
  "branches" in spec

const Total = Schema.Array(Schema.Struct({ total: Count }))

/**
 * A list reader for one row schema: its decoders are built once here, not on every page (a fresh
 * `Schema.Array(Row)` per call is a fresh AST, compiled again each time). Each row is decoded by `Row` (a row
 * that does not decode is a defect, as in src/Sql/Repository.ts).
 */
export const makeListPage = <A, I, R>(Row: Schema.Schema<A, I, R>) => {
  const decodeTotal = Schema.decodeUnknown(Total)
  const decodeRows = Schema.decodeUnknown(Schema.Array(Row))
  return Effect.fnUntraced(function* <Sort extends string>(
    spec: ListSpec<Sort> | UnionListSpec<Sort>,
    query: ListQuery<Sort>
  ) {
    // A union of one branch is that branch as a plain list: one ordered walk, nothing to merge.
    const { counted, rows } = yield* !isUnion(spec)
      ? runList(spec, query)
      : spec.branches.length === 1 && spec.grouped === undefined
        ? runList({ ...spec, where: [...spec.branches.flat(), ...spec.where] }, query)
        : runUnion<object, Sort>(spec, query)
    const [total, items] = yield* Effect.orDie(Effect.all([decodeTotal(counted), decodeRows(rows)]))
    return { items, total: total[0]?.total ?? 0, page: query.page, per_page: query.per_page }
  })
}

/** One page (see `makeListPage`; prefer it where the same schema lists again and again). */
export const listPage = <A, I, R, Sort extends string>(
  Row: Schema.Schema<A, I, R>,
  spec: ListSpec<Sort> | UnionListSpec<Sort>,
  query: ListQuery<Sort>
): Effect.Effect<Page<A>, SqlError, SqlClient.SqlClient | R> => makeListPage(Row)(spec, query)
