/**
 * The retention sweep's statements (src/Retention/Retention.ts). Each deletes (or, for lapsed invitations, marks)
 * at most `limit` rows and answers how many (the rows the database returned); each reads by an index of migration
 * 0012 (0016 for invitations). Deleting through these keeps every list total exact: the counters of migration 0006
 * are kept by triggers on delete.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { AUDIT_SEQUENCE } from "../Audit/Repo.js"
import { EVENTS_SEQUENCE } from "../Events/Repo.js"
import * as Rows from "../Sql/Repository.js"
import { markRemoved } from "../Sql/Sequence.js"

const Id = Schema.Struct({ id: Schema.String })
const decodeIds = Schema.decodeUnknown(Schema.Array(Id))
const DeliveryOfEvent = Schema.Struct({ id: Schema.String, event_id: Schema.String, status: Schema.String })

/** OAuth tables whose rows carry an `expires_at` and are useless after it. */
export const oauthTables = ["oauth_authorizations", "oauth_codes", "oauth_tokens"] as const
export type OAuthTable = (typeof oauthTables)[number]

export class RetentionRepo extends Effect.Service<RetentionRepo>()("RetentionRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    /** On PostgreSQL the rows read are locked until the batch's transaction ends; rows another holds are skipped. */
    const lockRows = (skipLocked: boolean) =>
      sql.onDialectOrElse({
        pg: () => (skipLocked ? sql`FOR UPDATE SKIP LOCKED` : sql`FOR UPDATE`),
        orElse: () => sql``
      })
    const count = (rows: ReadonlyArray<unknown>) => rows.length

    /** Up to `limit` deliveries that ended (delivered or failed) before `before`, oldest first. */
    const endedDeliveries = Rows.findAll({
      Request: Schema.Struct({ before: Schema.String, limit: Schema.Int }),
      Result: Id,
      execute: ({ before, limit }) =>
        sql`SELECT id FROM deliveries
            WHERE status IN ('delivered', 'failed') AND manual = 0 AND last_attempt_at < ${before}
            ORDER BY last_attempt_at LIMIT ${limit} ${lockRows(true)}`
    })

    /**
     * Up to `limit` attempts of the deliveries `ids`. On PostgreSQL by row address: matched by key, `(delivery_id,
     * number) IN (…)` was planned as a hash join over the whole attempts table, once per batch.
     */
    const deleteAttempts = (ids: ReadonlyArray<string>, limit: number) =>
      Effect.map(
        sql.onDialectOrElse({
          pg: () =>
            sql`DELETE FROM delivery_attempts WHERE ctid = ANY (ARRAY(
                  SELECT ctid FROM delivery_attempts WHERE delivery_id IN ${sql.in(ids)} LIMIT ${limit}
                )) RETURNING delivery_id`,
          orElse: () =>
            sql`DELETE FROM delivery_attempts WHERE (delivery_id, number) IN (
                  SELECT delivery_id, number FROM delivery_attempts WHERE delivery_id IN ${sql.in(ids)} LIMIT ${limit}
                ) RETURNING delivery_id`
        }),
        count
      )

    /** The deliveries `ids` (at most the batch's), unless one is pending again or has a manual attempt asked for. */
    const deleteDeliveries = (ids: ReadonlyArray<string>) =>
      Effect.map(
        sql`DELETE FROM deliveries WHERE id IN ${sql.in(ids)} AND status IN ('delivered', 'failed') AND manual = 0
            RETURNING id`,
        count
      )

    /** Up to `limit` events created before `before` none of whose deliveries is pending, oldest first. */
    const oldEvents = Rows.findAll({
      Request: Schema.Struct({ before: Schema.String, limit: Schema.Int }),
      Result: Id,
      execute: ({ before, limit }) =>
        sql`SELECT e.id FROM events e
            WHERE e.created_at < ${before}
              AND NOT EXISTS (
                SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND (d.status = 'pending' OR d.manual = 1)
              )
            ORDER BY e.created_at LIMIT ${limit} ${lockRows(true)}`
    })

    /** Up to `limit` deliveries of the events `ids`, with their status. */
    const deliveriesOfEvents = Rows.findAll({
      Request: Schema.Struct({ ids: Schema.Array(Schema.String), limit: Schema.Int }),
      Result: DeliveryOfEvent,
      execute: ({ ids, limit }) =>
        sql`SELECT id, event_id, status FROM deliveries WHERE event_id IN ${sql.in(ids)}
            LIMIT ${limit} ${lockRows(false)}`
    })

    /**
     * The events `ids` that have no delivery left, noted as removed for the events feed's cursor (a cursor naming one
     * is then `410`, src/Sql/Sequence.ts) in the same transaction.
     */
    const deleteEvents = (ids: ReadonlyArray<string>) =>
      Effect.flatMap(
        sql`DELETE FROM events WHERE id IN ${sql.in(ids)}
              AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)
            RETURNING id`,
        (rows) =>
          Effect.flatMap(Effect.orDie(decodeIds(rows)), (deleted) =>
            Effect.as(
              markRemoved(
                EVENTS_SEQUENCE,
                deleted.map((row) => row.id)
              ),
              deleted.length
            )
          )
      )

    /**
     * Up to `limit` rows of an OAuth table that expired before `before`. On PostgreSQL by row address: `id IN (…)`
     * was planned as a hash join over the whole table.
     */
    /**
     * Up to `limit` audit records created before `before`, oldest first, noted as removed for the audit logs'
     * cursor (a cursor naming one is then `410`, src/Sql/Sequence.ts) in the same transaction.
     */
    const deleteAuditRecords = (before: string, limit: number) =>
      sql.withTransaction(
        Effect.flatMap(
          sql`DELETE FROM audit_log WHERE id IN (
                SELECT id FROM audit_log WHERE created_at < ${before} ORDER BY created_at LIMIT ${limit}
              ) RETURNING id`,
          (rows) =>
            Effect.flatMap(Effect.orDie(decodeIds(rows)), (deleted) =>
              Effect.as(
                markRemoved(
                  AUDIT_SEQUENCE,
                  deleted.map((row) => row.id)
                ),
                deleted.length
              )
            )
        )
      )

    const deleteExpired = (table: OAuthTable, before: string, limit: number) =>
      Effect.map(
        sql.onDialectOrElse({
          pg: () =>
            sql`DELETE FROM ${sql(table)} WHERE ctid = ANY (ARRAY(
                  SELECT ctid FROM ${sql(table)} WHERE expires_at < ${before} ORDER BY expires_at LIMIT ${limit}
                )) RETURNING id`,
          orElse: () =>
            sql`DELETE FROM ${sql(table)} WHERE id IN (
                  SELECT id FROM ${sql(table)} WHERE expires_at < ${before} ORDER BY expires_at LIMIT ${limit}
                ) RETURNING id`
        }),
        count
      )

    /**
     * Up to `limit` pending invitations past their expiry marked `expired`, what they already read as, found in
     * migration 0016's table by expiry (the counters and that table follow by trigger); answers how many. Only
     * `pending` ones change, so one answered meanwhile keeps its answer; a lapsed one can no longer be accepted.
     */
    const expireLapsedInvitations = (now: string, limit: number) => {
      const lapsed = sql`SELECT invitation_id FROM invitation_expiries WHERE expires_at <= ${now}
        ORDER BY expires_at LIMIT ${limit}`
      return Effect.map(
        sql.onDialectOrElse({
          // The ids as an array, read once: matched by `id IN (… LIMIT …)`, PostgreSQL may run the subquery more
          // than once and mark more than the batch.
          pg: () =>
            sql`UPDATE invitations SET status = 'expired'
              WHERE status = 'pending' AND id = ANY (ARRAY(${lapsed})) RETURNING id`,
          orElse: () =>
            sql`UPDATE invitations SET status = 'expired' WHERE status = 'pending' AND id IN (${lapsed}) RETURNING id`
        }),
        count
      )
    }

    return {
      expireLapsedInvitations,
      endedDeliveries,
      deleteAttempts,
      deleteDeliveries,
      oldEvents,
      deliveriesOfEvents,
      deleteEvents,
      deleteExpired,
      deleteAuditRecords
    } as const
  })
}) {}
