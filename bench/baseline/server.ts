/**
 * The idiomatic Effect 3 baseline (issue 14): one `HttpApi` doing the same work as the service's hot endpoints,
 * written the way the Effect docs write it — a bearer `HttpApiMiddleware` that hashes the key and looks it up
 * through `@effect/sql`, schema-decoded rows, schema-encoded envelopes, on `@effect/platform-bun`. No rate
 * limiter, no access log, no request-id header, no metrics, no spans: the framework's floor for this work.
 *
 * It reads the service's own database (run the service once first so the migrations exist):
 *   DATABASE_URL=sqlite:/path/db.sqlite PORT=3918 bun bench/baseline/server.ts
 */
import {
  HttpApi,
  HttpApiBuilder,
  HttpApiEndpoint,
  HttpApiError,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity
} from "@effect/platform"
import { BunHttpServer, BunRuntime } from "@effect/platform-bun"
import { SqlClient, SqlSchema } from "@effect/sql"
import { SqliteClient } from "@effect/sql-sqlite-bun"
import { Context, Effect, Layer, Redacted, Schema } from "effect"

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

class User extends Context.Tag("User")<User, { readonly id: string; readonly orgId: string }>() {}

class NotFound extends Schema.TaggedError<NotFound>()(
  "NotFound",
  { message: Schema.String },
  HttpApiSchema.annotations({
    status: 404
  })
) {}

// --- Contract -----------------------------------------------------------------------------------------------

class Authorization extends HttpApiMiddleware.Tag<Authorization>()("Authorization", {
  failure: HttpApiError.Unauthorized,
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
  )
  .middleware(Authorization) {}

class BaselineApi extends HttpApi.make("baseline").add(ProjectsGroup) {}

// --- Implementation -----------------------------------------------------------------------------------------

const KeyRow = Schema.Struct({
  user_id: Schema.String,
  org_id: Schema.String,
  scopes: Schema.parseJson(Schema.Array(Schema.String)),
  revoked_at: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.String)
})

const AuthorizationLive = Layer.effect(
  Authorization,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const findKey = SqlSchema.findOne({
      Request: Schema.String,
      Result: KeyRow,
      execute: (hash) =>
        sql`SELECT k.user_id, u.org_id, k.scopes, k.revoked_at, k.expires_at
            FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = ${hash}`
    })
    return {
      bearer: (token) =>
        Effect.gen(function* () {
          const hash = new Bun.CryptoHasher("sha256").update(Redacted.value(token)).digest("hex")
          const row = yield* findKey(hash).pipe(Effect.orElseSucceed(() => undefined))
          if (row === undefined || row._tag === "None") return yield* new HttpApiError.Unauthorized()
          const key = row.value
          const now = new Date().toISOString()
          if (key.revoked_at !== null || (key.expires_at !== null && key.expires_at <= now)) {
            return yield* new HttpApiError.Unauthorized()
          }
          return { id: key.user_id, orgId: key.org_id }
        })
    }
  })
)

const newId = (prefix: string) => `${prefix}_${crypto.randomUUID().replaceAll("-", "")}`

const ProjectsLive = HttpApiBuilder.group(BaselineApi, "projects", (handlers) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const visible = (userId: string) =>
      sql`(p.owner_id = ${userId} OR (p.visibility = 'team' AND p.team_id IN (
        SELECT team_id FROM team_members WHERE user_id = ${userId})))`
    const columns = sql`p.id, p.name, p.description, p.visibility, p.status, p.owner_id, p.team_id, p.created_at, p.updated_at`

    const findProject = SqlSchema.findOne({
      Request: Schema.Struct({ id: Schema.String, userId: Schema.String }),
      Result: Project,
      execute: ({ id, userId }) => sql`SELECT ${columns} FROM projects p WHERE p.id = ${id} AND ${visible(userId)}`
    })
    const page = SqlSchema.findAll({
      Request: Schema.Struct({ userId: Schema.String, limit: Schema.Number, offset: Schema.Number }),
      Result: Project,
      execute: ({ limit, offset, userId }) =>
        sql`SELECT ${columns} FROM projects p WHERE ${visible(userId)}
            ORDER BY p.created_at DESC, p.id DESC LIMIT ${limit} OFFSET ${offset}`
    })
    const count = SqlSchema.single({
      Request: Schema.String,
      Result: Schema.Struct({ total: Schema.Number }),
      execute: (userId) => sql`SELECT CAST(count(*) AS INTEGER) AS total FROM projects p WHERE ${visible(userId)}`
    })
    const insert = SqlSchema.void({
      Request: Project,
      execute: (project) => sql`INSERT INTO projects ${sql.insert(project)}`
    })
    const subscriptions = SqlSchema.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ id: Schema.String, events: Schema.parseJson(Schema.Array(Schema.String)) }),
      execute: (userId) => sql`SELECT id, events FROM webhooks WHERE user_id = ${userId}`
    })
    const requestId = () => crypto.randomUUID()

    return handlers
      .handle("get", ({ path }) =>
        Effect.gen(function* () {
          const user = yield* User
          const project = yield* findProject({ id: path.id, userId: user.id }).pipe(Effect.orDie)
          if (project._tag === "None") return yield* new NotFound({ message: `No project ${path.id}` })
          return { data: project.value, meta: { request_id: requestId() } }
        })
      )
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const user = yield* User
          const [items, total] = yield* Effect.all([
            page({ userId: user.id, limit: urlParams.per_page, offset: (urlParams.page - 1) * urlParams.per_page }),
            count(user.id)
          ]).pipe(Effect.orDie)
          return {
            data: items,
            meta: { total: total.total, page: urlParams.page, per_page: urlParams.per_page, request_id: requestId() }
          }
        })
      )
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const user = yield* User
          const now = new Date().toISOString()
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
          // The same outbox work as the service: the project, its event, and the owner's subscriptions.
          yield* Effect.gen(function* () {
            yield* insert(project)
            const id = newId("evt")
            yield* sql`INSERT INTO events ${sql.insert({
              id,
              type: "project.created",
              payload: JSON.stringify({ id, type: "project.created", created_at: now, data: project }),
              trace_context: null,
              created_at: now
            })}`
            yield* subscriptions(user.id)
          }).pipe(sql.withTransaction, Effect.orDie)
          return { data: project, meta: { request_id: requestId() } }
        })
      )
  })
)

const filename = (process.env.DATABASE_URL ?? "sqlite:data/service.sqlite").replace(/^sqlite:/, "")

const SqlLive = Layer.effectDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe("PRAGMA busy_timeout = 5000")
    yield* sql.unsafe("PRAGMA synchronous = NORMAL")
  })
).pipe(Layer.provideMerge(SqliteClient.layer({ filename })))

const ServerLive = HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiBuilder.api(BaselineApi)),
  Layer.provide(ProjectsLive),
  Layer.provide(AuthorizationLive),
  Layer.provide(SqlLive),
  Layer.provide(
    BunHttpServer.layer({ port: Number(process.env.PORT ?? 3918), hostname: process.env.HOST ?? "127.0.0.1" })
  )
)

BunRuntime.runMain(Layer.launch(ServerLive))
