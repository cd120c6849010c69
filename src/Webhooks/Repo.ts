import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { EventType } from "../Domain/EventTypes.js"
import { DeliveryId, type EventId, UserId, WebhookId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import { nowIso } from "../Domain/Time.js"
import {
  attemptFields,
  ClaimedDelivery,
  Delivery,
  type DeliveryEventType,
  type DeliveryStatus,
  EventDelivery,
  Headers,
  Webhook,
  WebhookSignature,
  type WebhookSort,
  type WebhookStatus
} from "../Domain/Webhook.js"
import { KeyRing } from "../Secrets/KeyRing.js"
import { counterSum, makeListPage } from "../Sql/Lists.js"
import * as Rows from "../Sql/Repository.js"

/** As stored: the event types are a JSON array in a TEXT column. */
const Events = Rows.JsonText(Schema.Array(EventType))
const WebhookRow = Schema.Struct({ ...Webhook.fields, events: Events })

const NewWebhookRow = Schema.Struct({
  id: WebhookId,
  user_id: UserId,
  url: Schema.String,
  events: Events,
  signature: WebhookSignature,
  secret: Schema.String,
  public_key: Schema.NullOr(Schema.String),
  rate_limit: Schema.NullOr(Schema.Int),
  created_at: Schema.String,
  updated_at: Schema.String
})

const WebhookChange = Schema.Struct({
  url: Schema.optionalWith(Schema.String, { exact: true }),
  events: Schema.optionalWith(Events, { exact: true }),
  secret: Schema.optionalWith(Schema.String, { exact: true }),
  /** Null with a new `secret` from `PUT`: it replaces the old one at once, with no overlap. */
  previous_secret: Schema.optionalWith(Schema.Null, { exact: true }),
  previous_secret_expires_at: Schema.optionalWith(Schema.Null, { exact: true }),
  status: Schema.optionalWith(Schema.Literal("active"), { exact: true }),
  failed_at: Schema.optionalWith(Schema.Null, { exact: true }),
  rate_limit: Schema.optionalWith(Schema.NullOr(Schema.Int), { exact: true }),
  updated_at: Schema.String
})
export type WebhookChange = typeof WebhookChange.Type

/** An attempt as stored, its headers JSON text (null for attempts made before they were recorded). */
const AttemptRow = Schema.Struct({
  ...attemptFields,
  request_headers: Schema.NullOr(Rows.JsonText(Headers)),
  response_headers: Schema.NullOr(Rows.JsonText(Headers))
})

/** The delivery list's query: the common filters and the event type. */
export interface DeliveryQuery extends ListQuery<"created_at", DeliveryStatus> {
  readonly event_type?: DeliveryEventType | undefined
}

const Id = Schema.Struct({ id: Schema.String })

/** A webhook as the operator's `webhooks list` shows it: with its owner's email. */
const OperatorWebhookRow = Schema.Struct({
  id: Schema.String,
  owner_email: Schema.String,
  url: Schema.String,
  status: Schema.String,
  events: Events,
  failed_at: Schema.NullOr(Schema.String),
  disabled_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
export type OperatorWebhookRow = typeof OperatorWebhookRow.Type

/** A webhook's latest attempt and its attempts since a time (`healthOf`). */
const HealthRow = Schema.Struct({
  webhook_id: Schema.String,
  last_attempt_at: Schema.String,
  last_status_code: Schema.NullOr(Schema.Int),
  last_outcome: Schema.Literal("succeeded", "failed"),
  attempts: Rows.Count,
  succeeded: Rows.Count
})
export type HealthRow = typeof HealthRow.Type

/** The webhook whose `disabled_at` an operator changed, with its owner (for the audit record). */
const SwitchedRow = Schema.Struct({ id: Schema.String, user_id: Schema.String, url: Schema.String })

export class WebhooksRepo extends Effect.Service<WebhooksRepo>()("WebhooksRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Secrets are stored encrypted, the webhook's id their associated data (src/Secrets/KeyRing.ts); the delivery
    // worker decrypts them.
    const keyRing = yield* KeyRing
    const listDeliveryRows = makeListPage(Delivery)
    const listWebhooks = makeListPage(WebhookRow)
    // The rotated-out public key is shown while its private key still signs.
    const columns = () =>
      sql`w.id, w.url, w.events, w.status, w.signature, w.public_key,
        CASE WHEN w.previous_secret_expires_at > ${nowIso()} THEN w.previous_public_key END AS previous_public_key,
        w.created_at, w.updated_at, w.failed_at, w.disabled_at, w.rate_limit`
    // The event's resource name (its `data.name`), read from the payload of the event: one primary-key step per row.
    const resourceName = sql.onDialectOrElse({
      pg: () => sql`(SELECT e.payload::json #>> '{data,name}' FROM events e WHERE e.id = d.event_id)`,
      orElse: () =>
        sql`(SELECT CAST(json_extract(e.payload, '$.data.name') AS TEXT) FROM events e WHERE e.id = d.event_id)`
    })
    // The latest attempt's status code: one step down the attempts' primary key per delivery shown.
    const deliveryColumns = sql`d.id, d.webhook_id, d.event_id, d.event_type, d.status, d.attempt_count, d.next_attempt_at, d.last_attempt_at,
      (SELECT a.status_code FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.number DESC LIMIT 1) AS last_status_code,
      ${resourceName} AS resource_name, d.created_at`
    const listEventDeliveryRows = makeListPage(EventDelivery)

    const insertRow = Rows.write({
      Request: NewWebhookRow,
      execute: (hook) => sql`INSERT INTO webhooks ${sql.insert({ ...hook, status: "active", failed_at: null })}`
    })
    const insert = (hook: typeof NewWebhookRow.Type) =>
      Effect.flatMap(keyRing.encrypt(hook.secret, hook.id), (secret) => insertRow({ ...hook, secret }))

    const find = Rows.findOne({
      Request: Schema.Struct({ userId: Schema.String, id: WebhookId }),
      Result: WebhookRow,
      execute: ({ id, userId }) => sql`SELECT ${columns()} FROM webhooks w WHERE w.id = ${id} AND w.user_id = ${userId}`
    })

    const list = (userId: string, query: ListQuery<WebhookSort, WebhookStatus>) =>
      listWebhooks(
        {
          select: columns(),
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

    const updateRow = Rows.write({
      Request: Schema.Struct({ id: WebhookId, change: WebhookChange }),
      execute: ({ change, id }) => sql`UPDATE webhooks SET ${sql.update(change)} WHERE id = ${id}`
    })
    const update = (id: WebhookId, change: WebhookChange) =>
      change.secret === undefined
        ? updateRow({ id, change })
        : Effect.flatMap(keyRing.encrypt(change.secret, id), (secret) =>
            updateRow({ id, change: { ...change, secret } })
          )

    const remove = Rows.write({ Request: WebhookId, execute: (id) => sql`DELETE FROM webhooks WHERE id = ${id}` })

    /** Every webhook with its owner's email, oldest first (the CLI's `webhooks list`). */
    const listAll = Rows.findAll({
      Request: Schema.Struct({ status: Schema.NullOr(Schema.String), id: Schema.NullOr(Schema.String) }),
      Result: OperatorWebhookRow,
      execute: ({ id, status }) => {
        const where =
          id !== null
            ? sql`WHERE w.id = ${id}`
            : status === null
              ? sql``
              : status === "disabled"
                ? sql`WHERE w.disabled_at IS NOT NULL`
                : sql`WHERE w.status = ${status}`
        return sql`SELECT w.id, u.email AS owner_email, w.url, w.status, w.events, w.failed_at, w.disabled_at, w.created_at
                   FROM webhooks w JOIN users u ON u.id = w.user_id ${where} ORDER BY w.created_at, w.id`
      }
    })

    /**
     * Sets `disabled_at` (to `at`) on a webhook that is not disabled, or clears it (`at` null) on one that is;
     * answers the webhook when it changed (nothing when it is missing or already so).
     */
    const setDisabled = Rows.findOne({
      Request: Schema.Struct({ id: Schema.String, at: Schema.NullOr(Schema.String) }),
      Result: SwitchedRow,
      execute: ({ at, id }) =>
        sql`UPDATE webhooks SET disabled_at = ${at}
            WHERE id = ${id} AND ${at === null ? sql`disabled_at IS NOT NULL` : sql`disabled_at IS NULL`}
            RETURNING id, user_id, url`
    })

    /**
     * For each of the webhooks `ids` that has had an attempt: its latest attempt (that of the delivery attempted last,
     * found backwards on `deliveries_webhook_attempted`, migration 0027, then that delivery's highest attempt number),
     * and how many attempts it had since `since` and how many of them succeeded (its deliveries attempted since then,
     * a range of the same index, and each one's attempts by primary key: correlated, so that no engine reads the
     * attempts table whole however small it is). One statement for a page.
     */
    const healthOf = Rows.findAll({
      Request: Schema.Struct({ ids: Schema.Array(Schema.String), since: Schema.String }),
      Result: HealthRow,
      execute: ({ ids, since }) =>
        // `latest` is materialized so that its one step per webhook is taken once (inlined, PostgreSQL would take
        // it once per use of `delivery_id`).
        sql`
        WITH latest AS MATERIALIZED (
          SELECT w.id AS webhook_id,
                 (SELECT d.id FROM deliveries d
                  WHERE d.webhook_id = w.id AND d.last_attempt_at IS NOT NULL
                  ORDER BY d.last_attempt_at DESC, d.id DESC LIMIT 1) AS delivery_id
          FROM webhooks w WHERE w.id IN ${sql.in(ids)}
        )
        SELECT l.webhook_id, a.attempted_at AS last_attempt_at, a.status_code AS last_status_code,
               a.outcome AS last_outcome,
               CAST(COALESCE(r.attempts, 0) AS INTEGER) AS attempts,
               CAST(COALESCE(r.succeeded, 0) AS INTEGER) AS succeeded
        FROM latest l
        JOIN delivery_attempts a ON a.delivery_id = l.delivery_id
          AND a.number = (SELECT max(x.number) FROM delivery_attempts x WHERE x.delivery_id = l.delivery_id)
        LEFT JOIN (
          SELECT p.webhook_id, sum(p.attempts) AS attempts, sum(p.succeeded) AS succeeded
          FROM (
            SELECT d.webhook_id,
                   (SELECT count(*) FROM delivery_attempts t
                    WHERE t.delivery_id = d.id AND t.attempted_at >= ${since}) AS attempts,
                   (SELECT count(*) FROM delivery_attempts t
                    WHERE t.delivery_id = d.id AND t.attempted_at >= ${since} AND t.outcome = 'succeeded') AS succeeded
            FROM deliveries d
            WHERE d.webhook_id IN ${sql.in(ids)} AND d.last_attempt_at >= ${since}
          ) p
          GROUP BY p.webhook_id
        ) r ON r.webhook_id = l.webhook_id`
    })

    /** The deliveries of event `eventId` to the webhooks of `userId`, with each webhook's URL. */
    const listEventDeliveries = (userId: string, eventId: EventId, query: ListQuery<"created_at", DeliveryStatus>) =>
      listEventDeliveryRows(
        {
          select: sql`${deliveryColumns}, w.url AS webhook_url`,
          from: sql`deliveries d JOIN webhooks w ON w.id = d.webhook_id`,
          where: [
            sql`d.event_id = ${eventId}`,
            sql`w.user_id = ${userId}`,
            ...(query.status !== undefined ? [sql`d.status = ${query.status}`] : [])
          ],
          columns: { created_at: "d.created_at" },
          createdColumn: "d.created_at",
          idColumn: "d.id",
          searchColumns: ["w.url"]
        },
        query
      )

    const listDeliveries = (webhookId: WebhookId, query: DeliveryQuery) =>
      listDeliveryRows(
        {
          select: deliveryColumns,
          from: sql`deliveries d`,
          where: [
            sql`d.webhook_id = ${webhookId}`,
            ...(query.status !== undefined ? [sql`d.status = ${query.status}`] : []),
            ...(query.event_type !== undefined ? [sql`d.event_type = ${query.event_type}`] : [])
          ],
          columns: { created_at: "d.created_at" },
          createdColumn: "d.created_at",
          idColumn: "d.id",
          searchColumns: ["d.event_type"],
          // The counters are by webhook and status: a filter by event type is counted by its rows.
          total:
            query.event_type !== undefined
              ? undefined
              : counterSum(sql, "counts_deliveries", [
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
      Result: AttemptRow,
      execute: (deliveryId) =>
        sql`
        SELECT number, attempted_at, duration_ms, status_code, error, response_body, outcome, "trigger", request_headers, response_headers
        FROM delivery_attempts WHERE delivery_id = ${deliveryId} ORDER BY number`
    })

    /** The body a delivery sends: its event's payload, stored once for every delivery and attempt of the event. */
    const payloadOf = Rows.single({
      Request: DeliveryId,
      Result: Schema.Struct({ payload: Schema.String }),
      execute: (deliveryId) =>
        sql`SELECT e.payload FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ${deliveryId}`
    })

    /**
     * Rotation: the current secret becomes the previous one (replacing any previous one: never more than two),
     * verifying until `expiresAt`; `secret` signs from now on. One statement, so two rotations at once each keep
     * the secret the other put in or took out, never a third. Answers whether it found the webhook.
     */
    const rotateSecret = (id: WebhookId, secret: string, publicKey: string | null, expiresAt: string, now: string) =>
      Effect.flatMap(
        keyRing.encrypt(secret, id),
        (encrypted) =>
          sql<{ readonly id: string }>`UPDATE webhooks SET previous_secret = secret,
                previous_secret_expires_at = ${expiresAt}, previous_public_key = public_key, secret = ${encrypted},
                public_key = ${publicKey}, updated_at = ${now}
              WHERE id = ${id} RETURNING id`
      ).pipe(Effect.map((rows) => rows.length > 0))

    /**
     * Recovery: each `failed` delivery of the webhook whose event was created in `[since, until)` (a delivery is
     * written with its event, at the event's time) gets a manual attempt asked for. One with a manual attempt already
     * asked for or any attempt in flight is left alone, as is one not `failed`. Answers how many it queued.
     */
    const recover = (webhookId: WebhookId, since: string, until: string) =>
      Effect.map(
        sql<{ readonly id: string }>`UPDATE deliveries SET manual = 1
          WHERE webhook_id = ${webhookId} AND status = 'failed' AND manual = 0 AND claim_token IS NULL
            AND created_at >= ${since} AND created_at < ${until}
          RETURNING id`,
        (rows) => rows.length
      )

    /**
     * A manual retry: one extra attempt asked for, whatever the delivery's status; its schedule is left as it is.
     * Asked for again before it is made, it is still one attempt.
     */
    const scheduleNow = (id: DeliveryId) => sql`UPDATE deliveries SET manual = 1 WHERE id = ${id}`.pipe(Effect.asVoid)

    const claimIds = Rows.findAll({
      Request: Schema.Struct({
        limit: Schema.Int,
        now: Schema.String,
        claimedUntil: Schema.String,
        token: Schema.String,
        pacing: Schema.Array(Schema.String)
      }),
      Result: Id,
      execute: ({ claimedUntil, limit, now, pacing, token }) => {
        const lock = sql.onDialectOrElse({ pg: () => sql`FOR UPDATE SKIP LOCKED`, orElse: () => sql`` })
        const unclaimed = sql`(claimed_until IS NULL OR claimed_until < ${now})`
        // Manual attempts asked for first (someone is waiting to see them), then scheduled ones by due time.
        // A webhook an operator disabled (`bun run cli webhooks disable`) has nothing claimed until it is enabled;
        // a webhook with a `rate_limit` has its deliveries claimed apart (`paced`).
        // Both read a short partial index (`webhooks_disabled`, `webhooks_rate_limited`), not every webhook.
        const free = sql`${unclaimed}
          AND webhook_id NOT IN (SELECT id FROM webhooks WHERE disabled_at IS NOT NULL
                                 UNION ALL SELECT id FROM webhooks WHERE rate_limit IS NOT NULL)`
        // A limited webhook gives at most a second's worth (its `rate_limit`) of deliveries at a time, manual ones
        // first, and none while this process is still pacing the last ones it took (`pacing`): the rest wait in the
        // table, for whichever process has room when their turn comes (src/Webhooks/Delivery/Pacer.ts). The limited
        // webhooks come first (`CROSS JOIN` keeps that order on SQLite, whose planner has no statistics and would
        // otherwise walk every delivery ever made): with none, no delivery is read (test/webhooks/claim-plan.test.ts).
        const notPacing = pacing.length === 0 ? sql`` : sql`AND w.id NOT IN ${sql.in(pacing)}`
        return sql`
          WITH manual AS (
            SELECT id FROM deliveries WHERE manual = 1 AND ${free} LIMIT ${limit} ${lock}
          ),
          due AS (
            SELECT id FROM deliveries
            WHERE status = 'pending' AND next_attempt_at <= ${now} AND ${free}
            ORDER BY next_attempt_at LIMIT ${limit} ${lock}
          ),
          paced AS (
            SELECT id FROM (
              SELECT d.id, d.manual, d.next_attempt_at, w.rate_limit,
                ROW_NUMBER() OVER (PARTITION BY d.webhook_id ORDER BY d.manual DESC, d.next_attempt_at, d.id) AS turn
              FROM webhooks w CROSS JOIN deliveries d
              WHERE d.webhook_id = w.id AND w.rate_limit IS NOT NULL AND w.disabled_at IS NULL ${notPacing}
                AND (d.claimed_until IS NULL OR d.claimed_until < ${now})
                AND (d.manual = 1 OR (d.status = 'pending' AND d.next_attempt_at <= ${now}))
            ) ranked
            WHERE turn <= rate_limit
            ORDER BY manual DESC, next_attempt_at
            LIMIT ${limit}
          )
          UPDATE deliveries SET claimed_until = ${claimedUntil}, claim_token = ${token}
          WHERE id IN (
            SELECT id FROM (
              SELECT id FROM paced
              UNION ALL SELECT id FROM manual
              UNION ALL SELECT id FROM due WHERE id NOT IN (SELECT id FROM manual)
            ) picked
            LIMIT ${limit}
          )
            AND ${unclaimed}
          RETURNING id`
      }
    })

    const claimed = Rows.findAll({
      Request: Schema.Struct({ ids: Schema.Array(Schema.String), token: Schema.String }),
      Result: ClaimedDelivery,
      execute: ({ ids, token }) =>
        sql`
          SELECT d.id, d.webhook_id, d.event_id, d.event_type, d.attempt_count, d.status, d.manual, d.claim_token, d.next_attempt_at,
                 (SELECT COALESCE(MAX(a.number), 0) FROM delivery_attempts a WHERE a.delivery_id = d.id) AS attempts_made,
                 w.url, w.signature, w.secret, w.previous_secret, w.previous_secret_expires_at, w.status AS webhook_status,
                 e.payload, e.trace_context, w.rate_limit
          FROM deliveries d
          JOIN webhooks w ON w.id = d.webhook_id
          JOIN events e ON e.id = d.event_id
          WHERE d.id IN ${sql.in(ids)} AND d.claim_token = ${token}
          ORDER BY d.manual DESC, d.next_attempt_at`
    })

    /**
     * Claims up to `limit` due deliveries for `lease`: a claim lapses at `claimedUntil`, after which any process
     * may take the delivery again. On PostgreSQL, `SKIP LOCKED` keeps concurrent claimers off each other's rows.
     */
    const claim = (
      limit: number,
      now: string,
      claimedUntil: string,
      token: string,
      pacing: ReadonlyArray<string> = []
    ) =>
      Effect.gen(function* () {
        const ids = yield* claimIds({ limit, now, claimedUntil, token, pacing })
        if (ids.length === 0) return []
        return yield* claimed({ ids: ids.map((row) => row.id), token })
      })

    /** Gives claims this process will not attempt back to the table, for any process to take now. */
    const unclaim = (claims: ReadonlyArray<ClaimedDelivery>) =>
      claims.length === 0
        ? Effect.void
        : sql`UPDATE deliveries SET claimed_until = NULL, claim_token = NULL
              WHERE id IN ${sql.in(claims.map((c) => c.id))}
                AND claim_token IN ${sql.in([...new Set(claims.map((c) => c.claim_token))])}`.pipe(Effect.asVoid)

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
      update,
      remove,
      listAll: (status: string | null) => listAll({ status, id: null }),
      findForOperator: (id: string) => Effect.map(listAll({ status: null, id }), (rows) => rows[0]),
      setDisabled: (id: string, at: string | null) => setDisabled({ id, at }),
      healthOf: (ids: ReadonlyArray<string>, since: string) =>
        ids.length === 0 ? Effect.succeed([]) : healthOf({ ids, since }),
      listEventDeliveries,
      listDeliveries,
      findDelivery: (webhookId: WebhookId, id: DeliveryId) => findDelivery({ webhookId, id }),
      attemptsOf,
      payloadOf,
      rotateSecret,
      recover,
      scheduleNow,
      claim,
      unclaim,
      pendingCount
    } as const
  })
}) {}
