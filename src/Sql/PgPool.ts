/**
 * The `pg` pool under `@effect/sql-pg` (src/Sql/Client.ts), with either kind of connection: `StatementCountingClient`
 * below, or the `prepared-statements` fast path's (src/Sql/PgPrepared.ts), which is one too.
 *
 * What must hold: an interrupted statement never cancels someone else's. `@effect/sql-pg` answers the interruption
 * of a fiber whose statement is running with `SELECT pg_cancel_backend(<pid>)` on another connection, and gives the
 * statement's connection back to the pool. That cancel is a signal to the server process, applied to whatever it
 * runs when the signal arrives: when the statement has just ended, the pool may already have given the connection
 * to another request, whose statement then fails with "canceling statement due to user request" (57014), a 500
 * (Effect-TS/effect#8068, fixed in Effect 4's client only). So this pool never sends it: it answers that cancel once
 * the connection has no statement in flight. An interrupted statement runs to its end (a transaction's later
 * statements do not run, and it is rolled back), and its connection goes back to the pool idle. The service's
 * statements take milliseconds, so an interruption waits that long; `@effect/sql-pg` waits at most 5 s for the
 * cancel, then gives the connection back anyway, and the next statement on it queues behind the running one.
 */
import { SqlError } from "@effect/sql/SqlError"
import { Duration, Effect, Redacted, type Scope } from "effect"
import Pg from "pg"
import type { Outside } from "./Straight.js"

/** What `@effect/sql-pg` sends through the pool to cancel the statement running on the connection of that pid. */
const CANCEL = /^SELECT pg_cancel_backend\((\d+)\)$/

/** A `pg` connection that knows when it has no statement in flight (`whenIdle`). */
export class StatementCountingClient extends Pg.Client {
  private inFlight = 0
  private waiting: Array<() => void> = []

  /**
   * Calls `f` once no statement is in flight: at once if none is. (A connection that ends fails the statements it
   * had, so their callbacks run then.)
   */
  whenIdle(f: () => void): void {
    if (this.inFlight === 0) f()
    else this.waiting.push(f)
  }

  private settled(): void {
    this.inFlight -= 1
    if (this.inFlight > 0) return
    const waiting = this.waiting
    this.waiting = []
    for (const f of waiting) f()
  }

  /**
   * Counts each statement given with a callback, the way `@effect/sql-pg` runs them: `query(text, values, callback)`
   * or `query(config, callback)`. (It streams through a cursor, without a callback; the service does not stream.)
   */
  override query<T>(...args: ReadonlyArray<unknown>): T
  override query(...args: ReadonlyArray<unknown>): unknown {
    const last = args.length - 1
    const callback = args[last]
    if (last < 1 || typeof callback !== "function") return Reflect.apply(Pg.Client.prototype.query, this, args)
    this.inFlight += 1
    let done = false
    const counted = (...results: ReadonlyArray<unknown>) => {
      if (!done) {
        done = true
        this.settled()
      }
      return Reflect.apply(callback, undefined, results)
    }
    return Reflect.apply(Pg.Client.prototype.query, this, [...args.slice(0, last), counted])
  }
}

/** The server process of a connection (`pg` sets it as it connects; its types leave it out). */
const processIdOf = (client: Pg.PoolClient): number | undefined => {
  const pid: unknown = Reflect.get(client, "processID")
  return typeof pid === "number" ? pid : undefined
}

/** A pool whose connections are `StatementCountingClient`s, and which never sends a cancel (see above). */
class CancelSafePool extends Pg.Pool {
  private readonly byPid = new Map<number, StatementCountingClient>()

  constructor(config: Pg.PoolConfig & { readonly Client: typeof StatementCountingClient }) {
    super(config)
    this.on("connect", (client) => {
      const pid = processIdOf(client)
      if (client instanceof StatementCountingClient && pid !== undefined) this.byPid.set(pid, client)
    })
    this.on("remove", (client) => {
      const pid = processIdOf(client)
      if (pid !== undefined) this.byPid.delete(pid)
    })
  }

  override query<T>(...args: ReadonlyArray<unknown>): T
  override query(...args: ReadonlyArray<unknown>): unknown {
    const [text, callback] = args
    const pid = typeof text === "string" ? CANCEL.exec(text)?.[1] : undefined
    if (pid === undefined || typeof callback !== "function") return Reflect.apply(Pg.Pool.prototype.query, this, args)
    const answer = () => callback(null, { rows: [{ pg_cancel_backend: false }] })
    const client = this.byPid.get(Number(pid))
    if (client === undefined) answer()
    else client.whenIdle(answer)
    return undefined
  }
}

