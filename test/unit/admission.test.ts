// engine-independent: no database
/**
 * Admission, the `admission` fast path (src/Http/Admission.ts): at most `concurrency` requests are worked on at once,
 * the others wait for a place, or for their longest wait, then start anyway; health checks never wait; a request
 * whose client goes away while it waits never starts. Its twin (no admission) starts every request at once. Requests
 * run as the platform runs them: each on a fiber of its own, uninterruptibly, interrupted when its client goes away;
 * the app holds each one until the test lets it answer.
 */
import { describe, expect, test } from "bun:test"
import { createServer } from "node:http"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Deferred, Duration, Effect, Exit, Fiber, Layer, Logger, Option, Schedule } from "effect"
import { FAST_PATH_NAMES, parseFastPaths } from "../../src/Config.ts"
import { concurrencyFor, makeAdmission } from "../../src/Http/Admission.ts"
import { makeNodeServer } from "../../src/Http/NodeServer.ts"
import { Lifecycle, makeRequestWrapper } from "../../src/Http/RequestWrapper.ts"
import { TraceSampler } from "../../src/Observability/Sampling.ts"
import { twinsOf } from "../support/helpers.ts"

/**
 * A server of requests held until released, behind admission with `concurrency` places and `waitMs`, inside `around`
 * (the per-request wrapper, as src/Http.ts serves it; none unless given).
 */
const serve = (concurrency: number, waitMs: number, around: (app: HttpApp.Default) => HttpApp.Default = (app) => app) =>
  Effect.gen(function* () {
    const admit = yield* makeAdmission(concurrency, waitMs)
    /** The paths the app has started, in the order it started them. */
    const started: Array<string> = []
    const gates = new Map<string, Deferred.Deferred<void>>()
    const app: HttpApp.Default = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
      Effect.gen(function* () {
        started.push(request.url)
        const gate = yield* Deferred.make<void>()
        gates.set(request.url, gate)
        yield* Deferred.await(gate)
        if (request.url === "/dies") return yield* Effect.dieMessage("the handler broke")
        return HttpServerResponse.text(request.url)
      })
    )
    const admitted = around(admit(app))
    /** Sends the requests one after the other, each once the one before has started or is waiting. */
    const send = (...paths: ReadonlyArray<string>) =>
      Effect.forEach(paths, (path) =>
        Effect.gen(function* () {
          const request = HttpServerRequest.fromWeb(new Request(`http://localhost${path}`))
          const fiber = yield* Effect.fork(
            Effect.uninterruptible(Effect.provideService(admitted, HttpServerRequest.HttpServerRequest, request))
          )
          for (let i = 0; i < 3; i++) yield* Effect.yieldNow()
          return fiber
        })
      )
    /** Lets the request for `path` answer, once it has started. */
    const release = (path: string) =>
      Effect.gen(function* () {
        yield* until(() => gates.has(path))
        const gate = gates.get(path)
        if (gate !== undefined) yield* Deferred.succeed(gate, undefined)
      })
    return { started, send, release }
  })

/** Waits until `condition` holds (or fails after 5 s). */
const until = (condition: () => boolean) =>
  Effect.repeat(Effect.sync(condition), { until: (holds) => holds, schedule: Schedule.spaced("2 millis") }).pipe(
    Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new Error("timed out waiting") })
  )

/** The bodies of the answers of `fibers`. */
const answers = (fibers: ReadonlyArray<Fiber.RuntimeFiber<HttpServerResponse.HttpServerResponse>>) =>
  Effect.forEach(fibers, (fiber) =>
    Effect.map(Fiber.join(fiber), (response) =>
      response.body._tag === "Uint8Array" ? new TextDecoder().decode(response.body.body) : ""
    )
  )

const runTest = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.timeout(effect, "10 seconds"))

