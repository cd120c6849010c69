/**
 * The `sqlite-statements` fast path (docs/fast-paths.md): the SQLite client's statements and transactions, run
 * straight on its connection when nothing else could hold it. Feature code is unchanged: it still writes
 * `sql\`…\``, `sql.unsafe` and `sql.withTransaction`, and gets the same rows, the same `SqlError`s and the same
 * isolation.
 *
 * Through `@effect/sql`, every statement opens a span (a no-op one with tracing off), a `Scope`, and a lease of the
 * connection from the client's one-permit semaphore, which makes a statement outside a transaction wait while
 * another fiber's transaction is open on the (single) connection; a transaction opens a span and a `Scope` too, and
 * holds that lease until its `COMMIT` or `ROLLBACK`. Here:
 *
 * - Every outermost transaction is counted (`transactions`) from before it waits until after it has answered. With
 *   tracing off and no statement transformer it runs in a batch (`untracedTransaction`, group commit): the first
 *   waits for its turn on this client's own one-permit semaphore (`turn`) and holds it while it runs `BEGIN`, its
 *   effect, the effects of those that arrived meanwhile (each in a savepoint of its own) and one `COMMIT` (or
 *   `ROLLBACK`), as `@effect/sql` would run each, without the span and the `Scope`. Otherwise it is `@effect/sql`'s
 *   own, inside its turn (whose lease is then always free). A transaction inside one is `@effect/sql`'s savepoint, on
 *   the connection the fiber holds.
 * - A statement skips the span, the `Scope` and the lease when tracing is off for the fiber and no statement
 *   transformer is set (`Statement.withTransformer`, `setTransformer`); otherwise it takes the library's way and gets
 *   its `sql.execute` span. Inside a transaction it runs on the connection the fiber holds. Outside one it runs at
 *   once when no transaction is open or waiting and it skips the library's way: bun:sqlite runs it synchronously,
 *   so nothing can begin a transaction first. Otherwise it holds `turn` while it runs, so a read never sees another
 *   fiber's uncommitted writes (and the library's way, which may yield before it runs, never runs inside one).
 *
 * Every transaction goes through this client's `withTransaction`, and nothing else takes the library's lease
 * (`sql.reserve` is used on PostgreSQL only, src/Sql/Locks.ts), so `turn` alone decides who has the connection.
 *
 * The statement class is `@effect/sql`'s own, extended (its `commit` overridden); if a release changes its shape,
 * the client is used as it is (`directStatements` answers it unchanged), and a test says so.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Deferred, Effect, Exit, type Fiber, FiberRef, Option } from "effect"

/** The most transactions one `COMMIT` ends: it bounds what a failed `COMMIT` fails, and how long the last waits. */
const MAX_BATCH = 64

/** A transaction that joined a batch: told when to run (or why it cannot), and it says when it has. */
interface Member {
  readonly go: Deferred.Deferred<void, SqlError>
  readonly ran: Deferred.Deferred<void>
}

/**
 * Transactions run one after another in one SQLite transaction and committed together (`directStatements`): the
 * first one's, and those that arrived while it waited to begin, each in a savepoint of its own.
 */
interface Batch {
  readonly members: Array<Member>
  /** The batch's `COMMIT`, which each transaction in it that succeeded waits for before it answers. */
  readonly committed: Deferred.Deferred<void, SqlError>
  /** Why the batch cannot commit: SQLite rolled its transaction back under a member (its savepoint was gone). */
  lost: SqlError | undefined
}

/** Resumes once the event loop has handled the I/O that is ready now (`setImmediate` runs after its poll). */
const afterReadyIo = Effect.async<void>((resume) => {
  const timer = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(timer))
})

/** What `@effect/sql`'s statement class holds and does, as far as this module uses it. */
interface Primitive extends Statement.Statement<unknown> {
  readonly segments: ReadonlyArray<Statement.Segment>
  readonly acquirer: unknown
  readonly compiler: Statement.Compiler
  readonly spanAttributes: ReadonlyArray<readonly [string, unknown]>
  readonly transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  commit(): Effect.Effect<ReadonlyArray<unknown>, SqlError>
}

