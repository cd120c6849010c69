import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Schema } from "effect"
import { EventType } from "../Domain/EventTypes.js"
import { DeliveryId, UserId, WebhookId } from "../Domain/Ids.js"
import type { ListQuery } from "../Domain/Lists.js"
import {
  type AttemptRecord,
  attemptFields,
  ClaimedDelivery,
  Delivery,
  type DeliveryEventType,
  type DeliveryStatus,
  Headers,
  Webhook,
  type WebhookSort,
  type WebhookStatus
} from "../Domain/Webhook.js"
import { makeDirect, type Param } from "../Sql/Direct.js"
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
  /** Null with a new `secret` from `PUT`: it replaces the old one at once, with no overlap. */
  previous_secret: Schema.optionalWith(Schema.Null, { exact: true }),
  previous_secret_expires_at: Schema.optionalWith(Schema.Null, { exact: true }),
  status: Schema.optionalWith(Schema.Literal("active"), { exact: true }),
  failed_at: Schema.optionalWith(Schema.Null, { exact: true }),
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

/**
 * The ids a settlement wrote, from its `RETURNING` rows as the driver gives them (src/Sql/Direct.ts): each must be
 * `{ id: string }`; anything else is a bug here, a defect, as a row that does not decode is (src/Sql/Rows.ts).
 */
/** A column of a row as the driver gave it (`undefined` when the row is no object or lacks it). */
const columnOf = (row: unknown, name: string): unknown =>
  typeof row === "object" && row !== null && name in row ? Reflect.get(row, name) : undefined

const settledIds = (rows: ReadonlyArray<unknown>): Effect.Effect<Set<string>> => {
  const ids = new Set<string>()
  for (const row of rows) {
    const id = columnOf(row, "id")
    if (typeof id !== "string")
      return Effect.die(new Error(`a settled delivery row is not { id: string }: ${JSON.stringify(row)}`))
    ids.add(id)
  }
  return Effect.succeed(ids)
}

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

/** One outcome for the recorder to write: the delivery's next state, its attempt, and whether it decides its webhook. */
export interface Recording {
  readonly settlement: Settlement
  readonly attempt: AttemptRecord
  readonly webhook_id: string
  /** A success, or a delivery's last failure: the webhook's status follows the latest of these. */
  readonly decisive: boolean
}

/** What a batch of recordings wrote: the deliveries whose claims were still held, by id. */
export interface Recorded {
  readonly kept: ReadonlySet<string>
  /** The deliveries whose last failure turned their webhook `failed` (it was not before). */
  readonly failedBy: ReadonlySet<string>
}

/** What the recorder's PostgreSQL statement answers: `{ id, kind }` rows, a kept delivery or one that failed its webhook. */
const recordedOf = (rows: ReadonlyArray<unknown>): Effect.Effect<Recorded> => {
  const kept = new Set<string>()
  const failedBy = new Set<string>()
  for (const row of rows) {
    const id = columnOf(row, "id")
    const kind = columnOf(row, "kind")
    if (typeof id !== "string" || (kind !== "kept" && kind !== "failed_by"))
      return Effect.die(new Error(`a recorded row is not { id: string, kind }: ${JSON.stringify(row)}`))
    ;(kind === "kept" ? kept : failedBy).add(id)
  }
  return Effect.succeed({ kept, failedBy })
}

/** The columns of the recorder's PostgreSQL statement, one row per outcome, and how each is bound. */
const RECORD_COLUMNS: ReadonlyArray<readonly [string, "text" | "integer"]> = [
  ["id", "text"],
  ["claim_token", "text"],
  ["status", "text"],
  ["attempt_count", "integer"],
  ["next_attempt_at", "text"],
  ["last_attempt_at", "text"],
  ["number", "integer"],
  ["attempted_at", "text"],
  ["duration_ms", "integer"],
  ["status_code", "integer"],
  ["error", "text"],
  ["response_body", "text"],
  ["outcome", "text"],
  ["request_headers", "text"],
  ["response_headers", "text"],
  ["webhook_id", "text"],
  ["ordinal", "integer"],
  ["decisive", "integer"]
]

