/**
 * One list query for every list endpoint: the resource's own conditions, then search, creation bounds,
 * sort with an `id` tie-break (so pages never overlap or skip), a true total and one page.
 */
import { SqlClient } from "@effect/sql"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import type { ListQuery, Page } from "../Domain/Lists.js"
import { Count } from "./Rows.js"

export interface ListSpec<Sort extends string> {
  /** `FROM …` and any joins. */
  readonly from: Fragment
  readonly select: Fragment
  /** Conditions that always hold (whose rows these are, the status filter…). */
  readonly where: ReadonlyArray<Fragment>
  /** Column behind each sort key; `created_at` is also the column the date bounds apply to. */
  readonly columns: Record<Sort, string> & { readonly created_at?: string }
  readonly createdColumn: string
  readonly idColumn: string
  readonly searchColumns: ReadonlyArray<string>
}

/**
 * Both sides go through the database's own `lower()`, so folding is the same for the column and the term (SQLite
 * folds ASCII letters only; PostgreSQL follows its locale).
 */
const likePattern = (search: string) => `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`

const runList = <Sort extends string>(spec: ListSpec<Sort>, query: ListQuery<Sort>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const conditions: Array<Fragment> = [...spec.where]
    if (query.search !== undefined && query.search !== "") {
      const pattern = likePattern(query.search)
      conditions.push(
        sql.or(spec.searchColumns.map((column) => sql`lower(${sql(column)}) LIKE lower(${pattern}) ESCAPE '\\'`))
      )
    }
    if (query.created_after !== undefined) conditions.push(sql`${sql(spec.createdColumn)} > ${query.created_after}`)
    if (query.created_before !== undefined) conditions.push(sql`${sql(spec.createdColumn)} < ${query.created_before}`)
    const where = conditions.length > 0 ? sql`WHERE ${sql.and(conditions)}` : sql``
    const direction = sql.unsafe(query.order === "asc" ? "ASC" : "DESC")
    const [counted, rows] = yield* Effect.all([
      sql<{ readonly total: unknown }>`SELECT CAST(count(*) AS INTEGER) AS total FROM ${spec.from} ${where}`,
      sql`
        SELECT ${spec.select} FROM ${spec.from} ${where}
        ORDER BY ${sql(spec.columns[query.sort])} ${direction}, ${sql(spec.idColumn)} ${direction}
        LIMIT ${query.per_page} OFFSET ${(query.page - 1) * query.per_page}`
    ])
    return { counted, rows }
  })

const Total = Schema.Array(Schema.Struct({ total: Count }))

/** One page, each row decoded by `Row` (a row that does not decode is a defect, as in src/Sql/Rows.ts). */
export const listPage = <A, I, R, Sort extends string>(
  Row: Schema.Schema<A, I, R>,
  spec: ListSpec<Sort>,
  query: ListQuery<Sort>
): Effect.Effect<Page<A>, SqlError, SqlClient.SqlClient | R> =>
  Effect.gen(function* () {
    const { counted, rows } = yield* runList(spec, query)
    const decoded = yield* Effect.orDie(
      Effect.all([Schema.decodeUnknown(Total)(counted), Schema.decodeUnknown(Schema.Array(Row))(rows)])
    )
    const [total, items] = decoded
    return { items, total: total[0]?.total ?? 0, page: query.page, per_page: query.per_page }
  })
