import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Schema } from "effect"
import { OrgId, UserId } from "../Domain/Ids.js"
import { User, UserCredentials, UserPatch, UserWithOrg } from "../Domain/User.js"
import * as PageCache from "../Sql/PageCache.js"
import * as Rows from "../Sql/Repository.js"

const NewOrg = Schema.Struct({ id: OrgId, name: Schema.String, created_at: Schema.String })

const NewUser = Schema.Struct({
  id: UserId,
  org_id: OrgId,
  email: Schema.String,
  name: Schema.String,
  password_hash: Schema.NullOr(Schema.String),
  created_at: Schema.String
})

export class UsersRepo extends Effect.Service<UsersRepo>()("UsersRepo", {
  effect: Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`id, org_id, email, name, avatar_url, created_at, updated_at`

    const insertOrg = Rows.write({ Request: NewOrg, execute: (org) => sql`INSERT INTO orgs ${sql.insert(org)}` })

    const insert = Rows.write({
      Request: NewUser,
      execute: (user) =>
        sql`INSERT INTO users ${sql.insert({ ...user, avatar_url: null, updated_at: user.created_at })}`
    })

    /** Ids here come from callers that did not check them (the CLI): an unknown or malformed one finds nothing. */
    const findById = Rows.findOne({
      Request: Schema.String,
      Result: UserWithOrg,
      execute: (id) => sql`SELECT ${columns} FROM users WHERE id = ${id}`
    })

    const update = Rows.findOne({
      Request: Schema.Struct({ id: Schema.String, patch: UserPatch, at: Schema.String }),
      Result: UserWithOrg,
      execute: ({ at, id, patch }) =>
        sql`UPDATE users SET ${sql.update({ ...patch, updated_at: at })} WHERE id = ${id} RETURNING ${columns}`
    })

    /** What signing in needs: the user by (lower-cased) email, with the password hash. */
    const findCredentials = Rows.findOne({
      Request: Schema.String,
      Result: UserCredentials,
      execute: (email) => sql`SELECT id, org_id, password_hash, suspended_at FROM users WHERE email = ${email}`
    })

    const setPasswordHash = Rows.findAll({
      Request: Schema.Struct({ id: Schema.String, passwordHash: Schema.String, at: Schema.String }),
      Result: Schema.Struct({ id: UserId }),
      execute: ({ at, id, passwordHash }) =>
        sql`UPDATE users SET password_hash = ${passwordHash}, updated_at = ${at}
          WHERE id = ${id} RETURNING id`
    })

    const Suspension = Schema.Struct({ id: UserId, suspended_at: Schema.NullOr(Schema.String) })
    /** Suspends (`at`) or reactivates (null) a user who is not so already; answers the row it changed. */
    const changeSuspension = Rows.findOne({
      Request: Schema.Struct({ id: Schema.String, at: Schema.NullOr(Schema.String) }),
      Result: Suspension,
      execute: ({ at, id }) =>
        sql`UPDATE users SET suspended_at = ${at}
          WHERE id = ${id} AND ${at === null ? sql`suspended_at IS NOT NULL` : sql`suspended_at IS NULL`}
          RETURNING id, suspended_at`
    })
    const findSuspension = Rows.findOne({
      Request: Schema.String,
      Result: Suspension,
      execute: (id) => sql`SELECT id, suspended_at FROM users WHERE id = ${id}`
    })

    /**
     * Suspends (`at`) or reactivates (null) the user; a suspended user keeps their first `suspended_at`. Answers
     * the user's `suspended_at` afterwards and whether this call changed it; none when there is no such user.
     */
    const setSuspended = (id: string, at: string | null) =>
      Effect.flatMap(
        changeSuspension({ id, at }),
        Option.match({
          onSome: (row) => Effect.succeedSome({ ...row, changed: true }),
          onNone: () =>
            Effect.map(
              findSuspension(id),
              Option.map((row) => ({ ...row, changed: false }))
            )
        })
      )

    /** Every user, oldest first (the operator's `cli users list`). */
    const listAll = Rows.findAll({
      Request: Schema.Void,
      Result: User,
      execute: () => sql`SELECT id, email, name, avatar_url, created_at, updated_at FROM users ORDER BY created_at, id`
    })

    /**
     * What would be lost, without an event, if the user were deleted: the projects they own, and the teams in which
     * they are the only owner.
     */
    /**
     * What would go with a user without its event: projects they own (`project.deleted`), team memberships
     * (`member.removed`), and deployments they started in projects that outlive them.
     */
    const holdings = Rows.single({
      Request: Schema.String,
      Result: Schema.Struct({ projects: Rows.Count, teams: Rows.Count, deployments: Rows.Count }),
      execute: (id) =>
        sql`SELECT
          CAST((SELECT count(*) FROM projects WHERE owner_id = ${id}) AS INTEGER) AS projects,
          CAST((SELECT count(*) FROM team_members WHERE user_id = ${id}) AS INTEGER) AS teams,
          CAST((SELECT count(*) FROM deployments WHERE created_by = ${id}) AS INTEGER) AS deployments`
    })

    /** Deletes the user and, by the foreign keys, their keys, webhooks, memberships and OAuth grants. */
    const remove = Rows.findAll({
      Request: Schema.String,
      Result: Schema.Struct({ id: UserId }),
      execute: (id) => sql`DELETE FROM users WHERE id = ${id} RETURNING id`
    })

    return {
      listAll: () => listAll(undefined),
      holdings,
      remove: (id: string) => Effect.map(remove(id), (rows) => rows.length > 0),
      insertOrg,
      insert,
      findById,
      /** A new name is copied onto each of the user's memberships: that change gets the large page cache. */
      update: (id: string, patch: UserPatch, at: string) =>
        patch.name === undefined ? update({ id, patch, at }) : PageCache.withLargeCache(update({ id, patch, at })),
      findCredentials,
      setSuspended,
      setPasswordHash: (id: string, passwordHash: string, at: string) =>
        Effect.map(setPasswordHash({ id, passwordHash, at }), (rows) => rows.length > 0)
    } as const
  })
}) {}
