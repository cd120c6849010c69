/**
 * Where log lines go (src/Observability/StdoutLines.ts), both implementations: a full non-blocking pipe loses
 * nothing and reorders nothing; the lines of the turn the process exits in are written. And the fast path's own
 * promise: a turn's lines are written when it ends, together, to the descriptor. The pipe and exit cases need a
 * process of their own.
 */
import { afterAll, describe, expect, test } from "bun:test"
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Writable } from "node:stream"
import { batchedLines } from "../../src/Observability/StdoutLines.ts"

const dir = mkdtempSync(join(tmpdir(), "pcs-lines-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

test("the lines of a turn are written when it ends, together and in order, to the descriptor", async () => {
  const file = join(dir, "turn.log")
  const fd = openSync(file, "w")
  const streamed: Array<string> = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      streamed.push(String(chunk))
      done()
    }
  })
  const lines = batchedLines(fd, stream)
  lines.write("one\n")
  lines.write("two\n")
  lines.write("three\n")
  expect(readFileSync(file, "utf8")).toBe("")
  await nextTurn()
  expect(readFileSync(file, "utf8")).toBe("one\ntwo\nthree\n")
  lines.write("four\n")
  await nextTurn()
  expect(readFileSync(file, "utf8")).toBe("one\ntwo\nthree\nfour\n")
  // The descriptor took everything: nothing went through the stream.
  expect(streamed).toEqual([])
  closeSync(fd)
})

const IMPLEMENTATIONS = {
  fast: "batchedLines(1, process.stdout)",
  idiomatic: "eachLine(process.stdout)"
} as const

/** A child process that writes through `lines` (made by `make`) what `body` says, with its stdout a pipe. */
const child = (make: string, body: string) =>
  Bun.spawn(
    [
      "bun",
      "-e",
      `import { batchedLines, eachLine } from ${JSON.stringify(join(import.meta.dir, "../../src/Observability/StdoutLines.ts"))}
       let streamed = 0
       const write = process.stdout.write.bind(process.stdout)
       process.stdout.write = (chunk, ...rest) => { streamed++; return write(chunk, ...rest) }
       const lines = ${make}
       process.on("exit", () => console.error("streamed " + streamed))
       ${body}`
    ],
    { stdout: "pipe", stderr: "pipe" }
  )

describe.each(Object.entries(IMPLEMENTATIONS))("%s", (kind, make) => {
  test("a full pipe loses no line and reorders none", async () => {
    // 400 turns of 100 numbered lines (about 4 MiB), into a pipe that holds 64 KiB and is not read for a while.
    const writer = child(
      make,
      `
    let n = 0
    const turn = (left) => {
      for (let i = 0; i < 100; i++) lines.write(String(n++).padStart(8, "0") + " " + "x".repeat(90) + "\\n")
      if (left > 1) setImmediate(() => turn(left - 1))
    }
    turn(400)`
    )
    await Bun.sleep(500)
    const out = await new Response(writer.stdout).text()
    const err = await new Response(writer.stderr).text()
    expect(await writer.exited).toBe(0)
    const numbers = out
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => Number(line.slice(0, 8)))
    expect(numbers.length).toBe(40_000)
    expect(numbers.every((value, i) => value === i)).toBe(true)
    // The fast path's pipe did fill: some text went through the stream, so that path was taken.
    if (kind === "fast") expect(Number(err.match(/streamed (\d+)/)?.[1])).toBeGreaterThan(0)
  })

  test("lines written in the turn the process exits in are written", async () => {
    const writer = child(
      make,
      `
    for (let i = 0; i < 5; i++) lines.write("line " + i + "\\n")
    process.exit(0)`
    )
    const out = await new Response(writer.stdout).text()
    expect(await writer.exited).toBe(0)
    expect(out).toBe("line 0\nline 1\nline 2\nline 3\nline 4\n")
  })
})
