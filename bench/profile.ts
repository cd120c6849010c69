/**
 * Summarizes a `.cpuprofile` (from `bun --cpu-prof`, e.g. `BENCH_PROFILE=dir bash bench/compare.sh`) by samples,
 * not by time: Bun weights a sample by the gap before it, so one sample after an idle pause can look like a second.
 * Counts only samples from the first request on (module loading and start-up left out).
 *
 *   bun bench/profile.ts <file.cpuprofile> [--top 30] [--requests N]
 *
 * Prints: busy samples (and per request when `--requests` is given), the functions with the most self samples,
 * the service's own functions (`src/`) by inclusive samples, and a few groups by inclusive samples (SQLite, schema
 * parse/encode, logging, metrics, FiberRef updates…), each sample counted once per group.
 */
import { readFileSync } from "node:fs"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}
interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const args = process.argv.slice(2)
const file = args.find((arg) => !arg.startsWith("--") && !/^\d+$/.test(arg))
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`)
  return i === -1 ? fallback : Number(args[i + 1])
}
if (file === undefined) {
  console.error("usage: bun bench/profile.ts <file.cpuprofile> [--top 30] [--requests N]")
  process.exit(2)
}
const top = option("top", 30)
const requests = option("requests", 0)

const profile: Profile = JSON.parse(readFileSync(file, "utf8"))
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const parent = new Map<number, number>()
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)

const short = (url: string) =>
  url
    .replace(/^file:\/\//, "")
    .replace(/^.*node_modules\//, "")
    .replace(/^.*\/(src|bench)\//, "$1/")
const nameOf = (frame: CallFrame) =>
  `${frame.functionName || "(anonymous)"} ${frame.url === "" ? "[native]" : `${short(frame.url)}:${frame.lineNumber + 1}`}`

const stackCache = new Map<number, ReadonlyArray<CallFrame>>()
const stackOf = (id: number): ReadonlyArray<CallFrame> => {
  const known = stackCache.get(id)
  if (known !== undefined) return known
  const frames: Array<CallFrame> = []
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const node = byId.get(at)
    if (node !== undefined) frames.push(node.callFrame)
  }
  stackCache.set(id, frames)
  return frames
}

const isRequest = (frame: CallFrame) => frame.url.includes("platform-bun") && frame.functionName === "handler"
const first = profile.samples.findIndex((id) => stackOf(id).some(isRequest))
const samples = profile.samples
  .slice(Math.max(0, first))
  .filter((id) => !["(idle)", "(program)", "(garbage collector)"].includes(byId.get(id)?.callFrame.functionName ?? ""))

const groups: ReadonlyArray<readonly [string, (frame: CallFrame) => boolean]> = [
  [
    "SQLite statements (bun:sqlite `all`/`run`)",
    (f) => f.url === "" && (f.functionName === "all" || f.functionName === "run")
  ],
  ["@effect/sql (client, statement, SqlSchema)", (f) => f.url.includes("@effect/sql")],
  ["schema parse/encode (ParseResult)", (f) => f.url.includes("effect/dist/esm/ParseResult.js")],
  [
    "logging (fiberRuntime log, Logger, src/Observability/Logging)",
    (f) => (f.url.includes("fiberRuntime.js") && f.functionName === "log") || f.url.includes("Observability/Logging")
  ],
  ["metrics (internal/metric*)", (f) => f.url.includes("internal/metric")],
  ["FiberRef updates (fiberRefs.js)", (f) => f.url.includes("internal/fiberRefs")],
  ["Context lookups/merges (internal/context.js)", (f) => f.url.includes("internal/context.js")],
  [
    "Tracer spans (internal/tracer, Effect.fn)",
    (f) => f.url.includes("internal/tracer") || f.functionName === "withSpan"
  ],
  [
    "HttpRouter (find-my-way, HttpRouter)",
    (f) => f.url.includes("find-my-way") || f.url.includes("internal/httpRouter")
  ],
  ["response to Bun (makeResponse, Headers)", (f) => f.functionName === "makeResponse"],
  ["the service's own code (src/)", (f) => f.url.includes("/src/")]
]

const self = new Map<string, number>()
const inclusive = new Map<string, number>()
const grouped = new Map<string, number>()
for (const id of samples) {
  const stack = stackOf(id)
  const leaf = stack[0]
  if (leaf !== undefined) self.set(nameOf(leaf), (self.get(nameOf(leaf)) ?? 0) + 1)
  const seen = new Set<string>()
  for (const frame of stack) {
    if (!frame.url.includes("/src/")) continue
    const name = nameOf(frame)
    if (seen.has(name)) continue
    seen.add(name)
    inclusive.set(name, (inclusive.get(name) ?? 0) + 1)
  }
  for (const [group, test] of groups) if (stack.some(test)) grouped.set(group, (grouped.get(group) ?? 0) + 1)
}

const total = samples.length
const pct = (n: number) => `${((100 * n) / total).toFixed(1).padStart(5)} %`
const table = (title: string, rows: Map<string, number>, limit: number) => {
  console.log(`\n${title}`)
  for (const [name, n] of [...rows].sort((a, b) => b[1] - a[1]).slice(0, limit)) {
    console.log(`${pct(n)} ${String(n).padStart(6)}  ${name}`)
  }
}
console.log(
  `${file}\n${total} busy samples from the first request on` +
    (requests > 0 ? ` (${((total * 1000) / requests).toFixed(1)} samples per 1,000 requests)` : "")
)
table("Self samples, top functions", self, top)
table("Inclusive samples, the service's own functions (src/)", inclusive, top)
table("Inclusive samples, by group (a sample counts once per group)", grouped, groups.length)
