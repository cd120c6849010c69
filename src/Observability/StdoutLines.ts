/**
 * Where the JSON log lines go (src/Observability/Logging.ts), as the `log-lines` fast path chooses
 * (docs/fast-paths.md):
 *
 * - `eachLine`, the idiomatic twin: one `stream.write` per line, as it is logged.
 * - `batchedLines`, the fast path: the lines written during one turn of the event loop are joined and written when
 *   the turn ends, with `write(2)` on the descriptor. Under load many requests end in a turn, each with its access
 *   line, and each `process.stdout.write` is a stream write of its own.
 *
 * What both must hold (test/observability/stdout-lines.test.ts runs both):
 * - **Order.** Lines go out in the order they were written, whatever path they take.
 * - **Nothing dropped by a full pipe.** Bun makes a piped stdout non-blocking, so a direct write can take part of
 *   the text (or none: `EAGAIN`). `batchedLines` hands the rest to the stream, which queues it; until that queue has
 *   drained, later text follows it there, so it cannot overtake it. Any other failure of the direct write takes the
 *   same path, where the stream deals with it as it does for `eachLine`.
 * - **Exit.** Lines written in the turn the process exits in are written (the `exit` event); only a process killed
 *   outright loses them, with the answers of that turn.
 */
import { writeSync } from "node:fs"

export interface Lines {
  /** Writes `line` (with its newline), or queues it for the end of this turn. */
  readonly write: (line: string) => void
}

export const eachLine = (stream: NodeJS.WritableStream): Lines => ({
  write: (line) => {
    stream.write(line)
  }
})

/** Lines to the descriptor `fd`, with `stream` (the same destination) taking whatever `fd` cannot take at once. */
export const batchedLines = (fd: number, stream: NodeJS.WritableStream): Lines => {
  let pending = ""
  // Chunks handed to `stream` and not yet written out: while there are any, everything goes through `stream`.
  let inStream = 0
  const toStream = (chunk: string | Uint8Array) => {
    inStream++
    stream.write(chunk, () => {
      inStream--
    })
  }
  const flush = () => {
    if (pending === "") return
    const text = pending
    pending = ""
    if (inStream > 0) return toStream(text)
    const bytes = Buffer.from(text)
    let written = 0
    try {
      while (written < bytes.length) written += writeSync(fd, bytes, written)
    } catch {
      // EAGAIN from a full non-blocking pipe, or anything else: the stream takes the rest, as `eachLine` would.
    }
    if (written < bytes.length) toStream(bytes.subarray(written))
  }
  let hooked = false
  return {
    write: (line) => {
      if (pending === "") setImmediate(flush)
      pending += line
      if (!hooked) {
        hooked = true
        process.once("exit", flush)
      }
    }
  }
}
