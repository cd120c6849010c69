/**
 * The idiomatic Effect 3 yardstick for the service's hot endpoints, written the way the Effect docs write a
 * program: one `HttpApi`, a bearer `HttpApiMiddleware` that hashes the key (SHA-256) and looks it up through
 * `@effect/sql`, rows decoded with `Schema.Struct`, envelopes encoded by schema, served on `@effect/platform-bun`.
 * No rate limiter, no access log, no metrics, no spans: the framework's floor for this work.
 *
 * It keeps its OWN schema (created on start) in its own database: a SQLite file through `@effect/sql-sqlite-bun`, or,
 * when `BASELINE_DB` is a `postgres://` URL, a PostgreSQL database through `@effect/sql-pg` (the same statements and
 * column types on both, text as the service stores them). Its indexes are the ones an expert would give its queries:
 * `(owner_id, created_at, id)` for its one list, the primary keys for a project and a key. The keys it accepts are
 * given at start as `user_id:token` pairs (the same tokens as the service's, so one wrk command line serves both):
 *
 *   BASELINE_DB=/tmp/baseline.sqlite BASELINE_KEYS=usr_a:tok_a,usr_b:tok_b PORT=3918 bun bench/baseline/server.ts
 *   BASELINE_DB=postgres://postgres@127.0.0.1:5432/baseline BASELINE_KEYS=… PORT=3918 bun bench/baseline/server.ts
 *
 * `BASELINE_HTTP=node` serves it on `node:http` instead of `Bun.serve` (below).
 *
 * Visibility is the service's rule (own projects, and `team` projects of the user's teams) for a single project;
 * the list reads the user's own projects only, which is the same set for the benchmark's users (no teams) and the
 * query the issue names: `SELECT count(*)` plus `ORDER BY created_at DESC, id DESC LIMIT … OFFSET …`. A create does
 * the service's outbox work: the project, its event, the event's audience row (what the events feed reads) and the
 * owner's subscriptions read, in one transaction.
 *
 * `BASELINE_AUDIT=1` adds what the contract has asked of every change since (decisions.md "Who did it"): the
 * event names its actor (the key's user, whose name the key's lookup then reads with it, as the service's does), and
 * the create writes an audit record in the same transaction, into a table with the indexes an expert would give the
 * team's and the user's audit logs by time (team, actor, user); not the service's walks by sequence for the cursor.
 *
 * `BASELINE_CONTRACT=1` adds what the contract asks of every `/v1` answer (decisions.md "Envelopes, request ids",
 * "Observability", "Limits", "Conditional requests"), the way the platform's docs would: the request id (the
 * client's `X-Request-Id` when it is a UUID, else a new one) in the envelope, the `X-Request-Id` header and the logs;
 * a JSON log line for each request (`HttpMiddleware.logger` with `Logger.json`); a token bucket a key
 * (`@effect/experimental`'s `RateLimiter` over its memory store, `RATE_LIMIT_PER_MINUTE` a minute, 1,000 unless set)
 * whose `X-RateLimit-Limit`, `-Remaining` and `-Reset` go on the answer (a 429 with `Retry-After` when it is empty);
 * and the single project's `ETag` (128 bits of the SHA-256 of its JSON), `If-None-Match` answered 304. Without it,
 * none of these: the framework's floor for this work, as the issue measured it.
 */

import { createServer } from "node:http"
import * as RateLimiter from "@effect/experimental/RateLimiter"
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiError,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  HttpApp,
  HttpMiddleware,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { BunHttpServer, BunRuntime } from "@effect/platform-bun"
import { NodeHttpServer } from "@effect/platform-node"
import { SqlClient, SqlSchema } from "@effect/sql"
import { Context, Duration, Effect, FiberRef, Layer, Logger, Option, Redacted, Schema } from "effect"

// --- Domain -------------------------------------------------------------------------------------------------

const Project = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  description: Schema.String,
  visibility: Schema.Literal("private", "team", "public"),
  status: Schema.Literal("active", "archived"),
  owner_id: Schema.String,
  team_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
type Project = typeof Project.Type

const NewProject = Schema.Struct({
  name: Schema.Trim.pipe(Schema.minLength(1), Schema.maxLength(100)),
  description: Schema.optional(Schema.String.pipe(Schema.maxLength(2000)))
})

const Meta = Schema.Struct({ request_id: Schema.String })
const Envelope = Schema.Struct({ data: Project, meta: Meta })
const ListEnvelope = Schema.Struct({
  data: Schema.Array(Project),
  meta: Schema.Struct({ total: Schema.Int, page: Schema.Int, per_page: Schema.Int, request_id: Schema.String })
})