/** Row count buckets of the recorder's one PostgreSQL statement, so a handful of texts serve every batch size. */
const bucketOf = (n: number) => 2 ** Math.ceil(Math.log2(Math.max(1, n)))

export class WebhooksRepo extends Effect.Service<WebhooksRepo>()("WebhooksRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const listDeliveryRows = makeListPage(Delivery)
    const listWebhooks = makeListPage(WebhookRow)
    const columns = sql`w.id, w.url, w.events, w.status, w.created_at, w.updated_at, w.failed_at`
    // The latest attempt's status code: one step down the attempts' primary key per delivery shown.
    const deliveryColumns = sql`d.id, d.webhook_id, d.event_id, d.event_type, d.status, d.attempt_count, d.next_attempt_at, d.last_attempt_at,
      (SELECT a.status_code FROM delivery_attempts a WHERE a.delivery_id = d.id ORDER BY a.number DESC LIMIT 1) AS last_status_code,
      d.created_at`

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
        SELECT number, attempted_at, duration_ms, status_code, error, response_body, outcome, request_headers, response_headers
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
     * the secret the other put in or took out, never a third.
     */
    const rotateSecret = (id: WebhookId, secret: string, expiresAt: string, now: string) =>
      sql`UPDATE webhooks SET previous_secret = secret, previous_secret_expires_at = ${expiresAt},
            secret = ${secret}, updated_at = ${now}
          WHERE id = ${id}`.pipe(Effect.asVoid)

    /**
     * Recovery: each `failed` delivery of the webhook whose event was created in `[since, until)` (a delivery is
     * written with its event, at the event's time) becomes due now for one attempt, as a manual retry. A delivery
     * not `failed` (pending: an attempt due or in flight; delivered) is left alone. Answers how many it queued.
     */
    const recover = (webhookId: WebhookId, since: string, until: string, now: string) =>
      Effect.map(
        sql<{ readonly id: string }>`UPDATE deliveries SET manual = 1, status = 'pending', next_attempt_at = ${now}
          WHERE webhook_id = ${webhookId} AND status = 'failed' AND claim_token IS NULL
            AND created_at >= ${since} AND created_at < ${until}
          RETURNING id`,
        (rows) => rows.length
      )

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
                 w.url, w.secret, w.previous_secret, w.previous_secret_expires_at, w.status AS webhook_status,
                 e.payload, e.trace_context
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

    // The recorder's statements (a batch of outcomes, every few milliseconds under load) are fixed text by batch
    // size (src/Sql/Direct.ts), on SQLite run straight on the transaction's connection: compiling the `sql`
    // template of a 50-row batch and encoding it through a schema was most of a batch's cost.
    const direct = makeDirect(sql)
    const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
    /** Placeholders for `count` values, numbered from `first`. */
    const numbered = (count: number, first: number) =>
      Array.from({ length: count }, (_, i) => direct.placeholder(first + i)).join(", ")

    const insertAttempts = (attempts: ReadonlyArray<AttemptRecord>) => {
      if (attempts.length === 0) return Effect.void
      const params: Array<Param> = []
      for (const a of attempts) {
        params.push(a.delivery_id, a.number, a.attempted_at, a.duration_ms, a.status_code, a.error)
        params.push(a.response_body, a.outcome, a.request_headers, a.response_headers)
      }
      const text = direct.text(
        `attempts ${attempts.length}`,
        () =>
          `INSERT INTO delivery_attempts (delivery_id, number, attempted_at, duration_ms, status_code, error, response_body, outcome, request_headers, response_headers) VALUES ${direct.values(attempts.length, 10)}`
      )
      return Effect.asVoid(direct.run(text, params))
    }

    /**
     * Writes the outcomes of claims this process still holds, in one statement; answers the ids it wrote (a claim
     * that lapsed and was taken again is the other claimant's to record).
     */
    const settle = (outcomes: ReadonlyArray<Settlement>) => {
      if (outcomes.length === 0) return Effect.succeed(new Set<string>())
      const params: Array<Param> = []
      for (const o of outcomes) {
        params.push(o.id, o.claim_token, o.status, o.attempt_count, o.next_attempt_at, o.last_attempt_at)
      }
      const text = direct.text(
        `settle ${outcomes.length}`,
        () => `
          WITH outcome (id, claim_token, status, attempt_count, next_attempt_at, last_attempt_at) AS (
            VALUES ${direct.values(outcomes.length, 6)}
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
      )
      return Effect.flatMap(direct.run(text, params), settledIds)
    }

    /** Gives claims this process will not attempt back to the table, for any process to take now. */
    const unclaim = (claims: ReadonlyArray<ClaimedDelivery>) =>
      claims.length === 0
        ? Effect.void
        : sql`UPDATE deliveries SET claimed_until = NULL, claim_token = NULL
              WHERE id IN ${sql.in(claims.map((c) => c.id))}
                AND claim_token IN ${sql.in([...new Set(claims.map((c) => c.claim_token))])}`.pipe(Effect.asVoid)

    /** `active` changes only webhooks that are failed (every batch with a success asks); `failed` marks them all. */
    const markWebhooks = (ids: ReadonlyArray<string>, status: WebhookStatus, now: string) => {
      if (ids.length === 0) return Effect.void
      if (status === "failed") {
        return sql`UPDATE webhooks SET status = 'failed', failed_at = ${now}, updated_at = ${now}
              WHERE id IN ${sql.in(ids)}`.pipe(Effect.asVoid)
      }
      const text = direct.text(
        `active ${ids.length}`,
        () =>
          `UPDATE webhooks SET status = 'active', failed_at = NULL, updated_at = ${direct.placeholder(1)} WHERE id IN (${numbered(ids.length, 2)}) AND status = 'failed'`
      )
      return Effect.asVoid(direct.run(text, [now, ...ids]))
    }

    /** Those of `ids` whose webhook is not `failed` yet. */
    const notFailedAmong = (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed(new Set<string>())
        : Effect.map(
            sql<{ readonly id: string }>`SELECT id FROM webhooks WHERE id IN ${sql.in(ids)} AND status <> 'failed'`,
            (rows) => new Set(rows.map((row) => row.id))
          )

    /**
     * SQLite: the batch in steps, in one transaction (one writer at a time: nothing waits on its locks but the next
     * writer, which would wait for the file anyway).
     */
    const recordInSteps = (recordings: ReadonlyArray<Recording>, now: string) =>
      Effect.gen(function* () {
        const kept = yield* settle(recordings.map((r) => r.settlement))
        // A claim that lapsed and was taken by another process is theirs to record now.
        const owned = recordings.filter((r) => kept.has(r.settlement.id))
        yield* insertAttempts(owned.map((r) => r.attempt))
        const latest = new Map<string, Recording>()
        for (const r of owned) if (r.decisive) latest.set(r.webhook_id, r)
        const decisive = [...latest.values()]
        const failing = decisive.filter((r) => r.attempt.outcome === "failed")
        const notFailed = yield* notFailedAmong(failing.map((r) => r.webhook_id))
        const succeeded = decisive.filter((r) => r.attempt.outcome === "succeeded")
        yield* markWebhooks(
          succeeded.map((r) => r.webhook_id),
          "active",
          now
        )
        yield* markWebhooks(
          failing.map((r) => r.webhook_id),
          "failed",
          now
        )
        const failedBy = failing.filter((r) => notFailed.has(r.webhook_id)).map((r) => r.settlement.id)
        return { kept, failedBy: new Set(failedBy) }
      }).pipe(sql.withTransaction)

    /**
     * PostgreSQL: the batch as one statement (data-modifying CTEs), committed on its own. The deliveries' update
     * takes the row locks of their counters (migration 0006) and holds them until commit; in a transaction of
     * several statements they stayed held while the server, busy with requests, got round to the next statement
     * and the commit, and every create queuing a delivery for the same webhooks waited behind them. Padded to a
     * bucket with rows of NULLs, which match nothing.
     */
    const recordAtOnce = (recordings: ReadonlyArray<Recording>, now: string) => {
      const rows = bucketOf(recordings.length)
      const params: Array<Param> = [now]
      recordings.forEach(({ settlement: s, attempt: a, webhook_id, decisive }, ordinal) => {
        params.push(s.id, s.claim_token, s.status, s.attempt_count, s.next_attempt_at, s.last_attempt_at)
        params.push(a.number, a.attempted_at, a.duration_ms, a.status_code, a.error, a.response_body, a.outcome)
        params.push(a.request_headers, a.response_headers, webhook_id, ordinal, decisive ? 1 : 0)
      })
      for (let i = recordings.length * RECORD_COLUMNS.length; i < rows * RECORD_COLUMNS.length; i++) params.push(null)
      const text = direct.text(`record ${rows}`, () => {
        const row = (r: number) =>
          `(${RECORD_COLUMNS.map(([, type], c) => {
            const p = direct.placeholder(2 + r * RECORD_COLUMNS.length + c)
            return type === "text" ? p : `CAST(${p} AS INTEGER)`
          }).join(", ")})`
        return `
          WITH o (${RECORD_COLUMNS.map(([name]) => name).join(", ")}) AS (
            VALUES ${Array.from({ length: rows }, (_, r) => row(r)).join(", ")}
          ),
          settled AS (
            UPDATE deliveries SET
              status = o.status, attempt_count = o.attempt_count, next_attempt_at = o.next_attempt_at,
              last_attempt_at = o.last_attempt_at, manual = 0, claimed_until = NULL, claim_token = NULL
            FROM o
            WHERE deliveries.id = o.id AND deliveries.claim_token = o.claim_token
            RETURNING deliveries.id
          ),
          owned AS (SELECT o.* FROM o JOIN settled ON settled.id = o.id),
          attempts AS (
            INSERT INTO delivery_attempts (delivery_id, number, attempted_at, duration_ms, status_code, error, response_body, outcome, request_headers, response_headers)
            SELECT id, number, attempted_at, duration_ms, status_code, error, response_body, outcome, request_headers, response_headers FROM owned
          ),
          latest AS (
            SELECT DISTINCT ON (webhook_id) webhook_id, id, outcome = 'succeeded' AS succeeded
            FROM owned WHERE decisive = 1 ORDER BY webhook_id, ordinal DESC
          ),
          activated AS (
            UPDATE webhooks SET status = 'active', failed_at = NULL, updated_at = $1
            WHERE id IN (SELECT webhook_id FROM latest WHERE succeeded) AND status = 'failed'
          ),
          failed AS (
            UPDATE webhooks SET status = 'failed', failed_at = $1, updated_at = $1
            WHERE id IN (SELECT webhook_id FROM latest WHERE NOT succeeded)
          )
          SELECT id, 'kept' AS kind FROM settled
          UNION ALL
          SELECT latest.id, 'failed_by' FROM latest JOIN webhooks ON webhooks.id = latest.webhook_id
          WHERE NOT latest.succeeded AND webhooks.status <> 'failed'`
      })
      return Effect.flatMap(direct.run(text, params), recordedOf)
    }

    /**
     * Writes a batch of outcomes, given in the order they were attempted: each delivery's next state and its attempt
     * (only claims this process still holds), and each webhook's status after the latest decisive outcome among
     * them (a success makes a failed webhook active, a delivery's last failure makes it failed). All or nothing.
     * The statement that reads the webhooks before marking them sees them as they were (PostgreSQL: the statement's
     * snapshot), so `failedBy` names only webhooks this batch turned `failed`.
     */
    const record = (recordings: ReadonlyArray<Recording>, now: string): Effect.Effect<Recorded, SqlError> =>
      recordings.length === 0
        ? Effect.succeed({ kept: new Set(), failedBy: new Set() })
        : pg
          ? recordAtOnce(recordings, now)
          : recordInSteps(recordings, now)

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
      payloadOf,
      rotateSecret,
      recover,
      scheduleNow,
      claim,
      record,
      unclaim,
      pendingCount
    } as const
  })
}) {}
