/**
 * Counters behind every list's `meta.total`: a row per key (whose rows, and the filters a list can
 * ask for) holding how many rows have that key, so a total is a sum over a handful of counter rows instead of a
 * range count that grows with the data. They are kept by triggers, in the transaction of the write that changes
 * them, whatever wrote it (the HTTP API, the CLI, a foreign-key cascade), and filled from the rows already there.
 *
 * SQLite: row triggers (one writer at a time, so no lock order to keep). PostgreSQL: inserts and deletes are
 * counted once per statement from its transition table, grouped per key and applied in key order (a fan-out of
 * deliveries or a cascade touches each counter row once, and two statements lock counter rows in the same order);
 * updates too, as the net change per key of the statement's rows (a batch of delivery outcomes moves many rows
 * from `pending` at once; one that changes no key writes nothing). Each PostgreSQL key is spread over 16 `shard` rows by a hash of the counted row's identity, so
 * concurrent writers of one key (one user creating projects from many connections) seldom wait on one row lock
 * until commit. A counter row that falls to zero is deleted (nothing stays behind for deleted users or teams).
 *
 * Indexes too, so more lists walk an index in order and stop after a page, as the others do since 0005: members
 * by join time (their default sort), deployments by `updated_at`, and the project indexes of 0005 again with
 * `status` second, so the project list's branches (split by status in src/Projects/Repo.ts) read a status filter
 * as an index prefix instead of filtering a whole branch when the status is rare.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"

/** An expression over a row of the counted table, given the row's name (`r`, `NEW`, `OLD`). */
type Expression = (row: string) => string

export interface Counter {
  readonly table: string
  readonly source: string
  /** Each key column of the counter (all TEXT) and the expression that fills it. */
  readonly keys: ReadonlyArray<readonly [string, Expression]>
  /** Which rows count; every row when absent. */
  readonly where?: Expression
  /** The source columns `keys` and `where` read: an update of any other column never touches the counter. */
  readonly watch: ReadonlyArray<string>
  /** What spreads one key over shards on PostgreSQL (the row's identity). */
  readonly shardBy: Expression
}

export const counters: ReadonlyArray<Counter> = [
  // A user's own projects, by the team they are shared with (`''`: not shared with a team) and status.
  {
    table: "counts_projects_owner",
    source: "projects",
    keys: [
      ["owner_id", (r) => `${r}.owner_id`],
      [
        "shared_team",
        (r) => `CASE WHEN ${r}.visibility = 'team' AND ${r}.team_id IS NOT NULL THEN ${r}.team_id ELSE '' END`
      ],
      ["status", (r) => `${r}.status`]
    ],
    watch: ["owner_id", "team_id", "visibility", "status"],
    shardBy: (r) => `${r}.id`
  },
  // A team's `team` projects (whoever owns them), by status.
  {
    table: "counts_projects_team",
    source: "projects",
    keys: [
      ["team_id", (r) => `${r}.team_id`],
      ["status", (r) => `${r}.status`]
    ],
    where: (r) => `${r}.visibility = 'team' AND ${r}.team_id IS NOT NULL`,
    watch: ["team_id", "visibility", "status"],
    shardBy: (r) => `${r}.id`
  },
  // A user's keys, revoked or not (`expired` depends on the clock: those totals are counted from the rows).
  {
    table: "counts_api_keys",
    source: "api_keys",
    keys: [
      ["user_id", (r) => `${r}.user_id`],
      ["state", (r) => `CASE WHEN ${r}.revoked_at IS NULL THEN 'unrevoked' ELSE 'revoked' END`]
    ],
    watch: ["user_id", "revoked_at"],
    shardBy: (r) => `${r}.id`
  },
  {
    table: "counts_webhooks",
    source: "webhooks",
    keys: [
      ["user_id", (r) => `${r}.user_id`],
      ["status", (r) => `${r}.status`]
    ],
    watch: ["user_id", "status"],
    shardBy: (r) => `${r}.id`
  },
  {
    table: "counts_deliveries",
    source: "deliveries",
    keys: [
      ["webhook_id", (r) => `${r}.webhook_id`],
      ["status", (r) => `${r}.status`]
    ],
    watch: ["webhook_id", "status"],
    shardBy: (r) => `${r}.id`
  },
  {
    table: "counts_deployments",
    source: "deployments",
    keys: [
      ["project_id", (r) => `${r}.project_id`],
      ["environment", (r) => `${r}.environment`],
      ["status", (r) => `${r}.status`]
    ],
    watch: ["project_id", "environment", "status"],
    shardBy: (r) => `${r}.id`
  },
  {
    table: "counts_members_team",
    source: "team_members",
    keys: [["team_id", (r) => `${r}.team_id`]],
    watch: ["team_id"],
    shardBy: (r) => `${r}.user_id`
  },
  {
    table: "counts_members_user",
    source: "team_members",
    keys: [["user_id", (r) => `${r}.user_id`]],
    watch: ["user_id"],
    shardBy: (r) => `${r}.team_id`
  },
  // By stored status; a pending invitation past its expiry reads as `expired`, so those two are counted from rows.
  {
    table: "counts_invitations",
    source: "invitations",
    keys: [
      ["team_id", (r) => `${r}.team_id`],
      ["status", (r) => `${r}.status`]
    ],
    watch: ["team_id", "status"],
    shardBy: (r) => `${r}.id`
  }
]

