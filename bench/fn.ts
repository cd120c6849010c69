/**
 * What defining a service method with `Effect.fn` costs a call with tracing off (the default: no OTLP endpoint),
 * against the `traced()` helper it replaced (issue 45 goal 4; kept here as it was, src/Observability/Traced.ts
 * before its removal) and against `Effect.fnUntraced` (no span at all, the floor). One process, one core, the
 * variants in turns (A B C D, then D C B A, …) so drift on the machine falls on all alike; CPU time per call from
 * `process.cpuUsage`, the median of the rounds, and the median of each round's own difference against `traced`.
 * Usage: taskset -c 0 bun bench/fn.ts [--calls 200000] [--rounds 12]
 */

import { Effect, FiberRef } from "effect"
import { median } from "./stats.ts"

const argument = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const CALLS = argument("calls", 200_000)
const ROUNDS = argument("rounds", 12)

// `traced` as src/Observability/Traced.ts had it: a span only when the fiber's tracer is on, `fnUntraced` otherwise.
const inSpan =
  (name: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) =>
      fiber.getFiberRef(FiberRef.currentTracerEnabled)
        ? Effect.withSpan(effect, name, { captureStackTrace: false })
        : effect
    )
const traced = (name: string) => (method: typeof body) => {
  const span = inSpan(name)
  const run = Effect.fnUntraced(method)
  return (id: number, label: string) => span(run(id, label))
}

/** A method's shape: two arguments, two steps, a result (the body's own cost is the same in every variant). */
function* body(id: number, label: string) {
  const found = yield* Effect.succeed(id)
  yield* Effect.void
  return found + label.length
}

const variants = [
  { label: "traced (fnUntraced + tracer check)", method: traced("Bench.get")(body) },
  { label: 'Effect.fn("Bench.get")', method: Effect.fn("Bench.get")(body) },
  {
    label: 'Effect.fn("Bench.get", { captureStackTrace: false })',
    method: Effect.fn("Bench.get", { captureStackTrace: false })(body)
  },
  { label: "Effect.fnUntraced (no span: the floor)", method: Effect.fnUntraced(body) }
] as const

/** CPU ns per call over CALLS calls of `method`, tracing off, in one fiber. */
const measure = (method: (id: number, label: string) => Effect.Effect<number>) => {
  const loop = Effect.gen(function* () {
    let sum = 0
    for (let i = 0; i < CALLS; i++) sum += yield* method(i, "project")
    return sum
  }).pipe(Effect.withTracerEnabled(false))
  const before = process.cpuUsage()
  Effect.runSync(loop)
  const used = process.cpuUsage(before)
  return ((used.user + used.system) * 1000) / CALLS
}

// Warm-up: every variant to the optimising tiers before anything counts.
for (const variant of variants) for (let i = 0; i < 3; i++) measure(variant.method)

const runs = variants.map((variant) => ({ ...variant, perRound: [] as number[] }))
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? runs : [...runs].reverse()
  for (const run of order) run.perRound.push(measure(run.method))
}
const reference = runs[0]?.perRound ?? []

console.log(`${CALLS} calls a run, ${ROUNDS} rounds, tracing off; CPU ns per call`)
console.log("variant".padEnd(56), "median    min     max   Δ traced (median of rounds)")
for (const { label, perRound } of runs) {
  const delta = median(perRound.map((ns, round) => ns - (reference[round] ?? Number.NaN)))
  console.log(
    label.padEnd(56),
    median(perRound).toFixed(0).padStart(6),
    Math.min(...perRound)
      .toFixed(0)
      .padStart(7),
    Math.max(...perRound)
      .toFixed(0)
      .padStart(7),
    `${delta >= 0 ? "+" : ""}${delta.toFixed(0)}`.padStart(8)
  )
}