class User extends Context.Tag("User")<
  User,
  { readonly id: string; readonly name: string; readonly keyId: string }
>() {}

/** Whether a create writes its audit record and its event names the actor (`BASELINE_AUDIT=1`, above). */
const audited = process.env.BASELINE_AUDIT === "1"

/** Whether every `/v1` answer does what the contract asks (`BASELINE_CONTRACT=1`, above). */
const contract = process.env.BASELINE_CONTRACT === "1"
const perMinute = Number(process.env.RATE_LIMIT_PER_MINUTE ?? 1000)

class TooManyRequests extends Schema.TaggedError<TooManyRequests>()(
  "TooManyRequests",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 429 })
) {}

class NotModified extends HttpApiSchema.EmptyError<NotModified>()({ tag: "NotModified", status: 304 }) {}

class NotFound extends Schema.TaggedError<NotFound>()(
  "NotFound",
  { message: Schema.String },
  HttpApiSchema.annotations({ status: 404 })
) {}

// --- Contract -----------------------------------------------------------------------------------------------

class Authorization extends HttpApiMiddleware.Tag<Authorization>()("Authorization", {
  failure: Schema.Union(HttpApiError.Unauthorized, TooManyRequests),
  provides: User,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

const ListParams = Schema.Struct({
  page: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.positive()), { default: () => 1 }),
  per_page: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 100)), {
    default: () => 20
  })
})

class ProjectsGroup extends HttpApiGroup.make("projects")
  .add(HttpApiEndpoint.get("list", "/v1/projects").setUrlParams(ListParams).addSuccess(ListEnvelope))
  .add(HttpApiEndpoint.post("create", "/v1/projects").setPayload(NewProject).addSuccess(Envelope, { status: 201 }))
  .add(
    HttpApiEndpoint.get("get", "/v1/projects/:id")
      .setPath(Schema.Struct({ id: Schema.String }))
      .addSuccess(Envelope)
      .addError(NotFound)
      .addError(NotModified)
  )
  .middleware(Authorization) {}

class BaselineApi extends HttpApi.make("baseline").add(ProjectsGroup) {}

// --- Schema -------------------------------------------------------------------------------------------------

const statements = [
  `CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS api_keys (
    key_hash TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id),
    revoked_at TEXT,
    expires_at TEXT
  )`,
  `CREATE TABLE IF NOT EXISTS team_members (
    team_id TEXT NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id),
    PRIMARY KEY (user_id, team_id)
  )`,
  `CREATE TABLE IF NOT EXISTS projects (
    id TEXT PRIMARY KEY,
    owner_id TEXT NOT NULL REFERENCES users (id),
    team_id TEXT,
    name TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    visibility TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`,
  `CREATE INDEX IF NOT EXISTS projects_owner_created ON projects (owner_id, created_at, id)`,
  `CREATE TABLE IF NOT EXISTS events (
    id TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at TEXT NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS event_audience (
    user_id TEXT NOT NULL REFERENCES users (id),
    event_id TEXT NOT NULL REFERENCES events (id),
    type TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (user_id, created_at, event_id)
  )`,
  `CREATE TABLE IF NOT EXISTS webhooks (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id),
    events TEXT NOT NULL
  )`,
  `CREATE INDEX IF NOT EXISTS webhooks_user ON webhooks (user_id)`,
  ...(audited
    ? [
        `CREATE TABLE IF NOT EXISTS audit_log (
          id TEXT PRIMARY KEY,
          action TEXT NOT NULL,
          actor_id TEXT NOT NULL,
          actor_name TEXT NOT NULL,
          credential_type TEXT NOT NULL,
          credential_id TEXT NOT NULL,
          target_type TEXT NOT NULL,
          target_id TEXT NOT NULL,
          target_name TEXT,
          team_id TEXT,
          user_id TEXT,
          ip TEXT,
          user_agent TEXT,
          request_id TEXT NOT NULL,
          created_at TEXT NOT NULL
        )`,
        `CREATE INDEX IF NOT EXISTS audit_log_team ON audit_log (team_id, created_at, id)`,
        `CREATE INDEX IF NOT EXISTS audit_log_actor ON audit_log (actor_id, created_at, id)`,
        `CREATE INDEX IF NOT EXISTS audit_log_user ON audit_log (user_id, created_at, id)`
      ]
    : [])
]

const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex")

/** A project's `ETag`: 128 bits of the SHA-256 of its JSON. */
const etagOf = (project: Project) =>
  `"${new Bun.CryptoHasher("sha256").update(JSON.stringify(project)).digest("base64url").slice(0, 22)}"`