const columnsOf = (c: Counter) => c.keys.map(([column]) => column)
const valuesOf = (c: Counter, row: string) => c.keys.map(([, expression]) => expression(row)).join(", ")
const whereOf = (c: Counter, row: string) => (c.where === undefined ? "TRUE" : `(${c.where(row)})`)
/** The counter row of `row`'s key (and shard, when given). */
const matchOf = (c: Counter, row: string, shard?: string) =>
  [
    ...c.keys.map(([column, expression]) => `${column} = ${expression(row)}`),
    ...(shard ? [`shard = ${shard}`] : [])
  ].join(" AND ")
/** Whether an update moved the row to another key, or into or out of the counted rows. */
const changedOf = (c: Counter, distinct: string) =>
  [
    ...c.keys.map(([, expression]) => `${expression("OLD")} ${distinct} ${expression("NEW")}`),
    ...(c.where === undefined ? [] : [`${whereOf(c, "OLD")} ${distinct} ${whereOf(c, "NEW")}`])
  ].join(" OR ")
const positions = (n: number) => Array.from({ length: n }, (_, i) => i + 1).join(", ")

const sqlite = (c: Counter): ReadonlyArray<string> => {
  const columns = columnsOf(c).join(", ")
  const increment = (row: string) =>
    `INSERT INTO ${c.table} (${columns}, n) SELECT ${valuesOf(c, row)}, 1 WHERE ${whereOf(c, row)}
      ON CONFLICT (${columns}) DO UPDATE SET n = n + 1;`
  const decrement = (row: string) =>
    `UPDATE ${c.table} SET n = n - 1 WHERE ${matchOf(c, row)} AND ${whereOf(c, row)};
    DELETE FROM ${c.table} WHERE ${matchOf(c, row)} AND n = 0;`
  return [
    `CREATE TABLE ${c.table} (${columnsOf(c)
      .map((column) => `${column} TEXT NOT NULL`)
      .join(", ")}, n INTEGER NOT NULL, PRIMARY KEY (${columns})) WITHOUT ROWID`,
    `INSERT INTO ${c.table} (${columns}, n)
      SELECT ${valuesOf(c, "r")}, count(*) FROM ${c.source} r WHERE ${whereOf(c, "r")} GROUP BY ${positions(c.keys.length)}`,
    `CREATE TRIGGER ${c.table}_insert AFTER INSERT ON ${c.source} BEGIN ${increment("NEW")} END`,
    `CREATE TRIGGER ${c.table}_delete AFTER DELETE ON ${c.source} BEGIN ${decrement("OLD")} END`,
    `CREATE TRIGGER ${c.table}_update AFTER UPDATE OF ${c.watch.join(", ")} ON ${c.source}
      WHEN ${changedOf(c, "IS NOT")} BEGIN ${decrement("OLD")} ${increment("NEW")} END`
  ]
}

/**
 * A counter's PostgreSQL statements: its table, the fill from the rows already there, the trigger function
 * (`CREATE OR REPLACE`, so a later migration can re-make it) and its triggers.
 */
