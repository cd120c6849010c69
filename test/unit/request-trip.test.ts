// engine-independent: no database
/**
 * The trip of a keyed create as docs/request-pipeline.md writes it: every file it names exists, none is called
 * by a file of a lower rank (the ranks `bun run check:imports` checks the imports against), so the trip never
 * climbs back up a layer, and the count the page states is the number of files it lists.
 */
import { describe, expect, test } from "bun:test"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { rankNames, rankOf } from "../../scripts/check-imports.ts"

const root = join(import.meta.dir, "..", "..")

interface Step {
  readonly file: string
  readonly depth: number
}

const page = () => readFileSync(join(root, "docs", "request-pipeline.md"), "utf8")

/** The list between `<!-- trip -->` and `<!-- /trip -->`: one file a line, nested by two spaces under its caller. */
const trip = (): ReadonlyArray<Step> => {
  const text = page()
  const start = text.indexOf("<!-- trip -->")
  const end = text.indexOf("<!-- /trip -->")
  expect(start).toBeGreaterThan(-1)
  expect(end).toBeGreaterThan(start)
  return text
    .slice(start, end)
    .split("\n")
    .flatMap((line) => {
      const found = /^( *)- `(src\/[^`]+)`/.exec(line)
      return found === null ? [] : [{ file: found[2] ?? "", depth: (found[1] ?? "").length / 2 }]
    })
}

describe("the keyed create's trip (docs/request-pipeline.md)", () => {
  test("names files that exist, each nested one level at most under the one before", () => {
    const steps = trip()
    expect(steps.length).toBeGreaterThan(0)
    let previous = -1
    for (const { file, depth } of steps) {
      expect({ file, exists: existsSync(join(root, file)) }).toEqual({ file, exists: true })
      expect({ file, depth: Number.isInteger(depth) && depth <= previous + 1 }).toEqual({ file, depth: true })
      previous = depth
    }
  })

  test("never climbs: no file calls one of a higher rank", () => {
    const callers: Array<Step> = []
    for (const step of trip()) {
      while ((callers.at(-1)?.depth ?? -1) >= step.depth) callers.pop()
      const caller = callers.at(-1)
      if (caller !== undefined) {
        const [from, to] = [rankOf(caller.file.slice(4)), rankOf(step.file.slice(4))]
        expect({
          call: `${caller.file} → ${step.file}`,
          climbs: to > from ? `${rankNames[from]} → ${rankNames[to]}` : false
        }).toEqual({
          call: `${caller.file} → ${step.file}`,
          climbs: false
        })
      }
      callers.push(step)
    }
  })

  test("states its own count: the files it enters, each once", () => {
    const stated = /That is (\d+) files of rank 1 and above/.exec(page())?.[1]
    expect(Number(stated)).toBe(new Set(trip().map(({ file }) => file)).size)
  })
})
