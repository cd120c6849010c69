import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import type { ListQuery } from "../Domain/Lists.js"
import { EventType } from "../Events/EventTypes.js"
import { listPage } from "../Sql/Lists.js"
import type { Attempt, Delivery, Webhook } from "./Api.js"

type WebhookRow = Omit<Webhook, "events"> & { readonly events: string }
export type WebhookSort = "created_at" | "updated_at"

const decodeEvents = Schema.decodeSync(Schema.parseJson(Schema.Array(EventType)))
const toWebhook = ({ events, ...row }: WebhookRow): Webhook => ({ ...row, events: decodeEvents(events) })

/** A delivery claimed by this process, with everything its attempt needs. */
export interface ClaimedDelivery {
  readonly id: string
  readonly webhook_id: string
  readonly event_id: string
  readonly event_type: string
  readonly attempt_count: number
  readonly manual: number
  /** When the attempt fell due (for the lag metric). */
  readonly next_attempt_at: string
  readonly url: string
  readonly secret: string
  readonly webhook_status: "active" | "failed"
  readonly payload: string
  readonly trace_context: string | null
  readonly claim_token: string
}

export interface AttemptRecord extends Attempt {
  readonly delivery_id: string
}

export class WebhooksRepo extends Effect.Service<WebhooksRepo>()("WebhooksRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`w.id, w.url, w.events, w.status, w.created_at, w.updated_at, w.failed_at`
    const deliveryColumns =
      sql`d.id, d.webhook_id, d.event_id, d.event_type, d.status, d.attempt_count, d.next_attempt_at, d.last_attempt_at, d.created_at`

    const insert = (hook: Omit<WebhookRow, "status" | "failed_at"> & { readonly user_id: string; readonly secret: string }) =>
      sql`INSERT INTO webhooks ${sql.insert({ ...hook, status: "active", failed_at: null })}`

    const find = (userId: string, id: string) =>
      Effect.map(
        sql<WebhookRow>`SELECT ${columns} FROM webhooks w WHERE w.id = ${id} AND w.user_id = ${userId}`,
        (rows) => Option.map(Option.fromNullable(rows[0]), toWebhook)
      )

    const list = (userId: string, query: ListQuery<WebhookSort, "active" | "failed">) =>
      Effect.map(
        listPage<WebhookRow, WebhookSort>({
          select: columns,
          from: sql`webhooks w`,
          where: [sql`w.user_id = ${userId}`, ...(query.status !== undefined ? [sql`w.status = ${query.status}`] : [])],
          columns: { created_at: "w.created_at", updated_at: "w.updated_at" },
          createdColumn: "w.created_at",
          idColumn: "w.id",
          searchColumns: ["w.url"]
        }, query),
        (page) => ({ ...page, items: page.items.map(toWebhook) })
      )

    const update = (
      id: string,
      patch: {
        readonly url?: string
        readonly events?: string
        readonly secret?: string
        readonly status?: "active"
        readonly failed_at?: null
        readonly updated_at: string
      }
    ) => sql`UPDATE webhooks SET ${sql.update(patch)} WHERE id = ${id}`

    const remove = (id: string) => sql`DELETE FROM webhooks WHERE id = ${id}`

    const listDeliveries = (webhookId: string, query: ListQuery<"created_at", Delivery["status"]>) =>
      listPage<Delivery, "created_at">({
        select: deliveryColumns,
        from: sql`deliveries d`,
        where: [
          sql`d.webhook_id = ${webhookId}`,
          ...(query.status !== undefined ? [sql`d.status = ${query.status}`] : [])
        ],
        columns: { created_at: "d.created_at" },
        createdColumn: "d.created_at",
        idColumn: "d.id",
        searchColumns: ["d.event_type"]
      }, query)

    const findDelivery = (webhookId: string, id: string) =>
      Effect.map(
        sql<Delivery>`SELECT ${deliveryColumns} FROM deliveries d WHERE d.id = ${id} AND d.webhook_id = ${webhookId}`,
        (rows) => Option.fromNullable(rows[0])
      )

    const attemptsOf = (deliveryId: string) =>
      sql<Attempt>`
        SELECT number, attempted_at, duration_ms, status_code, error, response_body, outcome
        FROM delivery_attempts WHERE delivery_id = ${deliveryId} ORDER BY number`

    /** A manual retry: due now, one attempt; a retry of a delivery already waiting just brings it forward. */
    const scheduleNow = (id: string, now: string) =>
      sql`UPDATE deliveries SET
            manual = CASE WHEN status = 'pending' THEN manual ELSE 1 END,
            status = 'pending', next_attempt_at = ${now}
          WHERE id = ${id}`

    /**
     * Claims up to `limit` due deliveries for `lease`: a claim lapses at `claimedUntil`, after which any process
     * may take the delivery again. On PostgreSQL, `SKIP LOCKED` keeps concurrent claimers off each other's rows.
     */
    const claim = (limit: number, now: string, claimedUntil: string, token: string) =>
      Effect.gen(function*() {
        const lock = sql.onDialectOrElse({ pg: () => sql`FOR UPDATE SKIP LOCKED`, orElse: () => sql`` })
        const ids = yield* sql<{ readonly id: string }>`
          UPDATE deliveries SET claimed_until = ${claimedUntil}, claim_token = ${token}
          WHERE id IN (
            SELECT id FROM deliveries
            WHERE status = 'pending' AND next_attempt_at <= ${now}
              AND (claimed_until IS NULL OR claimed_until < ${now})
            ORDER BY next_attempt_at LIMIT ${limit} ${lock}
          )
          RETURNING id`
        if (ids.length === 0) return []
        return yield* sql<ClaimedDelivery>`
          SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.attempt_count, d.manual, d.claim_token, d.next_attempt_at,
                 w.url, w.secret, w.status AS webhook_status, e.payload, e.trace_context
          FROM deliveries d
          JOIN webhooks w ON w.id = d.webhook_id
          JOIN events e ON e.id = d.event_id
          WHERE d.id IN ${sql.in(ids.map((row) => row.id))} AND d.claim_token = ${token}`
      })

    const insertAttempts = (attempts: ReadonlyArray<AttemptRecord>) =>
      attempts.length === 0
        ? Effect.void
        : sql`INSERT INTO delivery_attempts ${sql.insert(attempts.map((attempt) => ({ ...attempt })))}`.pipe(Effect.asVoid)

    /** Writes the outcome if this process still holds the claim; answers whether it did. */
    const settle = (
      claimed: ClaimedDelivery,
      outcome: {
        readonly status: Delivery["status"]
        readonly attempt_count: number
        readonly next_attempt_at: string | null
        readonly last_attempt_at: string
      }
    ) =>
      Effect.map(
        sql<{ readonly id: string }>`
          UPDATE deliveries SET ${
          sql.update({ ...outcome, manual: 0, claimed_until: null, claim_token: null })
        }
          WHERE id = ${claimed.id} AND claim_token = ${claimed.claim_token}
          RETURNING id`,
        (rows) => rows.length > 0
      )

    /** `active` changes only webhooks that are failed; `failed` marks them all. */
    const markWebhooks = (ids: ReadonlyArray<string>, status: "active" | "failed", now: string) =>
      ids.length === 0
        ? Effect.void
        : status === "active"
        ? sql`UPDATE webhooks SET status = 'active', failed_at = NULL, updated_at = ${now}
              WHERE id IN ${sql.in(ids)} AND status = 'failed'`.pipe(Effect.asVoid)
        : sql`UPDATE webhooks SET status = 'failed', failed_at = ${now}, updated_at = ${now}
              WHERE id IN ${sql.in(ids)}`.pipe(Effect.asVoid)

    const pendingCount = Effect.map(
      sql<{ readonly n: number }>`SELECT CAST(count(*) AS INTEGER) AS n FROM deliveries WHERE status = 'pending'`,
      (rows) => Number(rows[0]?.n ?? 0)
    )

    return {
      insert,
      find,
      list,
      update,
      remove,
      listDeliveries,
      findDelivery,
      attemptsOf,
      scheduleNow,
      claim,
      insertAttempts,
      settle,
      markWebhooks,
      pendingCount
    } as const
  })
}) {}
