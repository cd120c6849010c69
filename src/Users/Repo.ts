import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { User } from "./Api.js"

export interface UserRow extends User {
  readonly org_id: string
}

interface NewUser {
  readonly id: string
  readonly org_id: string
  readonly email: string
  readonly name: string
  readonly password_hash: string | null
  readonly created_at: string
}

export class UsersRepo extends Effect.Service<UsersRepo>()("UsersRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`id, org_id, email, name, avatar_url, created_at, updated_at`

    const insertOrg = (org: { readonly id: string; readonly name: string; readonly created_at: string }) =>
      sql`INSERT INTO orgs ${sql.insert(org)}`

    const insert = (user: NewUser) =>
      sql`INSERT INTO users ${sql.insert({ ...user, avatar_url: null, updated_at: user.created_at })}`

    const findById = (id: string) =>
      Effect.map(sql<UserRow>`SELECT ${columns} FROM users WHERE id = ${id}`, (rows) => Option.fromNullable(rows[0]))

    const update = (id: string, patch: { readonly name?: string; readonly avatar_url?: string | null }, at: string) =>
      Effect.map(
        sql<UserRow>`UPDATE users SET ${sql.update({ ...patch, updated_at: at })} WHERE id = ${id} RETURNING ${columns}`,
        (rows) => Option.fromNullable(rows[0])
      )

    /** What signing in needs: the user by (lower-cased) email, with the password hash. */
    const findCredentials = (email: string) =>
      Effect.map(
        sql<{ readonly id: string; readonly org_id: string; readonly password_hash: string | null }>`
          SELECT id, org_id, password_hash FROM users WHERE email = ${email}`,
        (rows) => Option.fromNullable(rows[0])
      )

    const setPasswordHash = (id: string, passwordHash: string, at: string) =>
      Effect.map(
        sql<{ readonly id: string }>`UPDATE users SET password_hash = ${passwordHash}, updated_at = ${at}
          WHERE id = ${id} RETURNING id`,
        (rows) => rows.length > 0
      )

    return { insertOrg, insert, findById, update, findCredentials, setPasswordHash } as const
  })
}) {}
