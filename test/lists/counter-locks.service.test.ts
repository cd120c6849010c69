/**
 * The lists' counters (migration 0006) are rows every create of one owner shares: on PostgreSQL the insert of a
 * counted row (a project, a deployment) locks its counter row until the transaction ends, so a second create by the
 * same owner that lands on the same shard waits for the first to commit. A create therefore writes its counted row
 * last, after its event and audit record, and holds that lock only for its commit (docs/lists.md, "Counter rows are
 * shared by writers").
 *
 * Shown by holding a create inside its audit record's insert (a test trigger waits on an advisory lock the test
 * holds) and reading which tables its transaction has written by then. SQLite runs one writer at a time, so there is
 * nothing to show there: PostgreSQL only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Fiber, Layer, Schedule } from "effect"
import { Deployments } from "../../src/Deployments/Deployments.ts"
import { makeId } from "../../src/Domain/Ids.ts"
import type { Principal } from "../../src/Domain/Principal.ts"
import { Projects } from "../../src/Projects/Projects.ts"
import { Users } from "../../src/Users/Users.ts"
import { uniqueEmail } from "../support/fixtures.ts"
import { usingPostgres } from "../support/server.ts"
import { onSelectedEngine, principalOf, type ServiceHarness } from "../support/services.ts"

const layers = Layer.mergeAll(Projects.Default, Deployments.Default, Users.Default)
let harness: ServiceHarness<Layer.Layer.Success<typeof layers>>
const run: ServiceHarness<Layer.Layer.Success<typeof layers>>["run"] = (effect) => harness.run(effect)

/** The advisory lock the test trigger waits on. */
const HOLD = 4242
let owner: Principal

beforeAll(async () => {
  if (!usingPostgres()) return
  harness = await onSelectedEngine(layers)
  const user = await run(Effect.flatMap(Users, (users) => users.create({ email: uniqueEmail("counted"), name: "Cy" })))
  owner = principalOf(user)
  // The audit record of a change whose target is named `held …` waits until the test lets go of `HOLD`.
  await run(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.zipRight(
        sql.unsafe(`CREATE FUNCTION hold_audit_record() RETURNS trigger AS $$
          BEGIN PERFORM pg_advisory_xact_lock_shared(${HOLD}); RETURN NEW; END $$ LANGUAGE plpgsql`),
        sql.unsafe(`CREATE TRIGGER hold_audit_record BEFORE INSERT ON audit_log FOR EACH ROW
          WHEN (NEW.target_name LIKE 'held %') EXECUTE FUNCTION hold_audit_record()`)
      )
    )
  )
}, 60_000)
afterAll(() => harness?.dispose(), 20_000)

/**
 * Runs `change` (whose audit record names its target `held …`) while the test holds `HOLD`; once it waits at its
 * audit record, answers which of `tables` its transaction has written (a row-exclusive lock on the table), then lets
 * it go on and waits for it to commit: answers those tables and what the change made.
 */
const writtenBeforeTheRecord = <A, E>(
  change: Effect.Effect<A, E, Layer.Layer.Success<typeof layers>>,
  tables: ReadonlyArray<string>
) =>
  run(
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const holder = yield* sql.reserve
        const unlock = Effect.ignore(holder.executeRaw(`SELECT pg_advisory_unlock(${HOLD})`, []))
        yield* holder.executeRaw(`SELECT pg_advisory_lock(${HOLD})`, [])
        // Let go however this ends: the connection goes back to the pool, and the lock is its session's.
        yield* Effect.addFinalizer(() => unlock)
        const running = yield* Effect.fork(change)
        const pid = yield* sql<{ readonly pid: number }>`SELECT pid FROM pg_locks
          WHERE locktype = 'advisory' AND classid = 0 AND objid = ${HOLD} AND NOT granted
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`.pipe(
          Effect.flatMap((rows) =>
            rows[0] === undefined ? Effect.fail("not waiting yet" as const) : Effect.succeed(rows[0].pid)
          ),
          Effect.retry(Schedule.spaced(Duration.millis(10))),
          Effect.timeout(Duration.seconds(10))
        )
        const written = yield* sql<{ readonly relname: string }>`SELECT c.relname FROM pg_locks l
          JOIN pg_class c ON c.oid = l.relation
          WHERE l.pid = ${pid} AND l.mode = 'RowExclusiveLock' AND c.relname IN ${sql.in(tables)}
          ORDER BY c.relname`
        yield* unlock
        const made = yield* Fiber.join(running)
        return { written: written.map((row) => row.relname), made }
      })
    )
  )

/** Whether `table` holds a row with `id` (the change committed). */
const stored = (table: "projects" | "deployments", id: string) =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) => sql<{ readonly id: string }>`SELECT id FROM ${sql(table)} WHERE id = ${id}`
    )
  ).then((rows) => rows.length === 1)

describe.skipIf(!usingPostgres())("on PostgreSQL a create takes its owner's counter rows last", () => {
  test("a project: not written, nor its counter, while its event and audit record are", async () => {
    const { written, made } = await writtenBeforeTheRecord(
      Effect.flatMap(Projects, (projects) => projects.create(owner, { name: `held ${makeId("project")}` })),
      ["projects", "counts_projects_owner", "counts_projects_team", "events"]
    )
    // The event is written (the test sees the transaction at the right place), the counted row is not yet.
    expect(written).toEqual(["events"])
    expect(await stored("projects", made.id)).toBe(true)
  }, 30_000)

  test("a deployment: not written, nor its counter, while its event and audit record are", async () => {
    const project = await run(Effect.flatMap(Projects, (projects) => projects.create(owner, { name: "Deployed" })))
    const { written, made } = await writtenBeforeTheRecord(
      Effect.flatMap(Deployments, (deployments) =>
        deployments.create(owner, project.id, {
          ref: `held ${makeId("deployment")}`,
          environment: "production",
          description: ""
        })
      ),
      ["deployments", "counts_deployments", "events"]
    )
    expect(written).toEqual(["events"])
    expect(await stored("deployments", made.id)).toBe(true)
  }, 30_000)
})
