// engine-independent: no database
/**
 * The import graph check (scripts/check-imports.ts) on small trees written for each test: a circle of modules is
 * refused whether its modules share a folder or not, and whether an import is of values or of types only; imports
 * that point one way pass. And on the service's own src/, which holds.
 */
import { describe, expect, test } from "bun:test"
import { mkdirSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { checkImports } from "../../scripts/check-imports.ts"
import { tempDir } from "../support/temp.ts"

/** A src/ tree of the given modules (path under src/ → text), and what the check finds in it. */
const problemsIn = (files: Record<string, string>): ReadonlyArray<string> => {
  const root = tempDir("pcs-imports-")
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return checkImports(root).problems
}

describe("the import graph check", () => {
  test("refuses two modules of one folder that import each other, even when one imports only types", () => {
    const problems = problemsIn({
      "Webhooks/Recorder.ts": `import { make } from "./RecorderFast.js"\nexport interface Recorder { n: number }\n`,
      "Webhooks/RecorderFast.ts": `import type { Recorder } from "./Recorder.js"\nexport const make = 1\n`
    })
    const circle = "modules src/Webhooks/Recorder.ts ⇄ src/Webhooks/RecorderFast.ts"
    expect(problems).toEqual([
      `cycle    src/Webhooks/Recorder.ts imports src/Webhooks/RecorderFast.ts (${circle})`,
      `cycle    src/Webhooks/RecorderFast.ts imports src/Webhooks/Recorder.ts (${circle})`
    ])
  })

  test("refuses a longer circle, and names only the imports in it", () => {
    const problems = problemsIn({
      "Projects/A.ts": `import "./B.js"\n`,
      "Projects/B.ts": `import "./C.js"\nimport "./D.js"\n`,
      "Projects/C.ts": `export * from "./A.js"\n`,
      "Projects/D.ts": `export const d = 1\n`
    })
    expect(problems).toHaveLength(3)
    for (const line of problems) {
      expect(line).toContain("(modules src/Projects/A.ts ⇄ src/Projects/B.ts ⇄ src/Projects/C.ts)")
    }
    expect(problems.some((line) => line.includes("D.ts"))).toBe(false)
  })

  test("refuses folders that import each other, naming each import once", () => {
    const problems = problemsIn({
      "Projects/Projects.ts": `import { t } from "../Teams/Teams.js"\nexport const p = t\n`,
      "Teams/Teams.ts": `import { p } from "../Projects/Projects.js"\nexport const t = p\n`
    })
    expect(problems).toEqual([
      "cycle    src/Projects/Projects.ts imports src/Teams/Teams.ts (folders Projects/ ⇄ Teams/)",
      "cycle    src/Teams/Teams.ts imports src/Projects/Projects.ts (folders Projects/ ⇄ Teams/)"
    ])
  })

  test("passes imports that point one way: an interface, its implementations, and the module that chooses", () => {
    const problems = problemsIn({
      "Webhooks/Recorder.ts": `export interface Recorder { n: number }\n`,
      "Webhooks/RecorderFast.ts": `import type { Recorder } from "./Recorder.js"\nexport const fast = 1\n`,
      "Webhooks/RecorderIdiomatic.ts": `import type { Recorder } from "./Recorder.js"\nexport const slow = 2\n`,
      "Webhooks/RecorderLive.ts": `import { fast } from "./RecorderFast.js"\nimport { slow } from "./RecorderIdiomatic.js"\n`
    })
    expect(problems).toEqual([])
  })

  test("finds the service's own src/ sound", () => {
    expect(checkImports(join(import.meta.dir, "..", "..", "src")).problems).toEqual([])
  })
})