type PrimitiveClass = new (
  segments: Primitive["segments"],
  acquirer: Primitive["acquirer"],
  compiler: Primitive["compiler"],
  spanAttributes: Primitive["spanAttributes"],
  transformRows: Primitive["transformRows"]
) => Primitive

/** `@effect/sql`'s statement class, if `sample` is one of its statements as this module knows them. */
const primitiveClass = (sample: unknown): PrimitiveClass | undefined => {
  if (typeof sample !== "object" || sample === null) return undefined
  const fields = ["segments", "acquirer", "compiler", "spanAttributes", "transformRows"]
  if (!fields.every((field) => field in sample)) return undefined
  const prototype: unknown = Object.getPrototypeOf(sample)
  if (typeof prototype !== "object" || prototype === null) return undefined
  if (typeof (prototype as { commit?: unknown }).commit !== "function") return undefined
  const make: unknown = (prototype as { constructor?: unknown }).constructor
  return typeof make === "function" && make.length === fields.length ? (make as PrimitiveClass) : undefined
}

/**
 * `sql` with its statements and transactions run straight on `connection` where that changes nothing (above). `sql`
 * must be a SQLite client whose only connection is `connection`, and `turn` this client's alone; answers `sql` itself
 * if its statements are not as expected.
 */
export const directStatements = (
  sql: SqlClient.SqlClient,
  connection: Connection,
  /** One permit: held by a batch of transactions from its `BEGIN` to its end, and by a statement that must wait. */
  turn: Effect.Semaphore
): SqlClient.SqlClient => {
  const Base = primitiveClass(sql`SELECT 1`)
  if (Base === undefined) return sql
  /** Outermost transactions asked for through this client that have not answered yet. */
  let transactions = 0

  /** Whether `fiber`'s statements may skip `@effect/sql`'s way: tracing off, no statement transformer. */
  const untraced = (fiber: Fiber.RuntimeFiber<unknown, unknown>) =>
    !fiber.getFiberRef(FiberRef.currentTracerEnabled) && Option.isNone(fiber.getFiberRef(Statement.currentTransformer))

  class DirectStatement extends Base {
    override commit(): Effect.Effect<ReadonlyArray<unknown>, SqlError> {
      return Effect.withFiberRuntime((fiber) => {
        const held = Context.getOption(fiber.currentContext, SqlClient.TransactionConnection)
        if (Option.isSome(held)) return this.run(fiber, held.value[0])
        // Run synchronously here, where nothing can begin a transaction first; otherwise (another fiber's transaction
        // open or waiting, or the library's way, which may yield before it runs) it takes the turn.
        if (transactions === 0 && untraced(fiber)) return this.run(fiber, connection)
        return turn.withPermits(1)(Effect.withFiberRuntime((fiber) => this.run(fiber, connection)))
      })
    }

    /** Runs on `on` straight away; with tracing on or a transformer set, the library's way (which finds `on` too). */
    private run(fiber: Fiber.RuntimeFiber<unknown, unknown>, on: Connection) {
      if (!untraced(fiber)) return super.commit()
      const [text, params] = this.compile()
      return on.execute(text, params, this.transformRows)
    }
  }
  const direct = <A>(statement: A): A =>
    statement instanceof Base
      ? (new DirectStatement(
          statement.segments,
          statement.acquirer,
          statement.compiler,
          statement.spanAttributes,
          statement.transformRows
        ) as A)
      : statement

  const exec = (text: string) => connection.executeUnprepared(text, [], undefined)

  /** The batch whose first transaction has not begun yet, which a transaction arriving now joins; or none. */
  let gathering: Batch | undefined

  /** Ends `batch` with `COMMIT` (`ROLLBACK` if it is lost or that fails) and tells its transactions how it went. */
  const commit = (batch: Batch) =>
    Effect.flatMap(
      batch.lost === undefined ? Effect.exit(exec("COMMIT")) : Effect.succeed(Exit.fail(batch.lost)),
      (exit) =>
        Effect.zipRight(
          // A failed COMMIT can leave the transaction open (SQLITE_BUSY): nothing of it may stay.
          Exit.isSuccess(exit) ? Effect.void : Effect.ignore(exec("ROLLBACK")),
          Deferred.done(batch.committed, Exit.asVoid(exit))
        )
    )

  /**
   * The first transaction of `batch`, holding `turn`: stops it gathering, begins, runs its own effect, tells each
   * member in turn to run and waits until it has, and commits. Answers its own effect's exit.
   */
  const lead = <A, E, R>(batch: Batch, body: Effect.Effect<Exit.Exit<A, E>, never, R>) =>
    Effect.gen(function* (): Effect.fn.Return<Exit.Exit<A, E | SqlError>, never, R> {
      if (gathering === batch) gathering = undefined
      const begin = Effect.tapError(exec("BEGIN"), (error) =>
        Effect.sync(() => {
          batch.lost ??= error
        })
      )
      const begun = yield* Effect.exit(begin)
      const exit: Exit.Exit<A, E | SqlError> = Exit.isSuccess(begun) ? yield* body : Exit.failCause(begun.cause)
      if (Exit.isSuccess(begun) && Exit.isFailure(exit)) {
        // Its own writes go (a ROLLBACK that fails finds none left: SQLite rolled them back itself); the members run in
        // a transaction begun anew.
        yield* Effect.ignore(exec("ROLLBACK"))
        if (batch.members.length > 0) yield* Effect.ignore(begin)
      }
      for (const member of batch.members) {
        if (batch.lost !== undefined) {
          yield* Deferred.fail(member.go, batch.lost)
        } else {
          yield* Deferred.succeed(member.go, undefined)
          yield* Deferred.await(member.ran)
        }
      }
      if (Exit.isSuccess(exit) || batch.members.length > 0) yield* commit(batch)
      return exit
    }).pipe(
      // Should it end any other way (a defect), no member is left waiting, and nothing of the batch stays.
      Effect.onExit((exit) =>
        Exit.isSuccess(exit)
          ? Effect.void
          : Effect.zipRight(
              Effect.ignore(exec("ROLLBACK")),
              Effect.forEach([...batch.members.map((member) => member.go), batch.committed], (pending) =>
                Deferred.failCause(pending, exit.cause)
              )
            )
      )
    )

  /** Ends a member's savepoint with `text`; if that fails, SQLite has rolled the whole batch back, and it is lost. */
  const endSavepoint = (batch: Batch, text: string) =>
    Effect.tapError(exec(text), (error) =>
      Effect.sync(() => {
        batch.lost ??= error
      })
    )

  /**
   * A member of `batch` once told to run: its effect in a savepoint, rolled back alone if it fails. Answers its exit.
   */
  const join = <A, E, R>(
    batch: Batch,
    member: Member,
    body: Effect.Effect<Exit.Exit<A, E>, never, R>
  ): Effect.Effect<Exit.Exit<A, E>, SqlError, R> =>
    Effect.zipRight(exec("SAVEPOINT batch_member"), body).pipe(
      Effect.flatMap(
        (exit): Effect.Effect<Exit.Exit<A, E>> =>
          Exit.isSuccess(exit)
            ? Effect.as(Effect.orDie(endSavepoint(batch, "RELEASE batch_member")), exit)
            : Effect.as(
                Effect.ignore(
                  Effect.zipRight(
                    endSavepoint(batch, "ROLLBACK TO batch_member"),
                    endSavepoint(batch, "RELEASE batch_member")
                  )
                ),
                exit
              )
      ),
      Effect.ensuring(Deferred.succeed(member.ran, undefined))
    )

  /**
   * `effect` in a transaction on `connection`, as `@effect/sql`'s `withTransaction` runs it (`BEGIN`, the effect,
   * `COMMIT`, or `ROLLBACK` if it failed), without its span, and committed with the others that arrive while the first
   * of them waits to begin (group commit: one `COMMIT` for up to `MAX_BATCH`). The first waits for the I/O ready now
   * to be handled, then for `turn`; the others join it meanwhile, and each runs in a savepoint of its own when it is
   * told to, rolled back alone if it fails. The SQLite transaction is open only while the first holds `turn`,
   * for as long as running them takes (no I/O is waited for in between unless an effect waits for some). Only the
   * effect is interruptible: one interrupted while it waits is interrupted when its effect starts. A transaction
   * answers only once its batch's `COMMIT` has succeeded, and dies if that failed, as the library's does.
   */
  const untracedTransaction = <R, E, A>(effect: Effect.Effect<A, E, R>) =>
    Effect.uninterruptibleMask((restore) => {
      const body = Effect.exit(Effect.provideService(restore(effect), SqlClient.TransactionConnection, [connection, 0]))
      // One that succeeded answers once its batch is committed.
      const answer = (batch: Batch, exit: Exit.Exit<A, E | SqlError>) =>
        Exit.isSuccess(exit) ? Effect.zipRight(Effect.orDie(Deferred.await(batch.committed)), exit) : exit
      const made = Effect.all([Deferred.make<void, SqlError>(), Deferred.make<void>(), Deferred.make<void, SqlError>()])
      // Which batch it is in is decided in one synchronous step, so it cannot join one that has begun.
      return Effect.flatMap(made, ([go, ran, committed]) => {
        const open = gathering
        if (open !== undefined && open.members.length < MAX_BATCH) {
          const member: Member = { go, ran }
          open.members.push(member)
          return Effect.zipRight(Deferred.await(go), join(open, member, body)).pipe(
            Effect.flatMap((ran) => answer(open, ran))
          )
        }
        const batch: Batch = { members: [], committed, lost: undefined }
        gathering = batch
        // It gathers while the I/O ready now is handled, and while it waits for its turn; reads go on meanwhile.
        const begun = Effect.zipRight(afterReadyIo, turn.withPermits(1)(lead(batch, body)))
        return Effect.flatMap(begun, (ran) => answer(batch, ran))
      })
    })

  const client: SqlClient.SqlClient = Object.assign(
    // A template gives a statement, a string an identifier (left as it is).
    ((strings: TemplateStringsArray & string, ...args: Array<unknown>) => direct(sql(strings, ...args))) as typeof sql,
    sql,
    {
      unsafe: ((text: string, params?: ReadonlyArray<unknown>) =>
        direct(sql.unsafe(text, params))) as typeof sql.unsafe,
      withTransaction: <R, E, A>(effect: Effect.Effect<A, E, R>) =>
        Effect.withFiberRuntime<A, E | SqlError, R>((fiber) => {
          // A savepoint in the transaction this fiber is in.
          if (Option.isSome(Context.getOption(fiber.currentContext, SqlClient.TransactionConnection))) {
            return sql.withTransaction(effect)
          }
          const transaction = untraced(fiber)
            ? untracedTransaction(effect)
            : turn.withPermits(1)(sql.withTransaction(effect))
          return Effect.acquireUseRelease(
            Effect.sync(() => {
              transactions++
            }),
            () => transaction,
            () =>
              Effect.sync(() => {
                transactions--
              })
          )
        })
    }
  )
  ;(client as { safe: unknown }).safe = client
  return client
}

/** The client `SqlClient` gives, with `directStatements` (scoped: the connection is found once, then lent back). */
export const makeDirectStatements = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const connection = yield* Effect.orDie(Effect.scoped(sql.reserve))
  return directStatements(sql, connection, yield* Effect.makeSemaphore(1))
})
