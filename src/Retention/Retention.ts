/**
 * Retention: nothing grows without bound. A sweep deletes, in batches of at most `RETENTION_BATCH_SIZE` (1,000) rows
 * per statement, so that no statement holds locks for long:
 *
 * - deliveries that ended (delivered or failed) more than `DELIVERY_RETENTION` ago, their attempts first;
 * - events older than `EVENT_RETENTION` none of whose deliveries is pending, with the deliveries they still have
 *   (ended ones: a delivery cannot outlive its event), attempts first;
 * - idempotency keys past `IDEMPOTENCY_TTL` (their `expires_at`);
 * - OAuth authorization requests, codes and tokens a day past their expiry;
 * - audit records older than `AUDIT_RETENTION` (the only way one is ever deleted).
 *
 * It also marks pending invitations past their expiry `expired` (what they read as already), so a team's `pending`
 * and `expired` totals need only the few that lapsed since (src/Teams/Repo.ts).
 *
 * A batch of deliveries or events is one transaction (the rows read, then deleted): a delivery retried meanwhile
 * waits for it on PostgreSQL and then finds the delivery gone, or, read first, keeps it. Every server process runs a
 * sweep every `RETENTION_SWEEP_INTERVAL`, the first at start-up; across replicas one at a time (an advisory lock:
 * a replica that finds it held skips its turn). `bun run cli prune` runs one, waiting for the lock.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Duration, Effect, Layer, Option, Schedule } from "effect"
import { RetentionConfig } from "../Config.js"
import { IdempotencyRepo } from "../Idempotency/Repo.js"
import { holding } from "../Sql/Locks.js"
import { oauthTables, RetentionRepo } from "./Repo.js"

/** How long past their expiry OAuth authorization requests, codes and tokens are kept. */
const OAUTH_GRACE = Duration.days(1)

/** What one sweep deleted (`bun run cli prune` prints it). */
export interface SweepCounts {
  readonly deliveries: number
  readonly events: number
  readonly idempotency_keys: number
  readonly oauth: number
  /** Pending invitations past their expiry, marked `expired`. */
  readonly invitations_expired: number
  /** Audit records older than `AUDIT_RETENTION`. */
  readonly audit: number
}

/** One delete statement of a sweep: its table and the rows it deleted. */
export interface SweepStatement {
  readonly table: string
  readonly rows: number
}

export interface SweepReport {
  readonly counts: SweepCounts
  readonly statements: ReadonlyArray<SweepStatement>
}