/** `headers` on the answer this request gets. */
const onResponse = (headers: Record<string, string>) =>
  HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeaders(response, headers))
  )

/** The request's id (`BASELINE_CONTRACT=1`), set by `requestIds` below. */
const CurrentRequestId = FiberRef.unsafeMake("")
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The request id for the envelope, the logs and the `X-Request-Id` header. */
const requestIds = HttpMiddleware.make((app) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const given = request.headers["x-request-id"]
    const id = `req_${given !== undefined && UUID.test(given) ? given.toLowerCase() : crypto.randomUUID()}`
    // On the answer as the server sends it: a middleware given to `serve` runs around the sending.
    yield* onResponse({ "x-request-id": id })
    return yield* app.pipe(Effect.locally(CurrentRequestId, id), Effect.annotateLogs("request_id", id))
  })
)

/** The bucket's headers: what is left, and when it is full again (`until` from now). */
const rateLimitHeaders = (remaining: number, until: Duration.Duration) => ({
  "x-ratelimit-limit": String(perMinute),
  "x-ratelimit-remaining": String(remaining),
  "x-ratelimit-reset": String(Math.ceil((Date.now() + Duration.toMillis(until)) / 1000))
})

/** The key's bucket: one token spent, its headers on the answer, a 429 when it is empty. */
const spendToken = (limiter: RateLimiter.RateLimiter, keyId: string) =>
  limiter
    .consume({ algorithm: "token-bucket", onExceeded: "fail", key: keyId, limit: perMinute, window: "1 minute" })
    .pipe(
      Effect.flatMap((result) => onResponse(rateLimitHeaders(result.remaining, result.resetAfter))),
      Effect.catchIf(
        (error): error is RateLimiter.RateLimitExceeded => error.reason === "Exceeded",
        (exceeded) =>
          Effect.zipRight(
            onResponse({
              ...rateLimitHeaders(0, exceeded.retryAfter),
              "retry-after": String(Math.max(1, Math.ceil(Duration.toSeconds(exceeded.retryAfter))))
            }),
            Effect.fail(new TooManyRequests({ message: "Rate limit exceeded" }))
          )
      ),
      Effect.catchTag("RateLimiterError", Effect.die)
    )

// --- Implementation -----------------------------------------------------------------------------------------

const KeyRow = Schema.Struct({
  user_id: Schema.String,
  name: Schema.String,
  revoked_at: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.String)
})

const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const limiter = contract ? yield* RateLimiter.make : undefined
    const findKey = SqlSchema.findOne({
      Request: Schema.String,
      Result: KeyRow,
      // Without the audit record nothing needs the user's name: the lookup is the one key read it always was.
      execute: (hash) =>
        audited
          ? sql`SELECT k.user_id, u.name, k.revoked_at, k.expires_at FROM api_keys k JOIN users u ON u.id = k.user_id
              WHERE k.key_hash = ${hash}`
          : sql`SELECT user_id, '' AS name, revoked_at, expires_at FROM api_keys WHERE key_hash = ${hash}`
    })
    return {
      bearer: (token) =>
        Effect.gen(function* () {
          const hash = sha256(Redacted.value(token))
          const row = yield* findKey(hash).pipe(Effect.orDie)
          if (row._tag === "None") return yield* new HttpApiError.Unauthorized()
          const key = row.value
          const now = new Date().toISOString()
          if (key.revoked_at !== null || (key.expires_at !== null && key.expires_at <= now)) {
            return yield* new HttpApiError.Unauthorized()
          }
          const keyId = hash.slice(0, 16)
          if (limiter !== undefined) yield* spendToken(limiter, keyId)
          return { id: key.user_id, name: key.name, keyId }
        })
    }
  })
).pipe(Layer.provide(RateLimiter.layerStoreMemory))

const newId = (prefix: string) => `${prefix}_${crypto.randomUUID().replaceAll("-", "")}`

