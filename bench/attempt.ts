/**
 * What one delivery attempt costs this process in CPU, in-process, against a loopback receiver in a process of its
 * own (core 1; this one on core 0): the service's attempt (src/Webhooks/Delivery/Attempt.ts `attempt`, run as the
 * worker runs it, in long-lived fibers, 32 at a time) beside plain `fetch`es, also 32 at a time, that do part of its
 * work: the request alone; with the attempt's headers, signed; with its time-out signal and manual redirects too, and
 * the response's first 4 KiB and headers read. What the service's attempt costs over the last is its own code: the
 * target checked (`resolveTarget`), the URL pinned to the checked address, the result built, and the Effect around
 * the promise. Rounds alternate A B C D, D C B A.
 *
 *   bun bench/attempt.ts [--attempts 20000] [--rounds 4]
 */
import { parseArgs } from "node:util"
import { Duration, Effect } from "effect"
import { type AttemptRequest, attempt, signatureHeaders, USER_AGENT } from "../src/Webhooks/Delivery/Attempt.ts"
import { median } from "./stats.ts"

const { values } = parseArgs({ options: { attempts: { type: "string" }, rounds: { type: "string" } } })
const ATTEMPTS = Number(values.attempts ?? 20_000)
const ROUNDS = Number(values.rounds ?? 4)
const CONCURRENCY = 32

Bun.spawnSync(["taskset", "-a", "-cp", "0", String(process.pid)], { stdout: "ignore" })
// The receiver: 204 to every POST, its body read; it prints its port.
const receiver = Bun.spawn(
  [
    "taskset",
    "-c",
    "1",
    "bun",
    "-e",
    "const s = Bun.serve({ hostname: '127.0.0.1', port: 0, async fetch(r) { await r.text(); return new Response(null, { status: 204 }) } }); console.log(s.port)"
  ],
  { stdout: "pipe" }
)
process.on("exit", () => receiver.kill())
const first = await receiver.stdout.getReader().read()
const url = `http://127.0.0.1:${Number(new TextDecoder().decode(first.value).trim())}/hook`

// An event body of the size a `project.created` has.
const body = JSON.stringify({
  id: "evt_01m8pjqz9ze45tztxa7td9hx11",
  type: "project.created",
  created_at: new Date().toISOString(),
  actor: { type: "user", id: "usr_01m8pjqy3netsshbxrkykyzaj4", name: "Ada" },
  data: {
    id: "proj_01m8pjqz9ze45tztxa7td9hx11",
    name: "project 123",
    description: "",
    visibility: "private",
    status: "active",
    owner_id: "usr_01m8pjqy3netsshbxrkykyzaj4",
    team_id: null
  }
})
const request = (i: number): AttemptRequest => ({
  url,
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  previousSecret: null,
  body,
  eventType: "project.created",
  eventId: "evt_01m8pjqz9ze45tztxa7td9hx11",
  deliveryId: `dlv_${i}`,
  traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
})
const options = { timeout: Duration.seconds(10), allowPrivate: true }

const signedHeaders = (i: number) => {
  const one = request(i)
  return {
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    host: new URL(url).host,
    ...signatureHeaders(one, Math.floor(Date.now() / 1000)),
    "x-service-event": one.eventType,
    "x-service-event-id": one.eventId,
    "x-service-delivery": one.deliveryId,
    traceparent: one.traceparent ?? ""
  }
}

/** The first 4 KiB of the body and the headers, as an attempt keeps them. */
const readAnswer = async (response: Response) => {
  const headers: Record<string, string> = {}
  response.headers.forEach((value, name) => {
    headers[name] = value
  })
  const text = (await response.text()).slice(0, 4096)
  return { status: response.status, text, headers }
}

/** Runs `one` for attempts 0… `ATTEMPTS - 1`, `CONCURRENCY` at a time. */
const plain = (one: (i: number) => Promise<unknown>) => async () => {
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < ATTEMPTS) await one(next++)
    })
  )
}

const contenders: Record<string, () => Promise<unknown>> = {
  "fetch alone": plain((i) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-delivery": `dlv_${i}` },
      body
    }).then((response) => response.text())
  ),
  "fetch, signed headers": plain((i) =>
    fetch(url, { method: "POST", headers: signedHeaders(i), body }).then((response) => response.text())
  ),
  "fetch, signed, time-out, answer read": plain((i) =>
    fetch(url, {
      method: "POST",
      headers: signedHeaders(i),
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(10_000)
    }).then(readAnswer)
  ),
  "the service's attempt": () => {
    let next = 0
    // Each runner one fiber, attempting one delivery after another, as the worker's runners do.
    const runner = Effect.gen(function* () {
      while (next < ATTEMPTS) yield* attempt(request(next++), options)
    })
    return Effect.runPromise(
      Effect.all(
        Array.from({ length: CONCURRENCY }, () => runner),
        { concurrency: "unbounded", discard: true }
      )
    )
  }
}

/** µs of this process's CPU an attempt. */
const measure = async (run: () => Promise<unknown>) => {
  const before = process.cpuUsage()
  await run()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / ATTEMPTS
}

const names = Object.keys(contenders)
for (const name of names) await measure(contenders[name] as () => Promise<unknown>) // warm-up, not counted
const figures = new Map<string, Array<number>>(names.map((name) => [name, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (const name of round % 2 === 0 ? names : [...names].reverse()) {
    figures.get(name)?.push(await measure(contenders[name] as () => Promise<unknown>))
  }
}
console.log(`${ATTEMPTS} attempts a round, ${CONCURRENCY} at a time, ${ROUNDS} rounds; µs of CPU an attempt:`)
for (const [name, xs] of figures) {
  console.log(
    `  ${name.padEnd(38)} median ${median(xs).toFixed(1)}  (rounds ${xs.map((x) => x.toFixed(1)).join(", ")})`
  )
}
process.exit(0)