export class Retention extends Effect.Service<Retention>()("Retention", {
  dependencies: [RetentionRepo.Default, IdempotencyRepo.Default],
  effect: Effect.gen(function* () {
    const repo = yield* RetentionRepo
    const idempotency = yield* IdempotencyRepo
    const sql = yield* SqlClient.SqlClient
    const config = yield* Effect.orDie(RetentionConfig)
    const limit = config.batchSize

    /** One sweep, as of the clock's now. Not locked: see `sweep`. */
    const sweepOnce = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const before = (age: Duration.Duration) => new Date(now - Duration.toMillis(age)).toISOString()
      const statements: Array<SweepStatement> = []
      const noted = (table: string) => (rows: number) => Effect.sync(() => statements.push({ table, rows }))

      /** Runs `batch` (at most `limit` rows, answering how many) until a run touches fewer; answers the sum. */
      const untilShort = <E, R>(batch: Effect.Effect<number, E, R>) =>
        Effect.gen(function* () {
          let total = 0
          for (;;) {
            const rows = yield* batch
            total += rows
            if (rows < limit) return total
          }
        })

      /** The deliveries `ids` (at most `limit`) with their attempts, `limit` attempts a statement; answers how many went. */
      const removeDeliveries = (ids: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          yield* untilShort(Effect.tap(repo.deleteAttempts(ids, limit), noted("delivery_attempts")))
          return yield* Effect.tap(repo.deleteDeliveries(ids), noted("deliveries"))
        })

      let deliveries = 0
      const deliveriesBefore = before(config.deliveryRetention)
      for (;;) {
        const batch = yield* sql.withTransaction(
          Effect.gen(function* () {
            const ids = (yield* repo.endedDeliveries({ before: deliveriesBefore, limit })).map((row) => row.id)
            return { read: ids.length, deleted: ids.length === 0 ? 0 : yield* removeDeliveries(ids) }
          })
        )
        deliveries += batch.deleted
        if (batch.read < limit || batch.deleted === 0) break
      }

      let events = 0
      const eventsBefore = before(config.eventRetention)
      for (;;) {
        const batch = yield* sql.withTransaction(
          Effect.gen(function* () {
            const ids = (yield* repo.oldEvents({ before: eventsBefore, limit })).map((row) => row.id)
            // Events with a delivery found pending after all (retried since they were read) stay.
            const kept = new Set<string>()
            let removed = 0
            for (;;) {
              const going = ids.filter((id) => !kept.has(id))
              if (going.length === 0) break
              const rows = yield* repo.deliveriesOfEvents({ ids: going, limit })
              for (const row of rows) if (row.status === "pending") kept.add(row.event_id)
              const ended = rows.filter((row) => row.status !== "pending").map((row) => row.id)
              if (ended.length > 0) removed += yield* removeDeliveries(ended)
              if (rows.length < limit) break
            }
            const going = ids.filter((id) => !kept.has(id))
            const deleted = going.length === 0 ? 0 : yield* Effect.tap(repo.deleteEvents(going), noted("events"))
            return { read: ids.length, deleted, deliveries: removed }
          })
        )
        events += batch.deleted
        deliveries += batch.deliveries
        if (batch.read < limit || batch.deleted === 0) break
      }

      const nowIso = new Date(now).toISOString()
      const idempotencyKeys = yield* untilShort(
        Effect.tap(idempotency.pruneExpired(limit, nowIso), noted("idempotency_keys"))
      )

      let oauth = 0
      const oauthBefore = before(OAUTH_GRACE)
      for (const table of oauthTables) {
        oauth += yield* untilShort(Effect.tap(repo.deleteExpired(table, oauthBefore, limit), noted(table)))
      }

      const invitationsExpired = yield* untilShort(
        Effect.tap(repo.expireLapsedInvitations(nowIso, limit), noted("invitations"))
      )

      const audit = yield* untilShort(
        Effect.tap(repo.deleteAuditRecords(before(config.auditRetention), limit), noted("audit_log"))
      )

      const counts: SweepCounts = {
        deliveries,
        events,
        idempotency_keys: idempotencyKeys,
        oauth,
        invitations_expired: invitationsExpired,
        audit
      }
      return { counts, statements } satisfies SweepReport
    })

    return {
      settings: config,
      /**
       * One sweep while holding the retention lock (on PostgreSQL): `wait: false` skips it (`None`) when another
       * process is sweeping, `wait: true` waits for that one to end.
       */
      sweep: (options: { readonly wait: boolean }) =>
        holding("retention", options, sweepOnce).pipe(Effect.withSpan("Retention.sweep"))
    } as const
  })
}) {}

/**
 * The sweep of a server process: one at start-up, then every `RETENTION_SWEEP_INTERVAL`. A sweep that fails is
 * logged and the next one tries again; a replica that finds another sweeping skips its turn.
 */
export const RetentionSweeperLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const retention = yield* Retention
    const once = retention.sweep({ wait: false }).pipe(
      Effect.tap(
        Option.match({
          onNone: () => Effect.logDebug("retention sweep skipped: another process is sweeping"),
          onSome: ({ counts }) =>
            Object.values(counts).some((n) => n > 0)
              ? Effect.logInfo("retention sweep", counts)
              : Effect.logDebug("retention sweep: nothing to delete")
        })
      ),
      Effect.catchAllCause((cause) => Effect.logWarning("retention sweep failed; the next one tries again", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(once, Schedule.spaced(retention.settings.sweepInterval)))
  })
)