const ProjectsLive = HttpApiBuilder.group(BaselineApi, "projects", (handlers) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`id, name, description, visibility, status, owner_id, team_id, created_at, updated_at`

    const findProject = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, userId: Schema.String }),
      Result: Project,
      execute: ({ id, userId }) =>
        sql`SELECT ${columns} FROM projects WHERE id = ${id} AND (owner_id = ${userId} OR (visibility = 'team'
          AND team_id IN (SELECT team_id FROM team_members WHERE user_id = ${userId})))`
    })
    const page = SqlSchema.findAll({
      Request: Schema.Struct({ userId: Schema.String, limit: Schema.Number, offset: Schema.Number }),
      Result: Project,
      execute: ({ limit, offset, userId }) =>
        sql`SELECT ${columns} FROM projects WHERE owner_id = ${userId}
            ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`
    })
    const count = SqlSchema.single({
      Request: Schema.String,
      Result: Schema.Struct({ total: Schema.Number }),
      // `CAST`: PostgreSQL's count(*) is a bigint, which node-postgres reads as a string.
      execute: (userId) => sql`SELECT CAST(count(*) AS INTEGER) AS total FROM projects WHERE owner_id = ${userId}`
    })
    const insert = SqlSchema.void({
      Request: Project,
      execute: (project) => sql`INSERT INTO projects ${sql.insert(project)}`
    })
    const insertEvent = SqlSchema.void({
      Request: Schema.Struct({
        id: Schema.String,
        type: Schema.String,
        payload: Schema.String,
        created_at: Schema.String
      }),
      execute: (event) => sql`INSERT INTO events ${sql.insert(event)}`
    })
    const insertAudience = SqlSchema.void({
      Request: Schema.Struct({
        user_id: Schema.String,
        event_id: Schema.String,
        type: Schema.String,
        created_at: Schema.String
      }),
      execute: (row) => sql`INSERT INTO event_audience ${sql.insert(row)}`
    })
    const subscriptions = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ id: Schema.String, events: Schema.parseJson(Schema.Array(Schema.String)) }),
      execute: (userId) => sql`SELECT id, events FROM webhooks WHERE user_id = ${userId}`
    })
    const AuditRow = Schema.Struct({
      id: Schema.String,
      action: Schema.String,
      actor_id: Schema.String,
      actor_name: Schema.String,
      credential_type: Schema.String,
      credential_id: Schema.String,
      target_type: Schema.String,
      target_id: Schema.String,
      target_name: Schema.NullOr(Schema.String),
      team_id: Schema.NullOr(Schema.String),
      user_id: Schema.NullOr(Schema.String),
      ip: Schema.NullOr(Schema.String),
      user_agent: Schema.NullOr(Schema.String),
      request_id: Schema.String,
      created_at: Schema.String
    })
    const insertAudit = SqlSchema.void({
      Request: AuditRow,
      execute: (row) => sql`INSERT INTO audit_log ${sql.insert(row)}`
    })
    const requestId = () => crypto.randomUUID()

    return handlers
      .handle("get", ({ path }) =>
        Effect.gen(function* () {
          const user = yield* User
          const project = yield* findProject({ id: path.id, userId: user.id }).pipe(Effect.orDie)
          if (project._tag === "None") return yield* new NotFound({ message: `No project ${path.id}` })
          if (!contract) return { data: project.value, meta: { request_id: requestId() } }
          const etag = etagOf(project.value)
          yield* onResponse({ etag })
          const request = yield* HttpServerRequest.HttpServerRequest
          if (request.headers["if-none-match"] === etag) return yield* new NotModified()
          return { data: project.value, meta: { request_id: yield* FiberRef.get(CurrentRequestId) } }
        })
      )
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const user = yield* User
          const [items, total] = yield* Effect.all([
            page({ userId: user.id, limit: urlParams.per_page, offset: (urlParams.page - 1) * urlParams.per_page }),
            count(user.id)
          ]).pipe(Effect.orDie)
          const request_id = contract ? yield* FiberRef.get(CurrentRequestId) : requestId()
          return {
            data: items,
            meta: { total: total.total, page: urlParams.page, per_page: urlParams.per_page, request_id }
          }
        })
      )
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const user = yield* User
          const request = yield* HttpServerRequest.HttpServerRequest
          const now = new Date().toISOString()
          const requestIdOf = contract ? yield* FiberRef.get(CurrentRequestId) : requestId()
          const project: Project = {
            id: newId("proj"),
            name: payload.name,
            description: payload.description ?? "",
            visibility: "private",
            status: "active",
            owner_id: user.id,
            team_id: null,
            created_at: now,
            updated_at: now
          }
          // The service's outbox work, plainly: the project, its event, the event's audience (the owner) and the
          // owner's subscriptions, in one transaction.
          yield* Effect.gen(function* () {
            yield* insert(project)
            const id = newId("evt")
            const type = "project.created"
            const actor = { type: "user", id: user.id, name: user.name }
            yield* insertEvent({
              id,
              type,
              payload: JSON.stringify(
                audited
                  ? { id, type, created_at: now, actor, data: project }
                  : { id, type, created_at: now, data: project }
              ),
              created_at: now
            })
            yield* insertAudience({ user_id: user.id, event_id: id, type, created_at: now })
            yield* subscriptions(user.id)
            if (audited) {
              yield* insertAudit({
                id: newId("aud"),
                action: "project.created",
                actor_id: user.id,
                actor_name: user.name,
                credential_type: "api_key",
                credential_id: user.keyId,
                target_type: "project",
                target_id: project.id,
                target_name: project.name,
                team_id: null,
                user_id: user.id,
                ip: Option.getOrNull(request.remoteAddress),
                user_agent: request.headers["user-agent"] ?? null,
                request_id: requestIdOf,
                created_at: now
              })
            }
          }).pipe(sql.withTransaction, Effect.orDie)
          return { data: project, meta: { request_id: requestIdOf } }
        })
      )
  })
)

