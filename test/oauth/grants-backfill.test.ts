/**
 * Migration 0013 on rows already there, on the engine `DATABASE_URL` selects: tokens and codes issued before
 * grants existed are given one grant per user and client that still has something live (its scopes the union of
 * theirs), so they are listed and can be revoked; rows with nothing live keep no grant; the operator's clients keep
 * no owner and get an `updated_at`.
 */
import { expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime } from "effect"
import { OAuthGrants } from "../../src/OAuth/Grants.ts"
import { OAuthTokens } from "../../src/OAuth/Tokens.ts"
import { SqlClientLive, SqlLive } from "../../src/Sql/Client.ts"
import { runMigrationsBefore } from "../../src/Sql/Migrations.ts"
import { withDatabaseUrl } from "../support/fixtures.ts"
import { freshDatabaseUrl } from "../support/server.ts"
import { principalOf } from "../support/services.ts"

const USER = "usr_01jd3xkq8w0000000000000001"
const ORG = "org_01jd3xkq8w0000000000000001"
const CLIENT = "cli_01jd3xkq8w0000000000000001"
const DEAD_CLIENT = "cli_01jd3xkq8w0000000000000002"
const PAST = "2000-01-01T00:00:00.000Z"
const FUTURE = "2999-01-01T00:00:00.000Z"
const NOW = new Date().toISOString()
// The access token `pco_` + 40 × "a", as stored: its SHA-256.
const ACCESS = `pco_${"a".repeat(40)}`
const hash = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex")

test("0013 gives live tokens and codes of before a grant per user and client; revoking it stops them", async () => {
  const databaseUrl = await freshDatabaseUrl()
  const old = ManagedRuntime.make(SqlClientLive.pipe(Layer.provide(withDatabaseUrl(databaseUrl))))
  await old.runPromise(
    Effect.gen(function* () {
      yield* runMigrationsBefore("0013_oauth_apps")
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO orgs ${sql.insert({ id: ORG, name: "Org", created_at: NOW })}`
      yield* sql`INSERT INTO users ${sql.insert({ id: USER, org_id: ORG, email: "old@example.com", name: "Old", password_hash: null, created_at: NOW, updated_at: NOW })}`
      for (const id of [CLIENT, DEAD_CLIENT]) {
        yield* sql`INSERT INTO oauth_clients ${sql.insert({ id, name: `App ${id.slice(-1)}`, secret_hash: null, redirect_uris: '["https://a.example/cb"]', is_public: 1, created_at: NOW })}`
      }
      const token = (id: string, client: string, kind: string, scope: string, expires: string, secret: string) =>
        sql`INSERT INTO oauth_tokens ${sql.insert({ id, token_hash: hash(secret), kind, client_id: client, user_id: USER, scope, family_id: "code_x", created_at: NOW, expires_at: expires, used_at: null, revoked_at: null })}`
      yield* token("tok_1", CLIENT, "access", "read", FUTURE, ACCESS)
      yield* token("tok_2", CLIENT, "refresh", "read projects:write", FUTURE, "pcr_x")
      yield* token("tok_3", DEAD_CLIENT, "access", "write", PAST, "pco_dead")
      yield* sql`INSERT INTO oauth_codes ${sql.insert({ id: "code_1", code_hash: hash("c"), client_id: CLIENT, user_id: USER, redirect_uri: "https://a.example/cb", scope: "team:manage", code_challenge: null, created_at: NOW, expires_at: FUTURE, used_at: null })}`
    })
  )
  await old.dispose()

  const migrated = ManagedRuntime.make(
    Layer.mergeAll(OAuthGrants.Default, OAuthTokens.Default).pipe(
      Layer.provideMerge(SqlLive),
      Layer.provide(withDatabaseUrl(databaseUrl))
    )
  )
  await migrated.runPromise(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const me = principalOf({ id: USER, org_id: ORG })
      const grants = yield* (yield* OAuthGrants).list(me, { page: 1, per_page: 20, sort: "created_at", order: "desc" })
      expect(grants.total).toBe(1)
      expect(grants.items[0]).toMatchObject({
        client: { id: CLIENT, name: "App 1" },
        scopes: ["read", "projects:write", "team:manage"]
      })
      const rows = yield* sql<{
        id: string
        grant_id: string | null
      }>`SELECT id, grant_id FROM oauth_tokens ORDER BY id`
      expect(rows.map((row) => [row.id, row.grant_id === null])).toEqual([
        ["tok_1", false],
        ["tok_2", false],
        ["tok_3", true]
      ])
      const clients = yield* sql<{
        owner_id: string | null
        updated_at: string
      }>`SELECT owner_id, updated_at FROM oauth_clients`
      expect(clients.every((client) => client.owner_id === null && client.updated_at === NOW)).toBe(true)

      const tokens = yield* OAuthTokens
      expect((yield* tokens.authenticate(ACCESS)).userId).toBe(USER)
      yield* (yield* OAuthGrants).revoke(me, grants.items[0]!.id)
      expect((yield* Effect.flip(tokens.authenticate(ACCESS)))._tag).toBe("Unauthorized")
      const [codes] = yield* sql<{ n: unknown }>`SELECT count(*) AS n FROM oauth_codes`
      expect(Number(codes?.n)).toBe(0)
    })
  )
  await migrated.dispose()
}, 60_000)