describe("admission (the fast path)", () => {
  test("at most `concurrency` requests at once; the others start in arrival order as places free", async () => {
    await runTest(
      Effect.gen(function* () {
        const server = yield* serve(2, 60_000)
        const fibers = yield* server.send("/1", "/2", "/3", "/4", "/5")
        expect(server.started).toEqual(["/1", "/2"])
        yield* server.release("/2")
        yield* until(() => server.started.length === 3)
        expect(server.started).toEqual(["/1", "/2", "/3"])
        yield* server.release("/1")
        yield* until(() => server.started.length === 4)
        expect(server.started[3]).toBe("/4")
        yield* server.release("/3")
        yield* server.release("/4")
        yield* until(() => server.started.length === 5)
        yield* server.release("/5")
        expect(yield* answers(fibers)).toEqual(["/1", "/2", "/3", "/4", "/5"])
      })
    )
  })

  test("a request that has waited its longest starts although every place is still held", async () => {
    await runTest(
      Effect.gen(function* () {
        const server = yield* serve(1, 50)
        const fibers = yield* server.send("/held", "/late")
        yield* until(() => server.started.includes("/late"))
        expect(server.started).toEqual(["/held", "/late"])
        yield* server.release("/late")
        yield* server.release("/held")
        expect(yield* answers(fibers)).toEqual(["/held", "/late"])
      })
    )
  })

  test("health checks start at once, without a place", async () => {
    await runTest(
      Effect.gen(function* () {
        const server = yield* serve(1, 60_000)
        const fibers = yield* server.send("/held", "/waits", "/health/live")
        expect(server.started).toEqual(["/held", "/health/live"])
        yield* server.release("/health/live")
        yield* server.release("/held")
        yield* until(() => server.started.includes("/waits"))
        yield* server.release("/waits")
        expect(yield* answers(fibers)).toEqual(["/held", "/waits", "/health/live"])
      })
    )
  })

  test("a waiting request whose client went away is never started, and holds no place", async () => {
    await runTest(
      Effect.gen(function* () {
        const server = yield* serve(1, 60_000)
        const [held, abandoned, last] = yield* server.send("/held", "/abandoned", "/last")
        // As the platform does when the connection closes before the answer.
        yield* Fiber.interruptFork(abandoned!)
        expect(Exit.isInterrupted(yield* Fiber.await(abandoned!))).toBe(true)
        yield* server.release("/held")
        yield* until(() => server.started.includes("/last"))
        yield* server.release("/last")
        expect(yield* answers([held!, last!])).toEqual(["/held", "/last"])
        expect(server.started).toEqual(["/held", "/last"])
      })
    )
  })

  test("a place is given back when its request fails", async () => {
    await runTest(
      Effect.gen(function* () {
        const server = yield* serve(1, 60_000)
        const [dies, next] = yield* server.send("/dies", "/next")
        yield* server.release("/dies")
        expect(Exit.isFailure(yield* Fiber.await(dies!))).toBe(true)
        yield* until(() => server.started.includes("/next"))
        yield* server.release("/next")
        expect(yield* answers([next!])).toEqual(["/next"])
      })
    )
  })
})

/** Inside each per-request wrapper (src/Http/RequestWrapper.ts), as src/Http.ts composes them. */
describe.each(twinsOf("request-wrapper"))("admission inside the request wrapper: %s", (_wrapper, fastPaths) => {
  test("a waiting request is in flight: the drain counts it and waits for it", async () => {
    /** What the drain's `draining` line says is in flight. */
    const counted: Array<unknown> = []
    const drainLines = Logger.make(({ message }) => {
      const [text, fields] = Array.isArray(message) ? message : [message]
      if (text === "draining" && typeof fields === "object" && fields !== null)
        counted.push(Reflect.get(fields, "in_flight"))
    })
    await runTest(
      Effect.gen(function* () {
        const lifecycle = yield* Lifecycle
        const chosen = parseFastPaths(fastPaths)
        if (typeof chosen === "string") return yield* Effect.dieMessage(chosen)
        const wrap = makeRequestWrapper(chosen, lifecycle, yield* TraceSampler)
        const server = yield* serve(1, 60_000, wrap)
        const fibers = yield* server.send("/held", "/waits")
        expect(server.started).toEqual(["/held"])
        const drain = yield* Effect.fork(lifecycle.drain(Duration.minutes(1)))
        yield* until(() => counted.length > 0)
        yield* server.release("/held")
        yield* until(() => server.started.includes("/waits"))
        yield* server.release("/waits")
        expect(yield* answers(fibers)).toEqual(["/held", "/waits"])
        yield* Fiber.join(drain)
      }).pipe(
        Effect.provide(
          Layer.mergeAll(Lifecycle.Default, TraceSampler.Default, Logger.replace(Logger.defaultLogger, drainLines))
        )
      )
    )
    // Checked once every request has answered (a failure inside would leave the held requests waiting).
    expect(counted).toEqual([2])
  }, 15_000)
})

describe("no admission (the twin)", () => {
  test("every request starts at once", async () => {
    await runTest(
      Effect.gen(function* () {
        const server = yield* serve(0, 60_000)
        const fibers = yield* server.send("/1", "/2", "/3")
        expect(server.started).toEqual(["/1", "/2", "/3"])
        for (const path of ["/1", "/2", "/3"]) yield* server.release(path)
        expect(yield* answers(fibers)).toEqual(["/1", "/2", "/3"])
      })
    )
  })

  test("the places: with the fast path, 32 on SQLite and none on PostgreSQL unless set; without it, none", () => {
    const all = new Set(FAST_PATH_NAMES)
    const twin = new Set(FAST_PATH_NAMES.filter((name) => name !== "admission"))
    expect(concurrencyFor(all, Option.none(), "sqlite")).toBe(32)
    expect(concurrencyFor(all, Option.none(), "pg")).toBe(0)
    expect(concurrencyFor(all, Option.some(8), "sqlite")).toBe(8)
    expect(concurrencyFor(all, Option.some(8), "pg")).toBe(8)
    expect(concurrencyFor(all, Option.some(0), "sqlite")).toBe(0)
    expect(concurrencyFor(twin, Option.none(), "sqlite")).toBe(0)
    expect(concurrencyFor(twin, Option.some(8), "pg")).toBe(0)
  })
})

describe("the server (src/Http/NodeServer.ts)", () => {
  test("is node:http's own: admission replaces none of its methods", () => {
    const methods = (server: object) =>
      Object.keys(server).filter((key) => typeof Reflect.get(server, key) === "function")
    const server = makeNodeServer({ idleTimeout: Duration.seconds(10) })()
    expect(methods(server)).toEqual(methods(createServer()))
    expect(Object.hasOwn(server, "emit")).toBe(false)
    expect(Object.hasOwn(server, "close")).toBe(false)
  })
})