export const pgCounter = (c: Counter) => {
  const columns = columnsOf(c).join(", ")
  const shard = (row: string) => `hashtext(${c.shardBy(row)}) & 15`
  const keyed = positions(c.keys.length + 1)
  /** Adds each key's delta (rows of `deltas`: key values, shard, delta), in key order. */
  const apply = (deltas: string) =>
    `INSERT INTO ${c.table} AS c (${columns}, shard, n)
      SELECT * FROM (${deltas}) d ORDER BY ${keyed}
      ON CONFLICT (${columns}, shard) DO UPDATE SET n = c.n + excluded.n;`
  const grouped = (table: string, sign: string) =>
    `SELECT ${valuesOf(c, "r")}, ${shard("r")}, ${sign}count(*) FROM ${table} r WHERE ${whereOf(c, "r")}
      GROUP BY ${keyed}`
  const aliased = (row: string) => c.keys.map(([, expression], i) => `${expression(row)} AS k${i}`).join(", ")
  const keyColumns = [...c.keys.map((_, i) => `k${i}`), "s"].join(", ")
  /** An update's net change per key and shard: rows that moved (or entered or left the counted rows) only. */
  const netOfUpdate = `SELECT ${keyColumns}, CAST(SUM(d) AS INTEGER) FROM (
      SELECT ${aliased("r")}, ${shard("r")} AS s, -1 AS d FROM old_rows r WHERE ${whereOf(c, "r")}
      UNION ALL SELECT ${aliased("r")}, ${shard("r")} AS s, 1 AS d FROM new_rows r WHERE ${whereOf(c, "r")}
    ) moved GROUP BY ${keyColumns} HAVING SUM(d) <> 0`
  const deleteZeros = `DELETE FROM ${c.table} c WHERE c.n = 0 AND (${columnsOf(c)
    .map((column) => `c.${column}`)
    .join(", ")}, c.shard) IN (SELECT ${valuesOf(c, "r")}, ${shard("r")} FROM old_rows r WHERE ${whereOf(c, "r")});`
  const fn = `${c.table}_apply`
  return {
    table: `CREATE TABLE ${c.table} (${columnsOf(c)
      .map((column) => `${column} TEXT NOT NULL`)
      .join(", ")}, shard SMALLINT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (${columns}, shard))`,
    fill: `INSERT INTO ${c.table} (${columns}, shard, n) ${grouped(c.source, "")}`,
    fn: `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        ${apply(grouped("new_rows", ""))}
      ELSIF TG_OP = 'DELETE' THEN
        ${apply(grouped("old_rows", "-"))}
        ${deleteZeros}
      ELSE
        ${apply(netOfUpdate)}
        ${deleteZeros}
      END IF;
      RETURN NULL;
    END $$`,
    triggers: [
      `CREATE TRIGGER ${c.table}_insert AFTER INSERT ON ${c.source}
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
      `CREATE TRIGGER ${c.table}_delete AFTER DELETE ON ${c.source}
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`,
      // A transition table cannot go with a column list, so every update statement runs this once; one that moves no
      // row to another key (a claim, a rename) nets to nothing and writes nothing. Per statement, in key order, like
      // inserts and deletes: per-row triggers locked counter rows in the order rows happened to be updated, and a
      // batch of delivery outcomes deadlocked with a commit queuing deliveries for the same webhooks.
      `CREATE TRIGGER ${c.table}_update AFTER UPDATE ON ${c.source}
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`
    ]
  }
}

const pg = (c: Counter): ReadonlyArray<string> => {
  const { table, fill, fn, triggers } = pgCounter(c)
  return [table, fill, fn, ...triggers]
}

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const statements = counters.flatMap((counter) =>
    sql.onDialectOrElse({ pg: () => pg(counter), orElse: () => sqlite(counter) })
  )
  for (const statement of statements) yield* sql.unsafe(statement)
  for (const column of ["created_at", "updated_at", "name"]) {
    const short = column.replace("_at", "")
    yield* sql.unsafe(`DROP INDEX projects_owner_${short}`)
    yield* sql.unsafe(`DROP INDEX projects_team_${short}`)
    yield* sql.unsafe(`CREATE INDEX projects_owner_${short} ON projects (owner_id, status, ${column}, id)`)
    yield* sql.unsafe(
      `CREATE INDEX projects_team_${short} ON projects (team_id, status, ${column}, id, owner_id) WHERE visibility = 'team'`
    )
  }
  yield* sql`CREATE INDEX team_members_team_joined ON team_members (team_id, joined_at, user_id)`
  yield* sql`CREATE INDEX deployments_project_updated ON deployments (project_id, updated_at, id)`
})
