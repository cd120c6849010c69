/**
 * The delivery counters of 0006 spread over their 16 shards by event instead of by delivery (PostgreSQL; nothing
 * changes on SQLite, which has no shards). An event's deliveries go to different webhooks, so by delivery each of
 * a create's rows took its own random shard: two creates fanning out to the same ten webhooks collided on some
 * counter row about half the time, and waited for each other's commit. By event, a create's rows share one shard
 * and two creates collide one time in 16. A delivery keeps its event, so each row is still counted in and out of
 * the same shard, and a shard that falls to zero is still deleted.
 *
 * The trigger function is re-made and the counter rows rebuilt from the deliveries, under a lock that keeps
 * writers of deliveries out until the migration commits.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { counters, pgCounter } from "./0006_list_counts.js"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const counter = counters.find((c) => c.table === "counts_deliveries")
  if (counter === undefined) return yield* Effect.dieMessage("0006 has no counts_deliveries counter")
  const { fill, fn } = pgCounter({ ...counter, shardBy: (r) => `${r}.event_id` })
  const statements = sql.onDialectOrElse({
    pg: () => ["LOCK TABLE deliveries IN SHARE MODE", fn, "DELETE FROM counts_deliveries", fill],
    orElse: () => []
  })
  for (const statement of statements) yield* sql.unsafe(statement)
})