export interface PoolOptions {
  readonly url: Redacted.Redacted
  readonly maxConnections: number
  readonly applicationName: string
  /** How long a new connection may take to be ready (`pg` waits without end by default). */
  readonly connectTimeout: Duration.Duration
  /** The connections' class: `StatementCountingClient` or one made from it. */
  readonly Client: typeof StatementCountingClient
}

/**
 * The pool, for `PgClient.layerFromPool`, ended with its scope; connected once to check the address, as
 * `PgClient.make` does.
 */
export const makePool = (options: PoolOptions): Effect.Effect<Pg.Pool, SqlError, Scope.Scope> =>
  Effect.gen(function* () {
    const pool = yield* Effect.acquireRelease(
      Effect.sync((): Pg.Pool => {
        const pool = new CancelSafePool({
          connectionString: Redacted.value(options.url),
          max: options.maxConnections,
          application_name: options.applicationName,
          connectionTimeoutMillis: Duration.toMillis(options.connectTimeout),
          Client: options.Client
        })
        // An idle connection's error (the server restarted, say) is the pool's to handle: it drops the connection.
        pool.on("error", () => {})
        return pool
      }),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    )
    yield* Effect.tryPromise({
      try: () => pool.query("SELECT 1"),
      catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
    })
    return pool
  })

/** A result's rows, as `@effect/sql-pg` answers them: a text of several statements gives one list per statement. */
const rowsOf = (result: Pg.QueryResult | Array<Pg.QueryResult>): ReadonlyArray<unknown> =>
  Array.isArray(result) ? result.map((one) => one.rows ?? []) : (result.rows ?? [])

/**
 * How the `pg-statements` fast path (src/Sql/Client.ts, src/Sql/Straight.ts) runs a statement outside a
 * transaction: a connection checked out of the pool for that statement alone, and given back once it has run, as
 * `@effect/sql-pg` does, but in one callback rather than through an effect of its own for each statement (its
 * check-out, its error listener and its cancel, inside the library's span and `Scope`). As there:
 *
 * - the failures are `SqlError`s whose cause is `pg`'s error ("Failed to acquire connection", "Connection error",
 *   "Failed to execute statement");
 * - a statement that fails keeps its connection (`pg-pool`'s own `query` would drop it, and every prepared statement
 *   on it, after a unique-key clash); a connection that breaks is dropped;
 * - a fiber interrupted before its connection comes runs nothing (the connection goes back at once); one interrupted
 *   while its statement runs stops waiting, and the statement runs to its end before its connection goes back, with
 *   no cancel sent (above).
 */
export const queryOnPool =
  (pool: Pg.Pool): Outside =>
  <A>(text: string, params: ReadonlyArray<unknown>) =>
    Effect.async<ReadonlyArray<A>, SqlError>((resume) => {
      let abandoned = false
      pool.connect((cause, client, release) => {
        if (cause || client === undefined) {
          const why = cause ?? new Error("No client returned")
          if (!abandoned) resume(Effect.fail(new SqlError({ cause: why, message: "Failed to acquire connection" })))
          return
        }
        if (abandoned) return release()
        let settled = false
        const broke = (error: Error) => {
          if (settled) return
          settled = true
          release(error)
          resume(Effect.fail(new SqlError({ cause: error, message: "Connection error" })))
        }
        client.once("error", broke)
        const ran = (error: Error | null, result?: Pg.QueryResult) => {
          client.off("error", broke)
          if (settled) return
          settled = true
          release()
          if (error || result === undefined) {
            resume(Effect.fail(new SqlError({ cause: error, message: "Failed to execute statement" })))
          } else {
            // The rows as the statement's type says, as the library's connection answers them (`any`).
            resume(Effect.succeed(rowsOf(result) as ReadonlyArray<A>))
          }
        }
        try {
          client.query(text, [...params], ran)
        } catch (thrown) {
          // `pg` throws before sending for a query it cannot make (as `pg-pool`'s own `query` guards against).
          ran(thrown instanceof Error ? thrown : new Error(String(thrown)))
        }
      })
      return Effect.sync(() => {
        abandoned = true
      })
    })