const database = process.env.BASELINE_DB ?? "data/baseline.sqlite"

/**
 * The client for `BASELINE_DB`: a PostgreSQL URL → `@effect/sql-pg`'s own pool (20 connections, the service's
 * size; statements sent unnamed, so each is planned for its values); anything else → a SQLite file in WAL with `synchronous = NORMAL`. Only the chosen driver is loaded
 * (`import()`), as in the service, so each engine's RSS is its own.
 */
const ClientLive = Layer.unwrapEffect(
  Effect.promise(async (): Promise<Layer.Layer<SqlClient.SqlClient>> => {
    if (/^postgres(ql)?:\/\//.test(database)) {
      const { PgClient } = await import("@effect/sql-pg")
      // Each connection tells the planner what holds here: the data is in memory, so a page read out of order costs
      // about what one in order does (`random_page_cost` 1.1, the usual setting for that, against PostgreSQL's 4,
      // which made the list's deeper pages read all the owner's rows and sort them rather than walk the index).
      const url = new URL(database)
      url.searchParams.set("options", "-c random_page_cost=1.1")
      return Layer.orDie(PgClient.layer({ url: Redacted.make(url.toString()), maxConnections: 20 }))
    }
    const { SqliteClient } = await import("@effect/sql-sqlite-bun")
    const pragmas = Layer.effectDiscard(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe("PRAGMA journal_mode = WAL")
        yield* sql.unsafe("PRAGMA busy_timeout = 5000")
        yield* sql.unsafe("PRAGMA synchronous = NORMAL")
      })
    )
    return pragmas.pipe(Layer.provideMerge(SqliteClient.layer({ filename: database })), Layer.orDie)
  })
)

/** The schema, and the users and keys named by `BASELINE_KEYS` (`user_id:token,…`). */
const SqlLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    for (const statement of statements) yield* sql.unsafe(statement)
    const now = new Date().toISOString()
    for (const pair of (process.env.BASELINE_KEYS ?? "").split(",").filter((p) => p !== "")) {
      const [userId = "", token = ""] = pair.split(":")
      yield* sql`INSERT INTO users ${sql.insert({ id: userId, name: "Bench", created_at: now })} ON CONFLICT DO NOTHING`
      yield* sql`INSERT INTO api_keys ${sql.insert({ key_hash: sha256(token), user_id: userId, revoked_at: null, expires_at: null })} ON CONFLICT DO NOTHING`
    }
  })
).pipe(Layer.provideMerge(ClientLive))

/**
 * `@effect/platform-bun` (`Bun.serve`) unless `BASELINE_HTTP=node`: then `@effect/platform-node` on `node:http`, the
 * server the service must use (Bun.serve drops pipelined requests), to show what that choice costs by itself.
 */
const port = Number(process.env.PORT ?? 3918)
const host = process.env.HOST ?? "127.0.0.1"
const HttpLive =
  process.env.BASELINE_HTTP === "node"
    ? NodeHttpServer.layer(createServer, { port, host })
    : BunHttpServer.layer({ port, hostname: host })

/** The baseline served on `http` (bench/pipeline.ts serves it with no socket, to measure its own work). */
export const baselineOn = <ROut, E, RIn>(http: Layer.Layer<ROut, E, RIn>) =>
  (contract ? HttpApiBuilder.serve((app) => requestIds(HttpMiddleware.logger(app))) : HttpApiBuilder.serve()).pipe(
    Layer.provide(contract ? Logger.json : Layer.empty),
    Layer.provide(HttpApiBuilder.api(BaselineApi)),
    Layer.provide(ProjectsLive),
    Layer.provide(AuthorizationLive),
    Layer.provide(SqlLive),
    Layer.provide(http)
  )

// Its logs are `Logger.json`'s lines (with `BASELINE_CONTRACT=1`), not the pretty ones `runMain` adds by default.
if (import.meta.main) BunRuntime.runMain(Layer.launch(baselineOn(HttpLive)), { disablePrettyLogger: true })
