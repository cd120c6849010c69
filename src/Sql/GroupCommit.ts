/**
 * The `group-commit` fast path (docs/fast-paths.md): on SQLite, the transactions `Events.transaction` asks for are
 * committed in batches by one writer. A `COMMIT` is most of SQLite's work for a small change (it appends every page the
 * transaction changed to the WAL), so the changes that arrive together share one.
 *
 * Built from Effect's own primitives and `@effect/sql`'s public API: a `Queue` of changes, each with the `Deferred`s
 * its caller and the writer hand each other; one fiber, the writer, that takes what is waiting (at most `MAX_BATCH`,
 * after letting the I/O ready now be handled, so that the requests it brings can join); one connection, reserved from
 * the client for the batch (`sql.reserve`: the client's one lease, so no statement outside the batch runs while it
 * is open, and nothing reads into it). For each batch the writer runs `BEGIN`, lets each change run in a savepoint of
 * its own (`SAVEPOINT change` … `RELEASE change`; one that fails is rolled back to it, alone), and one `COMMIT`.
 *
 * - **On its caller's fiber.** The writer only says when: it hands the change its turn (`go`: the connection and the
 *   batch's `committed`), and waits until the change says it has run (`ran`). The change runs on its caller's own
 *   fiber, with the batch's connection as its `TransactionConnection`: its services, span, request, log annotations
 *   and fiber refs are its caller's, and its statements and nested transactions (the library's savepoints) run on
 *   the batch's connection, as in the library's transaction. With tracing on, it is a `sql.transaction` span.
 * - **Answered once committed.** One that fails is answered with its failure; one that succeeded once the batch's
 *   `COMMIT` has. If the `COMMIT` fails, the batch is rolled back and every change of it that succeeded dies with the
 *   error, as the library's transaction dies when its `COMMIT` fails. So the schema has no deferred constraint
 *   (checked at `COMMIT`, one change's violation would fail the others): a test checks it.
 * - **One transaction.** A change sees the writes of those before it in its batch.
 * - **When SQLite rolls back under it.** A failing statement can make SQLite roll the whole transaction back (a disk
 *   error, say); ending the savepoint then fails. The batch is lost: the changes of it that succeeded die, and those
 *   that had not run yet fail with that error without running.
 * - **Interruption.** A change whose caller is interrupted before its turn never runs; while it runs, it is
 *   interrupted where its caller was interruptible and rolled back to its savepoint; once it has run, its caller
 *   waits for the `COMMIT`, as the library's transaction, whose `COMMIT` cannot be interrupted, does.
 * - **Nested.** Inside a transaction already (a nested `Events.transaction`, or one its caller opened), a change is a
 *   savepoint of that transaction, the library's (`sql.withTransaction`), as in the twin.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import { type Cause, Deferred, Effect, Exit, FiberRef, Option, Queue } from "effect"

/** The most changes one `COMMIT` ends: it bounds what a failed `COMMIT` fails, and how long the last of them waits. */
export const MAX_BATCH = 64

/** What the writer uses of the client (a test gives it one whose connection fails as SQLite can). */
export type WriterClient = Pick<SqlClient.SqlClient, "reserve" | "withTransaction">

/** A change's turn: the batch's connection, and the batch's `COMMIT` to wait for once it has run. */
interface Turn {
  readonly connection: Connection
  readonly committed: Deferred.Deferred<void, SqlError>
}

/** A change waiting for the writer, or being run. */
interface Change {
  /** Its caller was interrupted before its turn: it is skipped. */
  cancelled: boolean
  /** Its turn, from the writer; failed if its batch cannot run it. */
  readonly go: Deferred.Deferred<Turn, SqlError>
  /** Whether it succeeded, from its caller once it has run (false if it never did). */
  readonly ran: Deferred.Deferred<boolean>
}

/** Resumes once the event loop has handled the I/O that is ready now (`setImmediate` runs after its poll). */
const afterReadyIo = Effect.async<void>((resume) => {
  const timer = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(timer))
})

/**
 * The writer, forked in the current scope (which stops it); answers the `transaction` function that runs a change
 * through it.
 */
