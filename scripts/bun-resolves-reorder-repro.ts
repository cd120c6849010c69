/**
 * Bun's `expect(promise).resolves` reorders `setImmediate` callbacks, without the service: awaited from inside an
 * immediate, it waits in a nested event-loop tick that runs the immediates queued after the current batch before
 * the rest of that batch. playwright-core's in-process connection hands every message over with `setImmediate`, so
 * a browser test that awaited `.resolves` now and then saw a response arrive before its request and lost the
 * browser session ("Cannot find parent object request@…"). The tests await the value, then expect it; the lint
 * plugin biome/no-expect-resolves.grit keeps them to that. Kept to tell when a Bun release fixes the order (this
 * then prints `in order: -1,0,1` for both).
 * Usage: bun scripts/bun-resolves-reorder-repro.ts
 */
import { expect } from "bun:test"

const run = (useResolves: boolean) =>
  new Promise<string>((done) => {
    const seen: Array<number> = []
    setImmediate(async () => {
      // Queued now: they belong to the next batch, behind the immediate below.
      setImmediate(() => seen.push(0))
      setImmediate(() => seen.push(1))
      const later = new Promise<number>((resolve) => setImmediate(() => setImmediate(() => resolve(1))))
      if (useResolves) await expect(later).resolves.toBe(1)
      else expect(await later).toBe(1)
      setTimeout(() => done(`${seen.join() === "-1,0,1" ? "in order" : "REORDERED"}: ${seen.join()}`), 20)
    })
    // The same batch as the callback above: it must run before anything that callback queues.
    setImmediate(() => seen.push(-1))
  })

console.log(`await expect(p).resolves → ${await run(true)}`)
console.log(`expect(await p)          → ${await run(false)}`)
