// engine-independent: no database
/**
 * `eventually` (test/support/helpers.ts), which every test that waits for a condition relies on: a probe that answers
 * `false` has not seen its condition yet. test/e2e/conditional.test.ts waited for a delivery's first attempt with
 * a probe that answered `attempts.length >= 1`, so it did not wait at all, and on a busy machine the attempt came
 * between two reads the test expected to be alike.
 */
import { describe, expect, test } from "bun:test"
import { eventually } from "../support/helpers.ts"

describe("eventually", () => {
  test("a probe that answers false is polled again until it answers true", async () => {
    let calls = 0
    const answer = await eventually(() => ++calls >= 3, { intervalMs: 1 })
    expect(answer).toBe(true)
    expect(calls).toBe(3)
  })

  test("a probe that answers undefined, or throws, is polled again; any other answer is returned", async () => {
    let calls = 0
    const answer = await eventually(
      () => {
        calls++
        if (calls === 1) throw new Error("not yet")
        return calls === 2 ? undefined : 0
      },
      { intervalMs: 1 }
    )
    expect(answer).toBe(0)
    expect(calls).toBe(3)
  })

  test("a probe that never answers true times out with what it waited for", async () => {
    const error = await eventually(() => false, { timeoutMs: 20, intervalMs: 1, what: "nothing" }).then(
      () => undefined,
      (e: unknown) => e
    )
    expect(String(error)).toContain("timed out waiting for nothing")
  })
})