export const makeGroupCommit = (sql: WriterClient) =>
  Effect.gen(function* () {
    const queue = yield* Queue.unbounded<Change>()

    /** `effect` as a change: queued, run on this fiber at its turn, answered once its batch has committed. */
    const queued = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.uninterruptibleMask((restore) =>
        Effect.gen(function* () {
          const change: Change = {
            cancelled: false,
            go: yield* Deferred.make<Turn, SqlError>(),
            ran: yield* Deferred.make<boolean>()
          }
          yield* Queue.offer(queue, change)
          // Interrupted before its turn, it is skipped; if its turn had come, the writer is told it did not run.
          const turn = yield* restore(Deferred.await(change.go)).pipe(
            Effect.onInterrupt(() =>
              Effect.suspend(() => {
                change.cancelled = true
                return Deferred.succeed(change.ran, false)
              })
            )
          )
          const traced = yield* FiberRef.get(FiberRef.currentTracerEnabled)
          const body = traced
            ? Effect.withSpan(effect, "sql.transaction", { kind: "client", captureStackTrace: false })
            : effect
          const exit = yield* Effect.exit(
            restore(Effect.provideService(body, SqlClient.TransactionConnection, [turn.connection, 0]))
          )
          yield* Deferred.succeed(change.ran, Exit.isSuccess(exit))
          if (Exit.isSuccess(exit)) yield* Effect.orDie(Deferred.await(turn.committed))
          return yield* exit
        })
      )

    /**
     * One SQLite transaction on `connection` for `changes`: `BEGIN`, each change's turn in a savepoint, `COMMIT` (or
     * `ROLLBACK`). Answers the changes it did not reach because SQLite rolled it back under an earlier one, to run in a
     * transaction begun anew (none if it ran none: then they fail with it).
     */
    const runTransaction = (
      connection: Connection,
      changes: ReadonlyArray<Change>,
      committed: Deferred.Deferred<void, SqlError>
    ) =>
      Effect.gen(function* () {
        const exec = (text: string) => Effect.exit(Effect.asVoid(connection.executeUnprepared(text, [], undefined)))
        const turn: Turn = { connection, committed }
        /** Why the transaction cannot commit: `BEGIN` failed, or SQLite rolled it back under a change. */
        let lost: Cause.Cause<SqlError> | undefined
        let ran = 0
        let next = 0
        const begun = yield* exec("BEGIN")
        if (Exit.isFailure(begun)) lost = begun.cause
        for (; next < changes.length && lost === undefined; next++) {
          const change = changes[next]
          if (change === undefined || change.cancelled) continue
          const opened = yield* exec("SAVEPOINT change")
          if (Exit.isFailure(opened)) {
            lost = opened.cause
            break
          }
          yield* Deferred.succeed(change.go, turn)
          ran++
          const succeeded = yield* Deferred.await(change.ran)
          const back = succeeded ? Exit.void : yield* exec("ROLLBACK TO change")
          const ended = Exit.isFailure(back) ? back : yield* exec("RELEASE change")
          if (Exit.isFailure(ended)) lost = ended.cause
        }
        if (lost === undefined) {
          const ended = yield* exec("COMMIT")
          if (Exit.isFailure(ended)) lost = ended.cause
        }
        // A failed COMMIT can leave the transaction open (SQLITE_BUSY): nothing of it may stay.
        if (lost !== undefined) yield* exec("ROLLBACK")
        yield* Deferred.done(committed, lost === undefined ? Exit.void : Exit.failCause(lost))
        const left = changes.slice(next)
        if (lost === undefined || ran > 0) return left
        yield* failAll(left, lost)
        return []
      })

    /** Every change of `changes` that is waiting for its turn told it will not come, with `cause`. */
    const failAll = (changes: ReadonlyArray<Change>, cause: Cause.Cause<SqlError>) =>
      Effect.forEach(changes, (change) => Deferred.failCause(change.go, cause), { discard: true })

    /** A batch on the connection reserved for it; should it end with a defect, no change is left waiting. */
    const runBatch = (changes: ReadonlyArray<Change>) =>
      Effect.scoped(
        Effect.matchCauseEffect(sql.reserve, {
          onFailure: (cause) => failAll(changes, cause),
          onSuccess: (connection) => {
            /** Each transaction's `COMMIT`, which those that ran in it wait for. */
            const commits: Array<Deferred.Deferred<void, SqlError>> = []
            const rounds = (pending: ReadonlyArray<Change>): Effect.Effect<void> =>
              Effect.flatMap(Deferred.make<void, SqlError>(), (committed) => {
                commits.push(committed)
                return Effect.flatMap(runTransaction(connection, pending, committed), (left) =>
                  left.length === 0 ? Effect.void : rounds(left)
                )
              })
            return Effect.catchAllCause(rounds(changes), (cause) =>
              Effect.all([
                Effect.exit(connection.executeUnprepared("ROLLBACK", [], undefined)),
                failAll(changes, cause),
                Effect.forEach(commits, (committed) => Deferred.failCause(committed, cause))
              ])
            )
          }
        })
      )

    /** The batch of `first`: it and what is waiting once the I/O ready now has been handled (so its requests join). */
    const batchOf = (first: Change) =>
      Effect.zipRight(
        afterReadyIo,
        Effect.map(Queue.takeUpTo(queue, MAX_BATCH - 1), (rest) => [first, ...rest])
      )

    // Stopped (its scope closed): the batch it runs ends first (a batch is not interrupted), then those still queued
    // are interrupted, and the queue refuses new ones.
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(Queue.takeAll(queue), (left) =>
        Effect.zipRight(
          Effect.forEach(left, (change) => Deferred.interrupt(change.go), { discard: true }),
          Queue.shutdown(queue)
        )
      )
    )
    yield* Effect.forkScoped(
      Effect.forever(
        // Only the wait for a first change is interruptible: once taken, its batch is run.
        Effect.flatMap(Queue.take(queue), (first) => Effect.uninterruptible(Effect.flatMap(batchOf(first), runBatch)))
      )
    )

    return <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
      Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (held) =>
        Option.isSome(held) ? sql.withTransaction(effect) : queued(effect)
      )
  })
