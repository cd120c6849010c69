/**
 * The `group-commit` fast path (docs/fast-paths.md): on SQLite, the transactions `Events.transaction` asks for are run
 * by one writer and committed in batches. A `COMMIT` is most of SQLite's work for a small change (it appends every page
 * the transaction changed to the WAL), so the changes that arrive while a batch runs share the next one's.
 *
 * Built from Effect's own primitives and `@effect/sql`'s public API: a `Queue` of changes, each with the `Deferred`
 * its caller waits on; one fiber, the writer, that takes what is waiting (at most `MAX_BATCH`); one connection,
 * reserved from the client for the batch (`sql.reserve`: the SQLite client's one permit, so no statement outside the
 * batch runs while it is open, and nothing reads into it). For each batch the writer runs `BEGIN`, each change in a
 * savepoint of its own (`SAVEPOINT change` … `RELEASE change`; one that fails is rolled back to it, alone), and one
 * `COMMIT`.
 *
 * - **Its caller's change.** A change runs in a fiber started from its caller's runtime as it was at the call
 *   (`Effect.runtime`: its context, fiber refs and interruptibility), with the batch's connection as its
 *   `TransactionConnection`, inside a `sql.transaction` span; its caller inherits that fiber's refs when it answers, as
 *   `Fiber.join` does. So it sees its caller's services, span, request and log annotations, and its statements and
 *   nested transactions (the library's savepoints) run on the batch's connection, as in the library's transaction.
 * - **Answered once committed.** One that fails is answered with its failure once its savepoint is rolled back; one
 *   that succeeded once the batch's `COMMIT` has. If the `COMMIT` fails, the batch is rolled back and every change of
 *   it that succeeded dies with the error, as the library's transaction dies when its `COMMIT` fails. So the schema has
 *   no deferred constraint (checked at `COMMIT`, one change's violation would fail the others): a test checks it.
 * - **One transaction.** A change sees the writes of those before it in its batch.
 * - **When SQLite rolls back under it.** A failing statement can make SQLite roll the whole transaction back (a disk
 *   error, say); ending the savepoint then fails. The batch is lost: it is rolled back, the changes of it that succeeded
 *   die, and those that had not run yet run in a transaction begun anew.
 * - **Interruption.** A change whose caller is interrupted before it starts never runs; while it runs, its fiber is
 *   interrupted (where its caller was interruptible) and rolled back to its savepoint; once it has run, its caller waits
 *   for the `COMMIT`, as the library's transaction, whose `COMMIT` cannot be interrupted, does.
 * - **Nested.** Inside a transaction already (a nested `Events.transaction`, or one its caller opened), a change is a
 *   savepoint of that transaction, the library's (`sql.withTransaction`), as in the twin.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import {
  Cause,
  Chunk,
  Context,
  Deferred,
  Effect,
  Exit,
  Fiber,
  FiberRef,
  FiberRefs,
  Option,
  Queue,
  Runtime
} from "effect"

/** The most changes one `COMMIT` ends: it bounds what a failed `COMMIT` fails, and how long the last of them waits. */
export const MAX_BATCH = 64

/** What the writer uses of the client (a test gives it one whose connection fails as SQLite can). */
export type WriterClient = Pick<SqlClient.SqlClient, "reserve" | "withTransaction">

/** A change waiting for the writer, or being run by it. */
interface Change {
  /** Its caller was interrupted: it is not started. */
  cancelled: boolean
  /** The fiber running it, once started. */
  fiber: Fiber.RuntimeFiber<unknown, unknown> | undefined
  /** Starts it on `connection` (unless cancelled) and waits for it to end; answers whether it succeeded. */
  readonly run: (connection: Connection) => Effect.Effect<boolean>
  /**
   * Answers its caller: its failure; its result, or, when its batch was `lost`, death by that error; if it never ran,
   * the loss (or interruption, when the writer stops).
   */
  readonly settle: (lost: Cause.Cause<SqlError> | undefined) => Effect.Effect<void>
}

/**
 * The writer, forked in the current scope (which stops it); answers the `transaction` function that runs a change
 * through it.
 */
