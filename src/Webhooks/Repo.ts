import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { EventType } from "../Domain/EventTypes.js"
import { DeliveryId, UserId, WebhookId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import {
  Attempt,
  type AttemptRecord,
  ClaimedDelivery,
  Delivery,
  type DeliveryStatus,
  Webhook,
  type WebhookSort,
  type WebhookStatus
} from "../Domain/Webhook.js"
import { counterSum, makeListPage } from "../Sql/Lists.js"
import * as Rows from "../Sql/Rows.js"

/** As stored: the event types are a JSON array in a TEXT column. */
const Events = Rows.JsonText(Schema.Array(EventType))
const WebhookRow = Schema.Struct({ ...Webhook.fields, events: Events })

const NewWebhookRow = Schema.Struct({
  id: WebhookId,
  user_id: UserId,
  url: Schema.String,
  events: Events,
  secret: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String
})

const WebhookChange = Schema.Struct({
  url: Schema.optionalWith(Schema.String, { exact: true }),
  events: Schema.optionalWith(Events, { exact: true }),
  secret: Schema.optionalWith(Schema.String, { exact: true }),
  status: Schema.optionalWith(Schema.Literal("active"), { exact: true }),
  failed_at: Schema.optionalWith(Schema.Null, { exact: true }),
  updated_at: Schema.String
})
export type WebhookChange = typeof WebhookChange.Type

const Id = Schema.Struct({ id: Schema.String })

/** A claimed delivery's outcome, to be written if the claim is still held. */
const Settlement = Schema.Struct({
  id: Schema.String,
  claim_token: Schema.String,
  status: Delivery.fields.status,
  attempt_count: Schema.Int,
  next_attempt_at: Schema.NullOr(Schema.String),
  last_attempt_at: Schema.String
})
export type Settlement = typeof Settlement.Type

export class WebhooksRepo extends Effect.Service<WebhooksRepo>()("WebhooksRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const listDeliveryRows = makeListPage(Delivery)
    const listWebhooks = makeListPage(WebhookRow)
    const columns = sql`w.id, w.url, w.events, w.status, w.created_at, w.updated_at, w.failed_at`
    const deliveryColumns = sql`d.id, d.webhook_id, d.event_id, d.event_type, d.status, d.attempt_count, d.next_attempt_at, d.last_attempt_at, d.created_at`

    const insert = Rows.write({
      Request: NewWebhookRow,
      execute: (hook) => sql`INSERT INTO webhooks ${sql.insert({ ...hook, status: "active", failed_at: null })}`
    })

    const find = Rows.findOne({
      Request: Schema.Struct({ userId: Schema.String, id: WebhookId }),
      Result: WebhookRow,
      execute: ({ id, userId }) => sql`SELECT ${columns} FROM webhooks w WHERE w.id = ${id} AND w.user_id = ${userId}`
    })

    const list = (userId: string, query: ListQuery<WebhookSort, WebhookStatus>) =>
      listWebhooks(
        {
          select: columns,
          from: sql`webhooks w`,
          where: [sql`w.user_id = ${userId}`, ...(query.status !== undefined ? [sql`w.status = ${query.status}`] : [])],
          columns: { created_at: "w.created_at", updated_at: "w.updated_at" },
          createdColumn: "w.created_at",
          idColumn: "w.id",
          searchColumns: ["w.url"],
          total: counterSum(sql, "counts_webhooks", [
            sql`user_id = ${userId}`,
            ...(query.status !== undefined ? [sql`status = ${query.status}`] : [])
          ])
        },
        query
      )

    const update = Rows.write({
      Request: Schema.Struct({ id: WebhookId, change: WebhookChange }),
      execute: ({ change, id }) => sql`UPDATE webhooks SET ${sql.update(change)} WHERE id = ${id}`
    })

    const remove = Rows.write({ Request: WebhookId, execute: (id) => sql`DELETE FROM webhooks WHERE id = ${id}` })

    const listDeliveries = (webhookId: WebhookId, query: ListQuery<"created_at", DeliveryStatus>) =>
      listDeliveryRows(
        {
          select: deliveryColumns,
          from: sql`deliveries d`,
          where: [
            sql`d.webhook_id = ${webhookId}`,
            ...(query.status !== undefined ? [sql`d.status = ${query.status}`] : [])
          ],
          columns: { created_at: "d.created_at" },
          createdColumn: "d.created_at",
          idColumn: "d.id",
          searchColumns: ["d.event_type"],
          total: counterSum(sql, "counts_deliveries", [
            sql`webhook_id = ${webhookId}`,
            ...(query.status !== undefined ? [sql`status = ${query.status}`] : [])
          ])
        },
        query
      )

    const findDelivery = Rows.findOne({
      Request: Schema.Struct({ webhookId: WebhookId, id: DeliveryId }),
      Result: Delivery,
      execute: ({ id, webhookId }) =>
        sql`SELECT ${deliveryColumns} FROM deliveries d WHERE d.id = ${id} AND d.webhook_id = ${webhookId}`
    })

    const attemptsOf = Rows.findAll({
      Request: DeliveryId,
      Result: Attempt,
      execute: (deliveryId) =>
        sql`
        SELECT number, attempted_at, duration_ms, status_code, error, response_body, outcome
        FROM delivery_attempts WHERE delivery_id = ${deliveryId} ORDER BY number`
    })

    /** A manual retry: due now, one attempt; a retry of a delivery already waiting just brings it forward. */
    const scheduleNow = (id: DeliveryId, now: string) =>
      sql`UPDATE deliveries SET
            manual = CASE WHEN status = 'pending' THEN manual ELSE 1 END,
            status = 'pending', next_attempt_at = ${now}
          WHERE id = ${id}`.pipe(Effect.asVoid)

    const claimIds = Rows.findAll({
      Request: Schema.Struct({
        limit: Schema.Int,
        now: Schema.String,
        claimedUntil: Schema.String,
        token: Schema.String
      }),
      Result: Id,
      execute: ({ claimedUntil, limit, now, token }) => {
        const lock = sql.onDialectOrElse({ pg: () => sql`FOR UPDATE SKIP LOCKED`, orElse: () => sql`` })
        return sql`
          UPDATE deliveries SET claimed_until = ${claimedUntil}, claim_token = ${token}
          WHERE id IN (
            SELECT id FROM deliveries
            WHERE status = 'pending' AND next_attempt_at <= ${now}
              AND (claimed_until IS NULL OR claimed_until < ${now})
            ORDER BY next_attempt_at LIMIT ${limit} ${lock}
          )
          RETURNING id`
      }
    })

    const claimed = Rows.findAll({
      Request: Schema.Struct({ ids: Schema.Array(Schema.String), token: Schema.String }),
      Result: ClaimedDelivery,
      execute: ({ ids, token }) =>
        sql`
          SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.attempt_count, d.manual, d.claim_token, d.next_attempt_at,
                 w.url, w.secret, w.status AS webhook_status, e.payload, e.trace_context
          FROM deliveries d
          JOIN webhooks w ON w.id = d.webhook_id
          JOIN events e ON e.id = d.event_id
          WHERE d.id IN ${sql.in(ids)} AND d.claim_token = ${token}`
    })

    /**
     * Claims up to `limit` due deliveries for `lease`: a claim lapses at `claimedUntil`, after which any process
     * may take the delivery again. On PostgreSQL, `SKIP LOCKED` keeps concurrent claimers off each other's rows.
     */
    const claim = (limit: number, now: string, claimedUntil: string, token: string) =>
      Effect.gen(function* () {
        const ids = yield* claimIds({ limit, now, claimedUntil, token })
        if (ids.length === 0) return []
        return yield* claimed({ ids: ids.map((row) => row.id), token })
      })

    const insertAttempts = (attempts: ReadonlyArray<AttemptRecord>) =>
      attempts.length === 0
        ? Effect.void
        : sql`INSERT INTO delivery_attempts ${sql.insert(attempts.map((attempt) => ({ ...attempt })))}`.pipe(
            Effect.asVoid
          )

    /**
     * Writes the outcomes of claims this process still holds, in one statement; answers the ids it wrote (a claim
     * that lapsed and was taken again is the other claimant's to record).
     */
    const settle = (outcomes: ReadonlyArray<Settlement>) =>
      outcomes.length === 0
        ? Effect.succeed(new Set<string>())
        : Effect.map(settleClaims(outcomes), (rows) => new Set(rows.map((row) => row.id)))

    const settleClaims = Rows.findAll({
      Request: Schema.Array(Settlement),
      Result: Id,
      execute: (outcomes) =>
        sql`
          WITH outcome (id, claim_token, status, attempt_count, next_attempt_at, last_attempt_at) AS (
            VALUES ${sql.csv(
              outcomes.map(
                (o) =>
                  sql`(${o.id}, ${o.claim_token}, ${o.status}, ${o.attempt_count}, ${o.next_attempt_at}, ${o.last_attempt_at})`
              )
            )}
          )
          UPDATE deliveries SET
            status = outcome.status,
            attempt_count = CAST(outcome.attempt_count AS INTEGER),
            next_attempt_at = outcome.next_attempt_at,
            last_attempt_at = outcome.last_attempt_at,
            manual = 0, claimed_until = NULL, claim_token = NULL
          FROM outcome
          WHERE deliveries.id = outcome.id AND deliveries.claim_token = outcome.claim_token
          RETURNING deliveries.id`
    })

    /** Gives claims this process will not attempt back to the table, for any process to take now. */
    const unclaim = (claims: ReadonlyArray<ClaimedDelivery>) =>
      claims.length === 0
        ? Effect.void
        : sql`UPDATE deliveries SET claimed_until = NULL, claim_token = NULL
              WHERE id IN ${sql.in(claims.map((c) => c.id))}
                AND claim_token IN ${sql.in([...new Set(claims.map((c) => c.claim_token))])}`.pipe(Effect.asVoid)

    /** `active` changes only webhooks that are failed; `failed` marks them all. */
    const markWebhooks = (ids: ReadonlyArray<string>, status: WebhookStatus, now: string) =>
      ids.length === 0
        ? Effect.void
        : status === "active"
          ? sql`UPDATE webhooks SET status = 'active', failed_at = NULL, updated_at = ${now}
              WHERE id IN ${sql.in(ids)} AND status = 'failed'`.pipe(Effect.asVoid)
          : sql`UPDATE webhooks SET status = 'failed', failed_at = ${now}, updated_at = ${now}
              WHERE id IN ${sql.in(ids)}`.pipe(Effect.asVoid)

    const pendingCount = Effect.map(
      Rows.single({
        Request: Schema.Void,
        Result: Schema.Struct({ n: Rows.Count }),
        execute: () => sql`SELECT CAST(count(*) AS INTEGER) AS n FROM deliveries WHERE status = 'pending'`
      })(undefined),
      (row) => row.n
    )

    return {
      insert,
      find: (userId: string, id: WebhookId) => find({ userId, id }),
      list,
      update: (id: WebhookId, change: WebhookChange) => update({ id, change }),
      remove,
      listDeliveries,
      findDelivery: (webhookId: WebhookId, id: DeliveryId) => findDelivery({ webhookId, id }),
      attemptsOf,
      scheduleNow,
      claim,
      insertAttempts,
      settle,
      unclaim,
      markWebhooks,
      pendingCount
    } as const
  })
}) {}
