/**
 * A throwaway `redis-server` on a free loopback port, for the tests of limits shared through Redis. `REDIS_SERVER`
 * is null where the binary is not installed (those tests skip, saying so).
 */
import type { Subprocess } from "bun"
import { freePort } from "./helpers.ts"

export const REDIS_SERVER = Bun.which("redis-server")

export interface RedisProcess {
  readonly url: string
  readonly port: number
  readonly process: Subprocess
}

/** Starts one (no persistence) and waits until it accepts connections. */
export const startRedis = async (): Promise<RedisProcess> => {
  if (REDIS_SERVER === null) throw new Error("redis-server is not installed (apt-get install redis-server)")
  const port = freePort()
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
  const proc = Bun.spawn([REDIS_SERVER, ...args], { stdout: "pipe", stderr: "pipe" })
  const reader = proc.stdout.getReader()
  const decoder = new TextDecoder()
  let seen = ""
  const deadline = Date.now() + 10_000
  while (!seen.includes("Ready to accept connections")) {
    if (Date.now() > deadline) throw new Error(`redis-server did not start:\n${seen}`)
    const { done, value } = await reader.read()
    if (done) throw new Error(`redis-server exited:\n${seen}${await new Response(proc.stderr).text()}`)
    seen += decoder.decode(value)
  }
  reader.releaseLock()
  proc.stdout.cancel().catch(() => {})
  return { url: `redis://127.0.0.1:${port}`, port, process: proc }
}