export const makeGroupCommit = (sql: WriterClient) =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<Change>()

    /** `effect` as a change: queued for the writer, answered once its batch has committed (or it failed). */
    const queued = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.flatMap(Effect.runtime<R>(), (caller) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(Deferred.make<A, E | SqlError>(), (answer) => {
            let exit: Exit.Exit<A, E> | undefined
            let refs: FiberRefs.FiberRefs | undefined
            const spanned = Effect.withSpan(effect, "sql.transaction", { kind: "client", captureStackTrace: false })
            const change: Change = {
              cancelled: false,
              fiber: undefined,
              run: (connection) =>
                Effect.suspend(() => {
                  if (change.cancelled) return Effect.succeed(false)
                  const held: readonly [Connection, number] = [connection, 0]
                  const runtime = Runtime.make({
                    context: Context.add(caller.context, SqlClient.TransactionConnection, held),
                    fiberRefs: caller.fiberRefs,
                    runtimeFlags: caller.runtimeFlags
                  })
                  const fiber = Runtime.runFork(runtime)(spanned)
                  change.fiber = fiber
                  return Effect.map(Fiber.await(fiber), (ended) => {
                    exit = ended
                    // Its refs but its context, which holds the batch's connection: the caller keeps its own.
                    refs = FiberRefs.delete(fiber.getFiberRefs(), FiberRef.currentContext)
                    return Exit.isSuccess(ended)
                  })
                }),
              settle: (lost) => {
                if (exit === undefined) {
                  return Effect.asVoid(
                    lost === undefined ? Deferred.interrupt(answer) : Deferred.failCause(answer, lost)
                  )
                }
                if (Exit.isFailure(exit) || lost === undefined) return Effect.asVoid(Deferred.done(answer, exit))
                return Effect.asVoid(Deferred.die(answer, Cause.squash(lost)))
              }
            }
            // Interrupted: not started, it never will be; running, it is interrupted; run, its answer is awaited.
            const cancel = Effect.suspend(() => {
              change.cancelled = true
              const fiber = change.fiber
              if (fiber === undefined) return Effect.void
              return Effect.flatMap(Fiber.interrupt(fiber), (ended) =>
                Exit.isSuccess(ended) ? Effect.exit(Deferred.await(answer)) : Effect.void
              )
            })
            return Effect.zipRight(
              Queue.offer(queue, change),
              restore(Deferred.await(answer)).pipe(
                Effect.onInterrupt(() => cancel),
                Effect.ensuring(
                  Effect.suspend(() => (refs === undefined ? Effect.void : Effect.inheritFiberRefs(refs)))
                )
              )
            )
          })
        )
      )

    /**
     * One SQLite transaction for `changes`, on `connection`, as above. Answers the changes it did not run because it was
     * lost before their turn (none if it ran none: then they fail with it), to run in a transaction begun anew.
     */
    const runTransaction = (connection: Connection, changes: ReadonlyArray<Change>) =>
      Effect.gen(function* () {
        const exec = (text: string) => Effect.exit(Effect.asVoid(connection.executeUnprepared(text, [], undefined)))
        const ran: Array<Change> = []
        let lost: Cause.Cause<SqlError> | undefined
        const begun = yield* exec("BEGIN")
        if (Exit.isFailure(begun)) lost = begun.cause
        let next = 0
        for (const change of changes) {
          if (lost !== undefined) break
          next++
          if (change.cancelled) continue
          const opened = yield* exec("SAVEPOINT change")
          if (Exit.isFailure(opened)) {
            lost = opened.cause
            next--
            break
          }
          const succeeded = yield* change.run(connection)
          ran.push(change)
          const back = succeeded ? Exit.void : yield* exec("ROLLBACK TO change")
          const ended = Exit.isFailure(back) ? back : yield* exec("RELEASE change")
          if (Exit.isFailure(ended)) lost = ended.cause
          else if (!succeeded) yield* change.settle(undefined)
        }
        if (lost === undefined) {
          const committed = yield* exec("COMMIT")
          if (Exit.isFailure(committed)) lost = committed.cause
        }
        // A failed COMMIT can leave the transaction open (a deferred constraint, SQLITE_BUSY): nothing of it may stay.
        if (lost !== undefined) yield* exec("ROLLBACK")
        for (const change of ran) yield* change.settle(lost)
        const left = changes.slice(next)
        if (lost === undefined || ran.length > 0) return left
        for (const change of left) yield* change.settle(lost)
        return []
      })

    /** Every change of `changes` still waiting answered with `cause`. */
    const settleAll = (changes: ReadonlyArray<Change>, cause: Cause.Cause<SqlError>) =>
      Effect.forEach(changes, (change) => change.settle(cause), { discard: true })

    /** A batch, on the connection reserved for it; should it end with a defect, no one is left waiting. */
    const runBatch = (changes: ReadonlyArray<Change>) =>
      Effect.scoped(
        Effect.flatMap(Effect.exit(sql.reserve), (reserved) => {
          if (Exit.isFailure(reserved)) return settleAll(changes, reserved.cause)
          const connection = reserved.value
          const rounds = (pending: ReadonlyArray<Change>): Effect.Effect<void> =>
            Effect.flatMap(runTransaction(connection, pending), (left) =>
              left.length === 0 ? Effect.void : rounds(left)
            )
          return Effect.catchAllCause(rounds(changes), (cause) =>
            Effect.zipRight(
              Effect.exit(connection.executeUnprepared("ROLLBACK", [], undefined)),
              settleAll(changes, cause)
            )
          )
        })
      )

    // Stopped (its scope closed): the batch it runs ends first (a batch is not interrupted), then those still queued
    // are answered (interrupted), and the queue refuses new ones.
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (left) =>
        Effect.zipRight(
          Effect.forEach(left, (change) => change.settle(undefined), { discard: true }),
          Queue.shutdown(queue)
        )
      )
    )
    yield* Effect.forkScoped(
      Effect.forever(
        Effect.flatMap(Queue.takeBetween(queue, 1, MAX_BATCH), (batch) =>
          Effect.uninterruptible(runBatch(Chunk.toReadonlyArray(batch)))
        )
      )
    )

    return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (held) =>
        Option.isSome(held) ? sql.withTransaction(effect) : queued(effect)
      )
  })
