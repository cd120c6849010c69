/**
 * The one place the database engine is chosen: `DATABASE_URL` unset or `sqlite:…` → embedded SQLite,
 * `postgres://…` → PostgreSQL. Migrations run when the layer is built. Only the chosen engine's driver is loaded
 * (`import()` when the layer is built): the PostgreSQL client and the node network modules it loads are not kept by
 * a SQLite server (nor is the Redis client, src/RateLimit/RedisStore.ts): memory at idle is what the engine needs.
 */

import { mkdirSync } from "node:fs"
import { dirname } from "node:path"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import { Context, Duration, Effect, Layer } from "effect"
import { type DatabaseConfig, DatabaseUrl, FastPathsConfig } from "../Config.js"
import { KeyRingLive } from "../Secrets/KeyRing.js"
import { checkStored } from "../Secrets/Stored.js"
import { runMigrations } from "./Migrations.js"
import * as PageCache from "./PageCache.js"
import { straightClient } from "./Straight.js"

/** The SQLite file the service's client has open (`:memory:` included), whichever client it is. */
export class SqliteFile extends Context.Tag("Sql/SqliteFile")<SqliteFile, string>() {}

/**
 * Embedded SQLite: one connection, set up below. With the `sqlite-statements` fast path it is the client of
 * src/Sql/SqliteClient.ts, whose statements run straight on that connection where nothing else could hold it; its
 * twin is the client as `@effect/sql-sqlite-bun` makes it. Either way `SqliteFile` names the file.
 */
const sqlite = (filename: string) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The busy timeout before anything else, WAL included (so the client's own switch to WAL is off): the
      // first statement on a new connection reads the file, and a process opening it while another holds a lock
      // (one recovering the WAL after the last connection closed, say) got "database is locked" at once. A CLI
      // run among ten started together did, now and then.
      yield* sql.unsafe("PRAGMA busy_timeout = 5000")
      // Pages of 2 KiB rather than SQLite's 4: a create changes a page in each of the dozen or so indexes its rows
      // are in (the lists', the events feed's), and each changed page is written whole to the WAL at commit, and
      // again at the checkpoint, so smaller pages mean fewer bytes written and checksummed per change. Lists read
      // in index order, which the slightly deeper trees barely slow. It applies only to a new, empty file: an
      // existing one keeps its page size (docs/deployment.md says how to convert one).
      yield* sql.unsafe("PRAGMA page_size = 2048")
      yield* sql.unsafe("PRAGMA journal_mode = WAL")
      yield* sql.unsafe("PRAGMA synchronous = NORMAL")
      // Checkpoint every 10,000 WAL pages rather than SQLite's 1,000: a checkpoint is the only fsync with
      // synchronous = NORMAL, and it runs in the committing connection; the checkpoint thread (Checkpointer.ts)
      // does the regular ones, this is the backstop.
      yield* sql.unsafe("PRAGMA wal_autocheckpoint = 10000")
      yield* sql.unsafe("PRAGMA foreign_keys = ON")
      // The page cache: 2 MiB while the service runs, 64 for a change that rewrites many rows (src/Sql/PageCache.ts).
      yield* PageCache.steady
    })
  ).pipe(
    Layer.provideMerge(
      Layer.unwrapEffect(
        Effect.gen(function* () {
          if (filename !== ":memory:") mkdirSync(dirname(filename), { recursive: true })
          if ((yield* Effect.orDie(FastPathsConfig)).has("sqlite-statements")) {
            return (yield* Effect.promise(() => import("./SqliteClient.js"))).layer(filename)
          }
          const SqliteClient = yield* Effect.promise(() => import("@effect/sql-sqlite-bun/SqliteClient"))
          return SqliteClient.layer({ filename, disableWAL: true })
        })
      )
    ),
    Layer.provideMerge(Layer.succeed(SqliteFile, filename))
  )

/**
 * PostgreSQL through `@effect/sql-pg`, on a pool of ours (src/Sql/PgPool.ts: an interrupted statement never cancels
 * another's). With the `prepared-statements` fast path (src/Sql/PgPrepared.ts) its connections prepare each
 * parameterised statement once; its twin's send every statement unnamed, as `PgClient.layer`'s own pool does. With
 * the `pg-statements` fast path the client's statements run straight (src/Sql/Straight.ts): outside a transaction
 * on a connection `pg-pool` checks out for that statement (`queryOnPool`), inside one on the transaction's
 * connection, without the library's span and `Scope` while tracing is off; its twin is the client as
 * `PgClient.layerFromPool` makes it.
 */
const pg = (url: DatabaseConfig & { _tag: "pg" }) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const [PgClient, { makePool, queryOnPool, StatementCountingClient }, { preparingClient, DEFAULT_CAPACITY }] =
        yield* Effect.promise(() =>
          Promise.all([import("@effect/sql-pg/PgClient"), import("./PgPool.js"), import("./PgPrepared.js")])
        )
      const fastPaths = yield* Effect.orDie(FastPathsConfig)
      // A new connection to a server that does not answer fails after `connectTimeout` rather than waiting for
      // ever (start-up included).
      const pool = makePool({
        url: url.url,
        maxConnections: 20,
        applicationName: "project-collaboration-service",
        connectTimeout: Duration.seconds(5),
        Client: fastPaths.has("prepared-statements") ? preparingClient(DEFAULT_CAPACITY) : StatementCountingClient
      })
      if (!fastPaths.has("pg-statements")) return PgClient.layerFromPool({ acquire: pool })
      return Layer.scopedContext(
        Effect.gen(function* () {
          const made = yield* pool
          const library = yield* PgClient.fromPool({ acquire: Effect.succeed(made) })
          return Context.make(PgClient.PgClient, library).pipe(
            Context.add(SqlClient.SqlClient, straightClient(library, queryOnPool(made)))
          )
        })
      ).pipe(Layer.provide(Reactivity.layer))
    })
  )

/** The SqlClient for `DATABASE_URL`, without migrations (the CLI's `migrate` runs them itself). */
export const SqlClientLive = Layer.unwrapEffect(
  Effect.map(DatabaseUrl, (db) => (db._tag === "pg" ? pg(db) : sqlite(db.filename)))
).pipe(Layer.orDie)

/**
 * The SqlClient with every migration applied, and the key ring of the secrets at rest (src/Secrets/KeyRing.ts),
 * checked against what is stored: what the server and the CLI use.
 */
export const SqlLive = Layer.effectDiscard(Effect.orDie(Effect.zipRight(runMigrations, checkStored))).pipe(
  Layer.provideMerge(SqlClientLive),
  Layer.provideMerge(KeyRingLive)
)
